"""Metrics (eq. 5-7), the heuristics' rankings, the models' interface, selection and AWPI."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.learn.salsm.awpi import AwpiError, awpi_figures, check_awpi
from cairn.learn.salsm.features import N_FEATURES, build_features, make_samples
from cairn.learn.salsm.metrics import cold_fir, concordance_index, confusion, kaplan_meier, plot_km
from cairn.learn.salsm.models import GBDT, bin_times, lex_score, make_model
from cairn.learn.salsm.select import select_alpha, select_budget
from cairn.learn.salsm.synth import SynthConfig, synth_trace
from cairn.learn.salsm.trace import Record, RecordTrace

D = 1000


# --- c-index -----------------------------------------------------------------------------


def test_c_index_matches_scikit_survival_on_random_data():
    from sksurv.metrics import concordance_index_censored

    rng = np.random.default_rng(0)
    for n, ties in ((40, False), (400, True), (3000, True)):
        y = rng.integers(0, 30, n).astype(float) if ties else rng.random(n)
        d = rng.random(n) < 0.45
        s = rng.integers(0, 10, n).astype(float) if ties else rng.random(n)
        ours = concordance_index(y, d, s)
        theirs = concordance_index_censored(d, y, -s)[0]  # theirs takes a risk: higher = earlier
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_c_index_known_cases():
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    d = np.array([True, True, False, True, False])
    assert concordance_index(y, d, y) == 1.0
    assert concordance_index(y, d, -y) == 0.0
    assert concordance_index(y, d, np.zeros(5)) == 0.5
    # one discordant pair among (1,2) (1,3) (1,4) (1,5) (2,3) (2,4) (2,5) (4,5): 7/8
    assert concordance_index(y, d, np.array([1.0, 2.5, 2.0, 4.0, 5.0])) == pytest.approx(7 / 8)
    assert np.isnan(concordance_index(y, np.zeros(5, bool), y))  # no comparable pair


# --- cold_fir and Kaplan-Meier -------------------------------------------------------------


def test_cold_fir_on_a_known_confusion_matrix():
    # 10 records; 4 migrated: 3 stayed cold (TP), 1 had a tau-event (FP)
    pred = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], bool)
    event = np.array([0, 0, 0, 1, 1, 1, 0, 0, 1, 0], bool)
    assert confusion(pred, event) == {"tp": 3, "fp": 1, "tn": 3, "fn": 3}
    assert cold_fir(pred, event) == pytest.approx(0.25)
    assert np.isnan(cold_fir(np.zeros(10, bool), event))


def test_kaplan_meier_matches_scikit_survival():
    from sksurv.nonparametric import kaplan_meier_estimator

    rng = np.random.default_rng(1)
    y = rng.integers(0, 20, 300).astype(float)
    d = rng.random(300) < 0.5
    t, s = kaplan_meier(y, d)
    t2, s2 = kaplan_meier_estimator(d, y)
    at = np.isin(t2, t)
    assert np.allclose(t2[at], t) and np.allclose(s2[at], s)
    # hand-made: times 1, 2+, 3, 4: S(1) = 3/4, S(3) = 3/4 * 1/2
    t, s = kaplan_meier(np.array([1.0, 2.0, 3.0, 4.0]), np.array([True, False, True, False]))
    assert t.tolist() == [1.0, 3.0] and s.tolist() == pytest.approx([0.75, 0.375])


def test_km_plot(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "km.png"
    assert plot_km({"a": (np.array([1.0, 3.0]), np.array([0.75, 0.375]))}, str(path), "t")
    assert path.read_bytes()[:4] == b"\x89PNG"


# --- heuristics on hand-made records ---------------------------------------------------------


def heuristic_trace() -> RecordTrace:
    # pivot at day 30; all inserted at day 0
    recs = [
        # hot: accessed yesterday and the day before
        Record(b"hot", 0, [(0, True), (28 * D, False), (29 * D, False)]),
        # stale: last touched 20 days ago, busy before
        Record(b"stale", 0, [(0, True), (9 * D, False), (9 * D + 100, False), (10 * D, False)]),
        # one recent rare access after a long silence
        Record(b"rare", 0, [(0, True), (27 * D, False)]),
        # busy long ago and once recently (older pair close together)
        Record(b"mixed", 0, [(0, True), (15 * D, False), (15 * D + 10, False), (25 * D, False)]),
    ]
    return RecordTrace.from_records(recs, cf_id=0, sample_rate=1.0, day_ms=D, start_ms=0, end_ms=30 * D)


def ranking(method: str) -> list[str]:
    t = heuristic_trace()
    x = build_features(t, np.arange(4), np.full(4, 30.0 * D))
    score = make_model(method).score(x)
    return [t.keys[i].decode() for i in np.argsort(-score, kind="stable")]  # coldest first


def test_lru_ranks_by_recency():
    assert ranking("lru") == ["stale", "mixed", "rare", "hot"]


def test_lru_looks_at_reads_not_writes():
    # Both last read at day 10; "written" had a status write yesterday, which reads nothing.
    recs = [
        Record(b"written", 0, [(0, True), (10 * D, False), (29 * D, True, 8)]),
        Record(b"read", 0, [(0, True), (12 * D, False)]),
    ]
    t = RecordTrace.from_records(recs, cf_id=0, sample_rate=1.0, day_ms=D, start_ms=0, end_ms=30 * D)
    x = build_features(t, np.arange(2), np.full(2, 30.0 * D))
    assert make_model("lru").score(x).argmax() == 0  # the write does not make it hot
    assert select_alpha(make_model("lru"), x, 19.0).cold.tolist() == [True, False]


def test_lru2_ranks_by_the_second_most_recent_access():
    # 2nd most recent: hot 28, stale 9.9, rare 0, mixed 15.01
    assert ranking("lru2") == ["rare", "stale", "mixed", "hot"]


def test_lirs_ranks_by_inter_reference_recency():
    # IRR (last two accesses): hot 1, stale 0.9, rare 27, mixed ~10; recency breaks no ties here
    assert ranking("lirs") == ["rare", "mixed", "hot", "stale"]


def test_lfu_ranks_by_count_in_the_window_with_recency_tie_break():
    # whole days 10..29 before day 30: hot 2, stale 1 (day 10), rare 1, mixed 3
    # stale and rare tie on 1: stale is less recent, so colder
    assert ranking("lfu") == ["stale", "rare", "hot", "mixed"]


def test_lex_score_orders_and_shares_ties():
    s = lex_score(np.array([1.0, 0.0, 1.0, 1.0]), np.array([0.0, 5.0, 2.0, 0.0]))
    assert s[1] < s[0] == s[3] < s[2]


# --- models and selection ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def samples():
    t = synth_trace(SynthConfig(profile="pay", records=600, days=60, seed=1))
    return t, make_samples(t, 10, t.day_ms, np.random.default_rng(0))


def test_bin_times_floors_onto_a_small_grid():
    rng = np.random.default_rng(0)
    y = rng.exponential(10.0, 5000)
    d = rng.random(5000) < 0.5
    yb = bin_times(y, d, 64, (30.0,))
    assert np.unique(yb).size <= 66 and (yb <= y).all() and 30.0 in yb
    order = np.argsort(y)
    assert (np.diff(yb[order]) >= 0).all()  # order kept (weakly)


@pytest.mark.parametrize("method", ["rsf", "cox", "gbdt-h", "gbdt-naive"])
def test_learned_models_fit_score_and_select(samples, method):
    t, s = samples
    model = make_model(method, horizon=20.0, seed=0, n_jobs=1)
    if method == "rsf":
        model.params["n_estimators"] = 16
    model.fit(s.x, s.y, s.delta)
    score = model.score(s.x)
    assert score.shape == (len(s),) and np.isfinite(score).all()
    assert concordance_index(s.y, s.delta, score) > 0.7  # in-sample: the features carry signal
    x_now = build_features(t, np.arange(t.n_records), np.full(t.n_records, float(t.end_ms)))
    sel = select_alpha(model, x_now, 20.0)
    assert 0.0 < sel.migrated_share < 1.0
    if not method.startswith("gbdt"):
        surv = model.survival(x_now, 20.0)
        assert ((surv >= 0) & (surv <= 1)).all()
        assert (model.survival(x_now, 5.0) >= surv - 1e-12).all()  # S is non-increasing
        assert np.array_equal(sel.cold, surv > 0.5)


def test_gbdt_drops_samples_censored_before_the_horizon():
    rng = np.random.default_rng(0)
    x = rng.random((400, N_FEATURES))
    y = np.r_[np.full(100, 2.0), np.full(100, 50.0), np.full(100, 5.0), np.full(100, 40.0)]
    d = np.r_[np.ones(100, bool), np.ones(100, bool), np.zeros(100, bool), np.zeros(100, bool)]
    m = GBDT(horizon=30.0, n_jobs=1, rounds=5).fit(x, y, d)
    assert (m.train_rows, m.dropped_censored) == (300, 100)
    with pytest.raises(ValueError, match="horizon"):
        m.cold_at(x, 10.0)


def test_lfu_has_no_alpha_and_unknown_methods_are_refused():
    with pytest.raises(ValueError, match="budget"):
        make_model("lfu").cold_at(np.zeros((1, N_FEATURES)), 3.0)
    with pytest.raises(ValueError, match="unknown method"):
        make_model("lru3")
    with pytest.raises(ValueError, match="tau-event"):
        make_model("rsf").fit(np.zeros((5, N_FEATURES)), np.ones(5), np.zeros(5, bool))


def test_select_budget_takes_the_coldest_share():
    sel = select_budget(np.array([0.1, 0.9, 0.5, 0.7, 0.2]), 0.4)
    assert sel.cold.tolist() == [False, True, False, True, False] and sel.migrated_share == 0.4
    assert select_budget(np.ones(3), 0.0).n_cold == 0 and select_budget(np.ones(3), 1.0).n_cold == 3
    with pytest.raises(ValueError):
        select_budget(np.ones(3), 1.5)


def test_lru_alpha_is_a_recency_threshold():
    t = heuristic_trace()
    x = build_features(t, np.arange(4), np.full(4, 30.0 * D))
    assert select_alpha(make_model("lru"), x, 4.5).cold.tolist() == [False, True, False, True]


# --- AWPI ----------------------------------------------------------------------------------------


def test_awpi_detection():
    t = heuristic_trace()
    t.point_reads, t.writes, t.scans = 900, 95, 5
    f = check_awpi(t)
    assert f["awpi"] and f["point_share"] == pytest.approx(0.995)
    t.scans = 200  # 995 of 1195 = 83%
    assert not awpi_figures(t)["awpi"]
    with pytest.raises(AwpiError, match="not an AWPI"):
        check_awpi(t)
    assert not check_awpi(t, force=True)["awpi"]
    t.point_reads = t.writes = t.scans = 0
    with pytest.raises(AwpiError, match="no requests"):
        check_awpi(t)
    t.point_reads, t.writes, t.scans = 90, 0, 10  # exactly 90% is not above it
    with pytest.raises(AwpiError):
        check_awpi(t)
