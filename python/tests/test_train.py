"""Training on a synthetic trace: the paper's recall target, and better than the baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cairn.learn.leaper.features import FEATURE_NAMES
from cairn.learn.leaper.train import LGB_PARAMS, chronological_split, fit_model, steps_for


def test_paper_parameters():
    assert LGB_PARAMS["num_leaves"] == 31
    assert LGB_PARAMS["learning_rate"] == 0.05
    assert LGB_PARAMS["bagging_fraction"] == 0.8 and LGB_PARAMS["bagging_freq"] == 1
    assert LGB_PARAMS["feature_fraction"] == 0.9


def test_eq2_number_of_models():
    # t = 300 s; max(T1 + T2) = 590 s -> ceil(1.97) + C
    assert steps_for([250.0, 590.0], 300_000, extra=1) == 3
    assert steps_for([600.0], 300_000, extra=1) == 3  # exactly two slots
    assert steps_for([601.0], 300_000, extra=0) == 3


def test_split_is_chronological_and_purged(trained):
    s, sp, k = trained.prepared.samples, trained.split, trained.config.k
    tr, va, te = s.slot[sp.train], s.slot[sp.val], s.slot[sp.test]
    assert tr.max() + k < va.min() <= va.max() and va.max() + k < te.min()
    assert not (sp.train & sp.val).any() and not (sp.val & sp.test).any()


def test_split_refuses_too_short(trained):
    s = trained.prepared.samples
    with pytest.raises(ValueError, match="empty"):
        chronological_split(s.subset(s.slot < s.slot.min() + 3), 0.3, 0.2)


def test_recall_target_and_baselines(trained):
    rep = trained.report
    assert trained.prepared.selection.multiplier > 1  # Algorithm 1 widened the ranges
    assert len(trained.models) == 2 and 0.0 < trained.threshold < 1.0
    for h in rep["horizons"]:
        leaper, last, iw = h["leaper"], h["last_slot"], h["iw_proxy"]
        assert leaper["recall"] >= 0.95, h
        assert leaper["auc"] > last["auc"] + 0.05, h
        assert leaper["auc"] > last["auc_r1"], h  # even against r1 used as a score
        assert leaper["auc"] > iw["auc"], h
        assert leaper["recall"] > last["recall"], h
    assert set(rep) >= {"split", "range_width", "thresholds_by_horizon", "uncovered_positive_share"}
    assert rep["uncovered_positive_share"] < 0.05


def test_models_are_deterministic(trained):
    s, sp = trained.prepared.samples, trained.split
    tr, va = s.subset(sp.train), s.subset(sp.val)
    text, best = fit_model(tr.x, tr.y[:, 0], va.x, va.y[:, 0], trained.config)
    assert text == trained.models[0] and best == trained.best_iterations[0]


def test_model_uses_the_18_features(trained):
    text = trained.models[0]
    assert "feature_names=" + " ".join(FEATURE_NAMES) in text
    assert math.isfinite(trained.threshold)
    assert np.isfinite(trained.prepared.samples.x).all()


def test_figure_is_optional(trained, tmp_path):
    from cairn.learn.leaper.report import write_figure

    path = tmp_path / "fig6.png"
    drawn = write_figure(trained.report, str(path))  # False without matplotlib
    assert drawn == path.exists()


def test_hot_share_picks_a_rarer_label(small_trace):
    from cairn.learn.leaper.train import TrainConfig, train

    base = train([small_trace], TrainConfig(k=1, rounds=20, threads=1, seed=0))
    rare = train([small_trace], TrainConfig(k=1, rounds=20, threads=1, seed=0, hot_share=0.2))
    assert base.prepared.hot_reads == 1.0 and base.report["hot_reads"] == 1.0
    assert rare.prepared.hot_reads > 1.0 and rare.report["hot_reads"] == rare.prepared.hot_reads
    assert rare.prepared.samples.y.mean() <= 0.2 < base.prepared.samples.y.mean()
    # The baselines are scored on the same rarer label, and the recall target still holds.
    h = rare.report["horizons"][0]
    assert h["positive_rate"] < base.report["horizons"][0]["positive_rate"]
    assert h["leaper"]["recall"] >= 0.9, h
    with pytest.raises(ValueError):
        train([small_trace], TrainConfig(k=1, hot_share=0.0))
