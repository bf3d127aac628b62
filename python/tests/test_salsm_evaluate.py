"""evaluate's report: the alpha row, the curve, Uno's C and the gains; --events; tau by
cross-validation; the Figs. 13-14 sweeps."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from cairn.learn.salsm.cli import main
from cairn.learn.salsm.pipeline import CURVE_SHARES, Settings, evaluate
from cairn.learn.salsm.synth import SynthConfig, synth_trace
from cairn.learn.salsm.trace import write_trace

S = Settings(horizon_days=20.0, n_jobs=1, max_samples=6000)
METHODS = ["rsf", "gbdt-h", "cox", "lru", "lirs"]


@pytest.fixture(scope="module")
def trace():
    return synth_trace(SynthConfig(profile="pay", records=1200, days=60, seed=4))


@pytest.fixture(scope="module")
def report(trace):
    return evaluate(trace, METHODS, [0.2, 0.5], S)


@pytest.fixture(scope="module")
def trace_file(trace, tmp_path_factory):
    path = tmp_path_factory.mktemp("salsm-eval") / "pay.rtr"
    write_trace(path, trace)
    return path


def test_every_method_gets_the_count_rsfs_alpha_rule_gives(report, trace):
    a = report["alpha"]
    assert a["decided_by"] == "rsf" and a["alpha_days"] == 20.0  # the horizon by default
    n = report["cut"]["test_records"]
    assert 0 < a["n_cold"] < n and a["migrated_share"] == pytest.approx(a["n_cold"] / n)
    assert set(report["methods"]) == {*METHODS, "gbdt-naive", "random"}
    for row in report["methods"].values():
        assert row["alpha"]["n_cold"] == a["n_cold"]
        assert row["alpha"]["tp"] + row["alpha"]["fp"] == a["n_cold"]
        assert 0.0 <= row["alpha"]["cold_fir"] <= 1.0 and row["alpha"]["cold_reads"] >= row["alpha"]["fp"]
    # at alpha = horizon, rsf's coldest by S(horizon) are the records its rule migrates
    assert report["methods"]["rsf"]["alpha"]["cold_fir"] == pytest.approx(a["rsf_rule"]["cold_fir"])
    shorter = evaluate(trace, ["rsf", "lru"], [0.2], S, alpha_days=2.0)
    assert shorter["alpha"]["n_cold"] > a["n_cold"]  # S(2 d) >= S(20 d): more records pass
    assert shorter["methods"]["lru"]["alpha"]["n_cold"] == shorter["alpha"]["n_cold"]


def test_no_rsf_no_alpha_row(trace):
    rep = evaluate(trace, ["lru"], [0.2], S)
    assert rep["alpha"]["n_cold"] is None and "rsf" in rep["alpha"]["error"]
    assert rep["methods"]["lru"]["alpha"] is None and rep["methods"]["lru"]["cold_fir"]["0.2"]["cold_fir"] is not None


def test_curve_of_hot_records_placed_cold(report):
    c = report["curve"]
    assert c["migrated_share"] == list(CURVE_SHARES) and len(CURVE_SHARES) == 19
    assert CURVE_SHARES[0] == 0.05 and CURVE_SHARES[-1] == 0.95
    assert set(c["methods"]) == set(report["methods"])
    for m, row in c["methods"].items():
        hot = np.array(row["hot_placed_cold"])
        assert len(hot) == 19 and (np.diff(hot) >= 0).all() and (np.diff(row["cold_reads"]) >= 0).all()
        assert row["cold_fir"] == pytest.approx((hot / np.array(c["n_cold"])).tolist())
        # the curve's 0.2 point is the 0.2 budget's selection (same ranking and ties)
        assert hot[3] == report["methods"][m]["cold_fir"]["0.2"]["fp"]
    assert c["hot_records"] == pytest.approx(report["cut"]["hot_share"] * c["records"])


def test_gains_over_gbdt_naive_in_both_concordances(report):
    rows = report["methods"]
    g = rows["gbdt-naive"]
    assert report["reference"] == "gbdt-naive"
    assert g["c_index_gain_vs_gbdt_naive"] == 0.0 and g["uno_discordant_removed_vs_gbdt_naive"] == 0.0
    for row in rows.values():
        assert 0.0 < row["uno_c"] < 1.0
        c, ref = row["c_index"], g["c_index"]
        assert row["c_index_gain_vs_gbdt_naive"] == pytest.approx(c / ref - 1)
        assert row["discordant_removed_vs_gbdt_naive"] == pytest.approx((c - ref) / (1 - ref))
        u, uref = row["uno_c"], g["uno_c"]
        assert row["uno_c_gain_vs_gbdt_naive"] == pytest.approx(u / uref - 1)
        assert row["uno_discordant_removed_vs_gbdt_naive"] == pytest.approx((u - uref) / (1 - uref))
    assert rows["random"]["c_index"] == pytest.approx(0.5, abs=0.05)


def test_events_flag_is_reported(trace_file, tmp_path):
    out = tmp_path / "all.json"
    args = ["evaluate", "--trace", str(trace_file), "--methods", "lru", "--budgets", "0.3", "--jobs", "1"]
    assert main([*args, "--horizon-days", "20", "--events", "all", "--out", str(out)]) == 0
    rep_all = json.loads(out.read_text())
    assert main([*args, "--horizon-days", "20", "--out", str(out)]) == 0
    rep_reads = json.loads(out.read_text())
    assert rep_all["event_kinds"] == "all" and rep_reads["event_kinds"] == "reads"
    assert rep_all["samples"]["censored_share"] < rep_reads["samples"]["censored_share"]
    assert rep_all["cut"]["hot_share"] == rep_reads["cut"]["hot_share"]  # the read truth does not move
    assert main([*args, "--events", "writes"]) == 2


def test_tau_by_cross_validation(trace):
    s = replace(S, tau_auto=True, tau_candidates=(0.25, 2.0))
    rep = evaluate(trace, ["lru"], [0.3], s)
    cv = rep["tau_cv"]
    assert [c["tau_days"] for c in cv["candidates"]] == [0.25, 2.0]
    assert cv["chosen"] in (0.25, 2.0) and rep["tau_days"] == cv["chosen"]
    firs = [c["cold_fir_mean"] for c in cv["candidates"]]
    assert cv["chosen"] == (0.25, 2.0)[int(np.argmin(firs))]
    # the training records' window ends where the trace does: T_cut' is evaluate's T_cut
    assert cv["t_cut_ms"] == rep["cut"]["t_cut_ms"]
    assert cv["fit_records"] + cv["validation_records"] <= rep["train_records"]
    assert cv["candidates"][0]["censored_share"] > cv["candidates"][1]["censored_share"]
    assert evaluate(trace, ["lru"], [0.3], S)["tau_cv"] is None


def test_train_tau_auto_reports_the_search(trace_file, tmp_path):
    out, rep = tmp_path / "c.cld", tmp_path / "r.json"
    args = ["train", "--trace", str(trace_file), "--method", "rsf", "--out", str(out), "--report", str(rep)]
    assert main([*args, "--budget", "0.3", "--tau-days", "auto", "--tau-candidates", "0.5,1", "--jobs", "1"]) == 0
    r = json.loads(rep.read_text())
    assert r["tau_cv"]["chosen"] == r["tau_days"] in (0.5, 1.0) and len(r["tau_cv"]["candidates"]) == 2
    assert r["min_samples_leaf"] >= 10 and r["event_kinds"] == "reads"


def test_sweep_label_window(trace_file, tmp_path, capsys):
    out = tmp_path / "s.json"
    args = ["sweep", "--trace", str(trace_file), "--kind", "label-window", "--values", "5,30", "--jobs", "1"]
    assert main([*args, "--max-samples", "4000", "--out", str(out)]) == 0
    assert "label days" in capsys.readouterr().out
    rep = json.loads(out.read_text())
    short, long = rep["rows"]
    assert rep["kind"] == "label-window" and rep["feature_days"] == 20.0
    assert short["value"] == 5 and long["value"] == 30 and short["horizon_days"] == 5.0
    assert short["censored_share"] > long["censored_share"]  # a longer window sees more events
    for row in rep["rows"]:
        assert 0.5 < row["rsf"]["c_index"] <= 1.0 and 0.5 < row["gbdt-naive"]["c_index"] <= 1.0
        assert row["c_index_gain_vs_gbdt_naive"] == pytest.approx(
            row["rsf"]["c_index"] / row["gbdt-naive"]["c_index"] - 1
        )
    assert main([*args[:-4], "--values", "50", "--jobs", "1"]) == 2  # 20 + 50 days > 60
    assert "label window 50 d" in capsys.readouterr().err


def test_sweep_sample_share(trace_file, tmp_path, capsys):
    out = tmp_path / "s.json"
    args = ["sweep", "--trace", str(trace_file), "--kind", "sample-share", "--jobs", "1", "--horizon-days", "20"]
    assert main([*args, "--values", "0.1,1", "--max-samples", "4000", "--out", str(out)]) == 0
    rep = json.loads(out.read_text())
    tenth, full = rep["rows"]
    assert tenth["rsf"]["train_samples"] == pytest.approx(0.1 * full["rsf"]["train_samples"], abs=1)
    assert full["rsf"]["train_samples"] == full["gbdt-naive"]["train_samples"] == 4000
    assert tenth["gbdt-naive"] == full["gbdt-naive"]  # fit once
    assert "rsf share" in capsys.readouterr().out
    assert main([*args, "--values", "0,0.5"]) == 2
    assert main([*args, "--values", "0.5", "--tau-days", "auto"]) == 2


def test_gbdt_h_keeps_its_c_index_when_the_cut_window_is_shorter_than_the_horizon(trace):
    # 60 days with a 40-day horizon: T_cut leaves 20 days, so no cut sample is observed for
    # a whole horizon and gbdt-h cannot train there; its c-index (whole window) still counts.
    rep = evaluate(trace, ["rsf", "gbdt-h"], [0.2], replace(S, horizon_days=40.0))
    row = rep["methods"]["gbdt-h"]
    assert row["c_index"] is not None and "at T_cut" in row["error"]
    assert row["alpha"] is None and row["cold_fir"]["0.2"]["cold_fir"] is None
    assert "gbdt-h" not in rep["curve"]["methods"]
    assert rep["methods"]["rsf"]["alpha"]["cold_fir"] is not None
