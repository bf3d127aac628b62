"""Algorithm 2 on a hand-made transfer matrix, and the lazy search against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.learn.leaper.counts import coarsen, from_traces
from cairn.learn.leaper.precursors import cosine_similarities, find_precursors
from conftest import counts_of

# Read-rate vectors over slots 0..3.
VECTORS = {
    10: [1, 2, 0, 1],
    11: [1, 2, 0, 1],  # cos(10, 11) = 1
    12: [0, 0, 5, 0],  # cos(10, 12) = 0
    13: [2, 4, 0, 2],  # cos = 1
    14: [1, 1, 1, 1],  # cos = 4 / (sqrt(6) * 2) = 0.816
    15: [1, 0, 0, 0],  # cos = 1 / sqrt(6) = 0.408
    # 16 and 17 are never read: zero vectors, never precursors
}
TRANSFERS = [
    (10, 12, 9),
    (10, 16, 8),
    (10, 15, 7),
    (10, 11, 5),
    (10, 13, 5),  # ties with 11: the smaller id comes first
    (10, 14, 2),
    (12, 10, 3),  # 12's only candidate is dissimilar: 12 gets no precursor
    (11, 13, 1),
]


def hand_counts(transfers=TRANSFERS):
    cells = [(r, s, v, 0) for r, vec in VECTORS.items() for s, v in enumerate(vec) if v]
    cells.append((16, 0, 0, 1))
    return counts_of(cells, transfers)


def test_cosine_values():
    c = hand_counts()
    cos = cosine_similarities(c, np.array([10, 10, 10, 10, 10]), np.array([11, 12, 14, 15, 16]))
    assert cos == pytest.approx([1.0, 0.0, 4 / (np.sqrt(6) * 2), 1 / np.sqrt(6), 0.0])


def test_hand_made_transfer_matrix():
    c = hand_counts()
    assert find_precursors(c, gamma=3, epsilon=0.5) == {10: [11, 13, 14], 11: [13]}
    assert find_precursors(c, gamma=2, epsilon=0.5) == {10: [11, 13], 11: [13]}
    # a lower epsilon lets 15 (0.408) in, in transfer-count order
    assert find_precursors(c, gamma=3, epsilon=0.3) == {10: [15, 11, 13], 11: [13]}
    assert find_precursors(c, gamma=1, epsilon=0.9) == {10: [11], 11: [13]}


def test_candidates_beyond_the_first_window():
    # gamma = 1: the first window holds 4 candidates (12, 16, 15, 17), all rejected;
    # the answer (14) is found in the next one.
    tr = [(10, 12, 9), (10, 16, 8), (10, 15, 7), (10, 17, 6), (10, 14, 2)]
    assert find_precursors(hand_counts(tr), gamma=1, epsilon=0.5) == {10: [14]}


def test_no_transfers_no_precursors():
    assert find_precursors(hand_counts([]), gamma=3) == {}


def brute_force(counts, gamma, epsilon):
    lo, hi = counts.slot_bounds()
    vec: dict[int, np.ndarray] = {}
    for r, s, v in zip(counts.range.tolist(), counts.slot.tolist(), counts.reads.tolist()):
        vec.setdefault(r, np.zeros(hi - lo + 1))[s - lo] += v
    cands: dict[int, list[tuple[int, int]]] = {}
    for t, f, n in zip(counts.tr_to.tolist(), counts.tr_from.tolist(), counts.tr_count.tolist()):
        cands.setdefault(t, []).append((-n, f))
    out = {}
    for t, lst in cands.items():
        kept = []
        for _, f in sorted(lst):
            if len(kept) == gamma:
                break
            a, b = vec.get(t), vec.get(f)
            if a is None or b is None or not a.any() or not b.any():
                continue
            if a @ b / (np.linalg.norm(a) * np.linalg.norm(b)) > epsilon:
                kept.append(f)
        if kept:
            out[t] = kept
    return out


@pytest.mark.parametrize("m,gamma,epsilon", [(1, 3, 0.5), (4, 3, 0.5), (4, 1, 0.8), (16, 2, 0.2)])
def test_matches_brute_force_on_synthetic_data(small_trace, m, gamma, epsilon):
    counts = coarsen(from_traces([small_trace]), m)
    got = find_precursors(counts, gamma, epsilon)
    assert got == brute_force(counts, gamma, epsilon)
    assert got  # the synthetic leader/follower pairs do produce precursors
