"""The paper's GBDT beside the censoring-aware one, RSF's tuning, ties that never fall to
key order, Algorithm 3's count on a hand-made survival table, Uno's C and the gains."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.learn.salsm.features import N_FEATURES
from cairn.learn.salsm.metrics import concordance_index, gains, uno_c
from cairn.learn.salsm.models import (
    GBDT,
    LEAF_RANGE,
    METHODS,
    RSF,
    GBDTNaive,
    canonical,
    leaf_size,
    lex_score,
    make_model,
)
from cairn.learn.salsm.select import coldest_first, select_alpha, select_budget, select_count

# --- gbdt-naive and gbdt-h -------------------------------------------------------------------


def censoring_data():
    # feature 0 tells the groups apart: A event at 2 d, B censored at 5 d, C event at 50 d
    x = np.zeros((300, N_FEATURES))
    x[:, 0] = np.repeat([0.0, 1.0, 2.0], 100)
    x[:, 1:] = np.random.default_rng(0).random((300, N_FEATURES - 1))
    y = np.repeat([2.0, 5.0, 50.0], 100)
    d = np.repeat([True, False, True], 100)
    return x, y, d


def test_gbdt_naive_counts_early_censoring_as_no_event():
    x, y, d = censoring_data()
    naive = make_model("gbdt-naive", horizon=30.0, n_jobs=1).fit(x, y, d)
    aware = make_model("gbdt-h", horizon=30.0, n_jobs=1).fit(x, y, d)
    assert isinstance(naive, GBDTNaive) and (naive.train_rows, naive.dropped_censored) == (300, 0)
    assert (aware.train_rows, aware.dropped_censored) == (200, 100)
    p = naive.p_event(x)
    assert p[100:200].max() < 0.1 and p[:100].min() > 0.9  # B learnt as "no event"
    assert naive.model.get_params() | {"random_state": 0} == aware.model.get_params() | {"random_state": 0}


def test_method_names_and_the_old_gbdt_alias():
    assert "gbdt-naive" in METHODS and "gbdt-h" in METHODS and "gbdt" not in METHODS
    assert canonical("gbdt") == "gbdt-h" and type(make_model("gbdt")) is GBDT
    assert make_model("gbdt-h").name == "gbdt-h" and make_model("gbdt-naive").name == "gbdt-naive"
    with pytest.raises(ValueError, match="scores file"):
        make_model("oracle")
    with pytest.raises(ValueError, match="unknown method"):
        canonical("gbdt-x")


# --- RSF's settings --------------------------------------------------------------------------


def test_leaf_size_holds_about_three_events():
    assert leaf_size(np.r_[np.ones(30, bool), np.zeros(70, bool)]) == 10
    assert leaf_size(np.r_[np.ones(5, bool), np.zeros(95, bool)]) == 60  # 3 / 0.05
    assert leaf_size(np.r_[np.ones(1, bool), np.zeros(9999, bool)]) == LEAF_RANGE[1]
    assert leaf_size(np.ones(10, bool)) == LEAF_RANGE[0]
    assert leaf_size(np.zeros(0, bool)) == LEAF_RANGE[1]


def test_rsf_uses_a_feature_fraction_and_the_event_leaf_size():
    rng = np.random.default_rng(1)
    x = rng.random((2000, N_FEATURES))
    y = rng.exponential(10.0, 2000) * (1 + x[:, 0])
    d = rng.random(2000) < 0.2
    m = RSF(horizon=10.0, n_jobs=1, n_estimators=4).fit(x, y, d)
    assert m.model.max_features == 0.4
    assert all(t.max_features_ == int(0.4 * N_FEATURES) for t in m.model.estimators_)
    assert m.model.min_samples_leaf == m.min_samples_leaf == leaf_size(d) == int(np.ceil(3 / d.mean()))


# --- ties ------------------------------------------------------------------------------------


class FakeForest:
    def __init__(self, times, table):
        self.unique_times_ = np.asarray(times, float)
        self.table = np.asarray(table, float)


def fake_rsf(times, table, horizon):
    m = RSF(horizon=horizon)
    m.model = FakeForest(times, table)
    m._survival = lambda x: m.model.table[: x.shape[0]]
    return m


def test_rsf_ties_at_the_horizon_go_to_the_longer_survival():
    # S(10) = 1 for records 0 and 1; record 1 survives longer after it: it is colder
    table = [[1.0, 1.0, 0.6, 0.2], [1.0, 1.0, 0.9, 0.8], [0.9, 0.5, 0.4, 0.3]]
    m = fake_rsf([5.0, 10.0, 20.0, 40.0], table, horizon=10.0)
    score = m.score(np.zeros((3, N_FEATURES)))
    assert score[1] > score[0] > score[2]
    assert select_count(score, 1, seed=0).cold.tolist() == [False, True, False]


def test_equal_scores_are_taken_in_a_seeded_random_order_not_index_order():
    s = np.r_[np.zeros(20), 1.0]
    picks = [tuple(np.flatnonzero(select_count(s, 6, seed=k).cold)) for k in range(4)]
    assert all(p[-1] == 20 for p in picks)  # the strictly coldest first
    assert picks[0] != (0, 1, 2, 3, 4, 20)  # not the first keys
    assert len(set(picks)) > 1  # the seed decides
    assert picks[0] == tuple(np.flatnonzero(select_count(s, 6, seed=0).cold))
    assert select_budget(s, 6 / 21, seed=0).cold.tolist() == select_count(s, 6, seed=0).cold.tolist()
    # primary ties broken by the secondary before any randomness
    ranked = lex_score(np.array([0.5, 0.5, 0.5, 0.1]), np.array([1.0, 3.0, 2.0, 9.0]))
    assert coldest_first(ranked, seed=7).tolist() == [1, 2, 0, 3]


# --- Algorithm 3 on a hand-made survival table ------------------------------------------------


def test_alpha_rule_reads_the_survival_table():
    # columns at days 5, 10, 20, 40; cold at alpha when S(alpha) > 1/2
    table = [[0.9, 0.8, 0.6, 0.4], [0.7, 0.4, 0.3, 0.1], [1.0, 0.9, 0.55, 0.5], [0.6, 0.51, 0.5, 0.2]]
    m = fake_rsf([5.0, 10.0, 20.0, 40.0], table, horizon=10.0)
    x = np.zeros((4, N_FEATURES))
    assert select_alpha(m, x, 10.0).cold.tolist() == [True, False, True, True]
    assert select_alpha(m, x, 20.0).cold.tolist() == [True, False, True, False]
    assert select_alpha(m, x, 30.0).n_cold == 2  # S steps: S(30) = S(20)
    assert select_alpha(m, x, 45.0).n_cold == 0
    assert select_alpha(m, x, 3.0).n_cold == 4  # before the first time S = 1
    with pytest.raises(ValueError):
        select_alpha(m, x, 0.0)


# --- Uno's C and the gains ---------------------------------------------------------------------


def test_uno_c_matches_scikit_survival():
    from sksurv.metrics import concordance_index_ipcw
    from sksurv.util import Surv

    rng = np.random.default_rng(3)
    for n, ties in ((60, False), (500, True), (2000, True)):
        y_tr = rng.integers(0, 40, 3 * n).astype(float) if ties else rng.random(3 * n) * 40
        d_tr = rng.random(3 * n) < 0.5
        y_tr[0], d_tr[0] = 41.0, False  # the training window outlasts every test time
        y = rng.integers(0, 40, n).astype(float) if ties else rng.random(n) * 40
        d = rng.random(n) < 0.45
        s = (rng.integers(0, 10, n).astype(float) if ties else rng.random(n)) + 0.03 * y
        for tau in (8.0, 25.0, 39.5):
            ours = uno_c(y_tr, d_tr, y, d, s, tau)
            theirs = concordance_index_ipcw(Surv.from_arrays(d_tr, y_tr), Surv.from_arrays(d, y), -s, tau=tau)[0]
            assert ours == pytest.approx(theirs, abs=1e-6)


def test_uno_c_counts_only_events_before_the_horizon():
    # no censoring, so G = 1: the events before 5.5 are ranked right, the later ones not
    y = np.arange(1.0, 11.0)
    d = np.ones(10, bool)
    s = np.array([1.0, 2, 3, 4, 5, 10, 6, 9, 7, 8])
    assert uno_c(y, d, y, d, s, 5.5) == 1.0
    assert uno_c(y, d, y, d, s, 100.0) == pytest.approx(concordance_index(y, d, s))
    assert concordance_index(y, d, s) < 1.0


def test_gains_in_the_papers_units():
    rel, removed = gains(0.817, 0.750)
    assert rel == pytest.approx(0.0893, abs=1e-4)  # the paper's auction: +8.9%
    assert removed == pytest.approx(0.268, abs=1e-3)
    assert gains(None, 0.7) == (None, None) and gains(0.8, float("nan")) == (None, None)
    assert gains(0.9, 1.0) == (pytest.approx(-0.1), None)
