"""LPDT synthetic generators: shapes, support, reproducibility, no global RNG."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree.datasets import lpdt_figure1, lpdt_uniform


def test_figure1_marginal_is_truncated_and_imbalanced():
    X, y = lpdt_figure1(20000, 0)
    assert X.shape == (20000, 1) and y.shape == (20000,)
    assert X.min() >= 0.0 and X.max() <= 1.0
    assert abs(X.std() - np.sqrt(0.025)) < 0.01
    # most mass in the middle, little on the sides
    assert np.mean((X > 0.3) & (X < 0.7)) > 0.75
    # the noise is N(0, 1) around sin(16 x)
    assert abs(np.var(y - np.sin(16 * X[:, 0])) - 1.0) < 0.05


def test_generators_are_reproducible_and_leave_global_state_alone():
    state = np.random.get_state()[1].copy()  # noqa: NPY002 - checking the legacy state
    a = lpdt_uniform(100, 3, 5)
    b = lpdt_uniform(100, 3, np.random.default_rng(5))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # noqa: NPY002


def test_bad_sizes_name_the_argument():
    with pytest.raises(ValueError, match="n"):
        lpdt_figure1(0, 1)
    with pytest.raises(ValueError, match="d"):
        lpdt_uniform(10, 0, 1)
