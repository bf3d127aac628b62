from __future__ import annotations

import itertools

import numpy as np
import pytest

from cairn.learn.leaper.metrics import auc, choose_threshold, scores


def auc_pairs(y, s):
    pos = [v for v, t in zip(s, y) if t]
    neg = [v for v, t in zip(s, y) if not t]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_auc_matches_pairwise_definition_with_ties():
    rng = np.random.default_rng(1)
    y = rng.random(300) < 0.4
    s = np.round(rng.random(300) + 0.3 * y, 1)  # coarse scores: many ties
    assert auc(y, s) == pytest.approx(auc_pairs(y.tolist(), s.tolist()))


def test_auc_of_a_binary_rule_is_mean_of_tpr_and_tnr():
    y = np.array([1, 1, 1, 0, 0, 0, 0, 0], dtype=bool)
    hot = np.array([1, 1, 0, 1, 0, 0, 0, 0], dtype=bool)
    assert auc(y, hot) == pytest.approx((2 / 3 + 4 / 5) / 2)


def test_auc_needs_both_classes():
    assert np.isnan(auc(np.array([True, True]), np.array([0.1, 0.2])))


def test_scores():
    y = np.array([1, 1, 0, 1, 0], dtype=bool)
    s = scores(y, np.array([1, 0, 1, 1, 0], dtype=bool))
    assert (s.precision, s.recall, s.predicted, s.positives, s.n) == (2 / 3, 2 / 3, 3, 3, 5)


def test_threshold_best_f1_subject_to_recall():
    y = np.array([1, 1, 0, 1, 0], dtype=bool)
    p = np.array([0.9, 0.8, 0.7, 0.6, 0.1])
    # thresholds: 0.8 -> R 2/3 P 1 F1 .8; 0.6 -> R 1 P .75 F1 .857; 0.1 -> R 1 P .6
    assert choose_threshold(y, p, 0.6) == 0.6
    assert choose_threshold(y, p, 1.0) == 0.6
    # 0.9 has the best precision but misses the recall target
    assert choose_threshold(y, p, 0.3) == 0.6


def test_threshold_keeps_recall_on_ties():
    y = np.array([1, 0, 1, 0], dtype=bool)
    p = np.array([0.5, 0.5, 0.5, 0.2])
    t = choose_threshold(y, p, 0.95)
    assert t == 0.5 and ((p >= t) & y).sum() == 2
