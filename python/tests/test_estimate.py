import numpy as np
import pytest

from cairn.learn.leaper.estimate import estimate_count, estimate_counts


def test_eq1_values():
    assert estimate_count(0, 0.01) == 0.0
    assert estimate_count(1, 0.01) == 1.0  # the first access is always counted
    assert estimate_count(2, 0.01) == pytest.approx(101.0)
    assert estimate_count(5, 0.5) == 9.0
    assert estimate_count(7, 1.0) == 7.0


def test_eq1_vectorised():
    assert estimate_counts(np.array([0, 1, 2, 3]), 0.25).tolist() == [0.0, 1.0, 5.0, 9.0]


@pytest.mark.parametrize("p", [0.0, -0.1, 1.01])
def test_eq1_rejects_bad_p(p):
    with pytest.raises(ValueError):
        estimate_count(1, p)
