"""``privatize_words`` runs the sampling of ``privatize`` on caller-supplied words."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree.mechanisms import (
    HadamardLaplaceMechanism,
    IndexRelease,
    KitMechanism,
    KRRCellClassMechanism,
    KRRJointMechanism,
    KRRLaplaceMechanism,
    LaplaceCellClassMechanism,
    LaplaceCellLabelMechanism,
    OUECellClassMechanism,
    OUELaplaceMechanism,
    RRLaplaceMechanism,
)
from ldptree.mechanisms._random import holder_words, key_words

N_CELLS = 5
MECHANISMS = [
    RRLaplaceMechanism(epsilon=2.0, label_bound=(-1.0, 3.0)),
    RRLaplaceMechanism(epsilon=2.0, label_bound=1.0, precision_bits=64),
    LaplaceCellLabelMechanism(epsilon=1.5, label_bound=2.0),
    LaplaceCellClassMechanism(epsilon=1.0, n_classes=2),
    LaplaceCellClassMechanism(epsilon=3.0, n_classes=3),
    OUELaplaceMechanism(epsilon=2.0, label_bound=1.0),
    OUELaplaceMechanism(epsilon=2.0, label_bound=1.0, precision_bits=64),
    OUECellClassMechanism(epsilon=2.0, n_classes=3),
    HadamardLaplaceMechanism(epsilon=2.0, label_bound=(-1.0, 3.0)),
    HadamardLaplaceMechanism(epsilon=2.0, label_bound=1.0, precision_bits=64),
    KRRLaplaceMechanism(epsilon=2.0, label_bound=1.0),
    KRRJointMechanism(epsilon=2.0, label_bound=1.0),
    KRRCellClassMechanism(epsilon=2.0, n_classes=3),
]


def _records(mechanism: KitMechanism, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    cells = rng.integers(0, N_CELLS, n).astype(np.int32)
    if mechanism.labels().integer:
        return cells, rng.integers(-1, 4, n).astype(np.int32)
    return cells, rng.normal(0.0, 2.0, n).astype(np.float32)


@pytest.mark.parametrize("mechanism", MECHANISMS, ids=lambda m: type(m).__name__)
def test_threefry_words_reproduce_privatize(mechanism: KitMechanism) -> None:
    key = jax.random.key(11)
    first, n = 40, 37
    cells, labels = _records(mechanism, n)
    width = mechanism.words_per_holder(N_CELLS)
    words = np.asarray(holder_words(key_words(key), np.uint32(first), n, width))
    expected = mechanism.privatize(key, cells, labels, N_CELLS, first_holder=first)
    got = mechanism.privatize_words(words, cells, labels, N_CELLS)
    for a, b in zip(
        jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(got), strict=True
    ):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_words_change_the_report() -> None:
    m = MECHANISMS[0]
    cells, labels = _records(m, 64)
    width = m.words_per_holder(N_CELLS)
    a = m.privatize_words(np.zeros((64, width), np.uint32), cells, labels, N_CELLS)
    b = m.privatize_words(np.full((64, width), 2**32 - 1, np.uint32), cells, labels, N_CELLS)
    assert not np.array_equal(np.asarray(a.bits), np.asarray(b.bits))


def test_words_shape_and_dtype_are_checked() -> None:
    m = MECHANISMS[0]
    cells, labels = _records(m, 3)
    width = m.words_per_holder(N_CELLS)
    with pytest.raises(ValueError, match="words must be a uint32"):
        m.privatize_words(np.zeros((3, width - 1), np.uint32), cells, labels, N_CELLS)
    with pytest.raises(ValueError, match="words must be a uint32"):
        m.privatize_words(np.zeros((3, width), np.int64), cells, labels, N_CELLS)


def test_report_fields_cover_the_outputs() -> None:
    m = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0)
    fields = dict((name, rest) for name, *rest in m.report_fields(N_CELLS))
    assert fields["bits"] == [(N_CELLS,), 0, 1]
    noise = m.label_noise
    assert fields["code"] == [(), -noise.margin, noise.span + noise.margin]
    cls = LaplaceCellClassMechanism(epsilon=1.0, n_classes=3)
    assert [f[1] for f in cls.report_fields(N_CELLS)] == [(N_CELLS,), (N_CELLS, 3)]


def test_report_fields_of_an_index_release() -> None:
    class Index(RRLaplaceMechanism):
        def releases(self):  # type: ignore[no-untyped-def]
            return (IndexRelease("cell", self.epsilon),)

    m = Index(epsilon=1.0, label_bound=1.0)
    assert m.report_fields(N_CELLS) == (("cell", (), 0, N_CELLS - 1),)
