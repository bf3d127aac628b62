"""Algorithm 1 on hand-made access matrices, and aggregation to the chosen width."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.learn.leaper.counts import coarsen
from cairn.learn.leaper.ranges import AccessMatrix, key_range_selection, select_multiplier
from conftest import counts_of


def counts_from_matrix(m: list[list[int]]):
    """Fine counts with one read in every 1-cell of ``m`` (rows: slots, columns: ranges)."""
    cells = [(r, s, 1, 0) for s, row in enumerate(m) for r, v in enumerate(row) if v]
    return counts_of(cells)


def test_known_answer_with_binary_search():
    # Z(1) = 14/16, Z(2) = 6/8, Z(4) = 2/4, Z(8) = 0/2.
    # Doubling: 0.75/0.875 > 0.6, 0.5/0.75 > 0.6, 0/0.5 < 0.6 -> m = 4.
    # Binary search in [4, 8): m = 5, 6, 7 all group ranges 0..4 together -> Z = 0.5 > 0.3.
    c = counts_from_matrix([[1, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0, 0, 0]])
    sel = key_range_selection(c, alpha=0.6, span=(0, 7))
    assert sel.zero_proportion[1] == pytest.approx(0.875)
    assert sel.zero_proportion[2] == pytest.approx(0.75)
    assert sel.zero_proportion[4] == pytest.approx(0.5)
    assert sel.zero_proportion[8] == pytest.approx(0.0)
    assert sel.multiplier == 7


def test_definition_1_threshold_is_alpha_not_half_alpha():
    # Z(1) = 5/8, Z(2) = 1/4: the ratio 0.4 is below alpha = 0.6, so no expansion is
    # efficient (reading Z as a proportion *and* keeping the pseudo-code's factor 2 would
    # compare 2 * 0.25 = 0.5 with 0.6 * 0.625 = 0.375 and double).
    c = counts_from_matrix([[1, 0, 1, 0], [0, 1, 0, 0]])
    assert select_multiplier(c, alpha=0.6, span=(0, 3)) == 1
    # With alpha = 0.3 that doubling is efficient, the next (Z(4) = 0) is not, and the
    # binary search over [2, 4) compares with Z(2): m = 3 groups ranges 0..2 | 3, so
    # both slots read [1, 0] and Z(3) = 0.5 > 0.3 * 0.25.
    assert select_multiplier(c, alpha=0.3, span=(0, 3)) == 3


def test_dense_matrix_keeps_the_fine_width():
    c = counts_from_matrix([[1, 1, 1, 1], [1, 1, 1, 1]])
    assert select_multiplier(c) == 1


def test_no_reads_keeps_the_fine_width():
    assert select_multiplier(counts_of([(3, 0, 0, 5), (9, 4, 0, 1)])) == 1


def test_stops_when_one_range_covers_the_span():
    # Slot 1 has only a write: its row of M is all zeros, so Z never reaches 0 and the
    # ratio stays 1 once a single range covers everything; the loop must stop there.
    c = counts_of([(0, 0, 1, 0), (1, 1, 0, 1)])
    sel = key_range_selection(c)
    assert sel.zero_proportion[1] == pytest.approx(0.75)
    assert sel.zero_proportion[2] == pytest.approx(0.5)
    assert sel.multiplier == 2


def test_max_multiplier_caps_the_search():
    c = counts_from_matrix([[1] + [0] * 63, [0] * 32 + [1] + [0] * 31])
    assert select_multiplier(c) > 8
    assert select_multiplier(c, max_multiplier=8) <= 8


def test_sparse_zero_proportion_matches_dense():
    rng = np.random.default_rng(3)
    dense = rng.random((17, 50)) < 0.15
    c = counts_from_matrix(dense.astype(int).tolist())
    mat = AccessMatrix.from_counts(c, span=(0, 49))
    for m in (1, 2, 3, 5, 7, 16, 49, 50):
        cols = (49 // m) + 1
        coarse = np.zeros((17, cols), dtype=bool)
        for r in range(50):
            coarse[:, r // m] |= dense[:, r]
        assert mat.zero_proportion(m) == pytest.approx(1.0 - coarse.mean()), m


def test_coarsen_sums_estimates_and_drops_self_transfers():
    c = counts_of(
        [(0, 0, 1, 0), (1, 0, 2, 1), (2, 0, 1, 0), (5, 1, 3, 0)],
        [(1, 0, 4), (2, 1, 3), (5, 1, 2), (1, 5, 6)],
        sample_p=0.5,
    )
    # eq. 1 per fine cell: S=1 -> 1, S=2 -> 3, S=3 -> 5
    cc = coarsen(c, 2)
    assert cc.range_width == 20 and cc.fine_range_width == 10 and cc.multiplier == 2
    got = {(int(r), int(s)): (rd, w) for r, s, rd, w in zip(cc.range, cc.slot, cc.reads, cc.writes)}
    assert got == {(0, 0): (1.0 + 3.0, 1.0), (1, 0): (1.0, 0.0), (2, 1): (5.0, 0.0)}
    tr = {(int(t), int(f)): int(n) for t, f, n in zip(cc.tr_to, cc.tr_from, cc.tr_count)}
    # (1 <- 0) becomes 0 <- 0 and is dropped; (2 <- 1) -> 1 <- 0; (5 <- 1) -> 2 <- 0; (1 <- 5) -> 0 <- 2
    assert tr == {(1, 0): 3, (2, 0): 2, (0, 2): 6}
