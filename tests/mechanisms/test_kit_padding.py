"""``privatize_summarize(..., n_holders=m)``: padding records after the holders change nothing."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree.mechanisms import KRRCellClassMechanism, RRLaplaceMechanism

KEY = jax.random.key(7)


def _records(n: int, n_cells: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_cells, n).astype(np.int32), rng.uniform(-2.0, 2.0, n)


@pytest.mark.parametrize(("m", "rows"), [(300, 300), (300, 1024), (1000, 4096), (0, 512)])
def test_padding_records_after_the_holders_leave_the_sums_unchanged(m: int, rows: int) -> None:
    mech = RRLaplaceMechanism(epsilon=4.0, label_bound=(-1.0, 1.0))
    cells, labels = _records(rows, 13, m)
    # the padding rows hold arbitrary valid records (here random ones, not zeros)
    padded = mech.privatize_summarize(KEY, cells, labels, 13, first_holder=40, n_holders=m)
    alone = mech.privatize_summarize(KEY, cells[:m], labels[:m], 13, first_holder=40)
    assert set(padded) == set(alone)
    for name in alone:
        np.testing.assert_array_equal(np.asarray(padded[name]), np.asarray(alone[name]))


def test_padding_works_for_class_codes() -> None:
    mech = KRRCellClassMechanism(epsilon=2.0, n_classes=3)
    rng = np.random.default_rng(3)
    cells, codes = rng.integers(0, 9, 700).astype(np.int32), rng.integers(0, 3, 700)
    padded = mech.privatize_summarize(KEY, cells, codes, 9, first_holder=5, n_holders=450)
    alone = mech.privatize_summarize(KEY, cells[:450], codes[:450], 9, first_holder=5)
    for name in alone:
        np.testing.assert_array_equal(np.asarray(padded[name]), np.asarray(alone[name]))


def test_n_holders_is_checked() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=(-1.0, 1.0))
    cells, labels = _records(10, 3, 0)
    with pytest.raises(ValueError, match="n_holders must be <= the number of records"):
        mech.privatize_summarize(KEY, cells, labels, 3, n_holders=11)
    with pytest.raises(ValueError, match="n_holders"):
        mech.privatize_summarize(KEY, cells, labels, 3, n_holders=-1)
    with pytest.raises(TypeError, match="n_holders"):
        mech.privatize_summarize(KEY, cells, labels, 3, n_holders=2.0)  # type: ignore[arg-type]
    # the holder range is checked for the holders only, not for the padding rows
    mech.privatize_summarize(KEY, cells, labels, 3, first_holder=2**32 - 4, n_holders=4)
    with pytest.raises(ValueError, match="first_holder"):
        mech.privatize_summarize(KEY, cells, labels, 3, first_holder=2**32 - 4, n_holders=5)


@pytest.mark.parametrize("m", [16384, 9000, 8192])
def test_the_blocked_kernel_equals_privatize_then_summarize(m: int) -> None:
    """The fused kernel sums 8192-row blocks in a loop over the blocks holding holders; its sums
    equal the two-step ``summarize(privatize(...))`` of the same holders bit for bit."""
    mech = RRLaplaceMechanism(epsilon=3.0, label_bound=(-1.0, 1.0))
    cells, labels = _records(16384, 6, 1)
    fused = mech.privatize_summarize(KEY, cells, labels, 6, first_holder=3, n_holders=m)
    reports = mech.privatize(KEY, cells[:m], labels[:m], 6, first_holder=3)
    two_step = mech.summarize(reports, 6)
    for name in mech.stat_names():
        np.testing.assert_array_equal(np.asarray(fused[name]), np.asarray(two_step[name]))
