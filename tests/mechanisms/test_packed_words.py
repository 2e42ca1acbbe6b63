"""The one-word Hadamard sampler (``HadamardRelease(packed=True)``): same law, fewer words."""

from __future__ import annotations

from typing import Any

import attrs
import jax
import numpy as np
import pytest

from ldptree.accounting import check_sampler, verify_ldp
from ldptree.mechanisms import HadamardRelease, KitMechanism, RealLabels, Release
from ldptree.mechanisms._geometric_label import GeometricLabel


@attrs.frozen
class Hadamard(GeometricLabel, KitMechanism):
    epsilon: float
    label_bound: tuple[float, float] = (-1.0, 1.0)
    budget_split: float = 0.5
    packed: bool = True

    def labels(self) -> RealLabels:
        return GeometricLabel.labels(self)

    def releases(self) -> tuple[Release, ...]:
        return (
            HadamardRelease("cell", self.cell_epsilon, packed=self.packed),
            self.label_release(),
        )

    def debias(self, stats: dict[str, Any], n: int) -> Any:
        raise NotImplementedError


@pytest.mark.slow
def test_packed_sampler_draws_one_word_less_and_the_certified_law() -> None:
    """``check_sampler``: chi-square of the reports against the Hadamard channel, Bonferroni
    false-failure rate 1e-6."""
    packed, default = Hadamard(2.0), Hadamard(2.0, packed=False)
    assert packed.words_per_holder(6) == default.words_per_holder(6) - 1
    cert = verify_ldp(packed, n_cells=6)
    assert cert.holds and cert.pure
    assert cert.epsilon_bound == verify_ldp(default, n_cells=6).epsilon_bound
    assert not check_sampler(packed, 6, n=40_000, key=jax.random.key(3)).rejected


def test_packed_sums_match_the_reports_and_differ_from_the_default_draws() -> None:
    m, n_cells = Hadamard(2.0), 6
    rng = np.random.default_rng(0)
    cells = rng.integers(0, n_cells, 500).astype(np.int32)
    labels = rng.uniform(-1, 1, 500).astype(np.float32)
    key = jax.random.key(1)
    reports = m.privatize(key, cells, labels, n_cells)
    fused = m.privatize_summarize(key, cells, labels, n_cells)
    for name, value in m.summarize(reports, n_cells).items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(fused[name]))
    default = Hadamard(2.0, packed=False).privatize(key, cells, labels, n_cells)
    assert not np.array_equal(np.asarray(reports["cell"]), np.asarray(default["cell"]))


@pytest.mark.parametrize("epsilon", [30.0])
def test_packing_falls_back_to_two_words_without_a_16_bit_flip(epsilon: float) -> None:
    # a large budget needs a 32- or 64-bit flip: the row and the flip cannot share a word
    m = Hadamard(epsilon)
    assert HadamardRelease("cell", m.cell_epsilon).flip.bits > 16
    assert m.words_per_holder(6) == Hadamard(epsilon, packed=False).words_per_holder(6)
