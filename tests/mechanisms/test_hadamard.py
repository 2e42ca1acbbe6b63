"""The Hadamard release: transform, law and sampler."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from ldptree.accounting import FiniteChannel
from ldptree.mechanisms import HadamardLaplaceMechanism, HadamardRelease
from ldptree.mechanisms._hadamard import hadamard_order, plus_bit, walsh_hadamard

KEY = jax.random.key(20261124)


def _matrix(k: int) -> np.ndarray:
    return np.array([[1 if plus_bit(r, c) else -1 for c in range(k)] for r in range(k)])


def test_sylvester_matrix_and_fast_transform() -> None:
    h = _matrix(16)
    np.testing.assert_array_equal(h @ h.T, 16 * np.eye(16))
    np.testing.assert_array_equal(h[:, 0], 1)
    x = np.arange(16 * 3).reshape(16, 3) - 20
    np.testing.assert_array_equal(np.asarray(walsh_hadamard(jnp.asarray(x))), h @ x)
    assert [hadamard_order(n) for n in (1, 2, 3, 4, 7, 8)] == [2, 4, 4, 8, 8, 16]


@pytest.mark.parametrize("bits", [None, 64])
def test_closed_form_divergences_match_enumeration(bits: int | None) -> None:
    release = HadamardRelease("cell", 1.5, bits)
    channel = release.channel(6)
    generic = FiniteChannel(outputs=channel.outputs, log_probs=channel.log_probs)
    cells = list(range(6))
    fast, slow = channel.divergences(cells), generic.divergences(cells)
    np.testing.assert_allclose(fast.value, slow.value, rtol=1e-12, atol=1e-12)
    assert np.max(fast.value) <= 1.5 * (1 + 1e-12)
    for a in cells:
        for b in cells:
            s = fast.witness[a][b]
            ratio = channel.log_prob(s, a) - channel.log_prob(s, b)
            assert ratio == pytest.approx(fast.value[a, b], abs=1e-12)  # the witness attains it
            assert channel.log_prob(s, a) == pytest.approx(release.log_prob(s, a, 6))


def test_rows_are_uniform_and_bits_follow_the_flip() -> None:
    """Chi-square test of the rows (8 values) and a binomial test of kept bits on 40,000 reports
    for a fixed key: false-failure rate 2e-6."""
    mech = HadamardLaplaceMechanism(epsilon=2.0, label_bound=1.0)
    n, n_cells = 40_000, 5
    cells = np.arange(n) % n_cells
    value = np.asarray(
        mech.privatize(KEY, jnp.asarray(cells, dtype=jnp.int32), jnp.zeros(n), n_cells).cell
    )
    rows, bits = value // 2, value % 2
    assert rows.min() >= 0 and rows.max() < 8
    assert stats.chisquare(np.bincount(rows, minlength=8)).pvalue > 1e-6
    plus = np.array([plus_bit(int(r), int(c) + 1) for r, c in zip(rows, cells, strict=True)])
    kept = int((bits == plus).sum())
    assert stats.binomtest(kept, n, 1 - mech.flip.flip_prob).pvalue > 1e-6
