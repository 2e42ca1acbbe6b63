"""audit_ldp's record classes, holder pairs and exact-bit statistics: mutants the per-report,
two-cell, quantile-binned audit misses and the extended audit refutes.

False-failure rate: an audit at confidence ``c`` refutes a correct claim with probability at most
``1 - c = 1e-3``; keys are fixed. The ``not refuted`` assertions with a capability switched off
show which capability finds the leak (they hold for these keys; they are not privacy claims).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree.accounting import audit_ldp
from ldptree.mechanisms import RRLaplaceMechanism, RRLaplaceReport
from ldptree.protocols import CellEstimates


class _Value(NamedTuple):
    value: jax.Array


@attrs.frozen
class _LabelLaplace:
    """Releases ``clip(y, -1, 1) + Laplace(2 / epsilon)`` in float32 (JAX)."""

    epsilon: float

    def noisy(self, key: Any, labels: Any, first_holder: int) -> jax.Array:
        y = jnp.clip(jnp.asarray(labels, jnp.float32), -1.0, 1.0)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(first_holder + jnp.arange(y.shape[0]))
        noise = jax.vmap(lambda k: jax.random.laplace(k, (), jnp.float32))(keys)
        return y + jnp.float32(2.0 / self.epsilon) * noise

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> _Value:
        return _Value(self.noisy(key, labels, first_holder))

    def summarize(self, reports: _Value, n_cells: int) -> dict[str, Any]:
        return {"sum": jnp.sum(reports.value)}

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        return CellEstimates(np.asarray([float(n)]), np.asarray([float(stats["sum"])]), n)

    def log_prob(self, report: _Value, cell: int, label: float, n_cells: int) -> float:
        b = 2.0 / self.epsilon
        y = min(max(float(label), -1.0), 1.0)
        return -math.log(2.0 * b) - abs(float(report.value) - y) / b


@attrs.frozen
class _SignInLastBit(_LabelLaplace):
    """Hides the label's sign in the last mantissa bit of the released float32."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> _Value:
        value = self.noisy(key, labels, first_holder)
        sign = (jnp.asarray(labels) > 0).astype(jnp.uint32)
        bits = (jax.lax.bitcast_convert_type(value, jnp.uint32) & ~jnp.uint32(1)) | sign
        return _Value(jax.lax.bitcast_convert_type(bits, jnp.float32))


@attrs.frozen
class _Float64Textbook(_LabelLaplace):
    """``y + Laplace`` in float64 NumPy, labels clipped to ``[0, 1]`` (the textbook sampler)."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> _Value:
        words = np.asarray(jax.random.key_data(key)).ravel().tolist()
        rng = np.random.default_rng([*words, first_holder])
        y = np.clip(np.asarray(labels, np.float64), 0.0, 1.0)
        return _Value(y + rng.laplace(0.0, 1.0 / self.epsilon, size=y.shape))  # type: ignore[arg-type]


class _Bits(NamedTuple):
    bits: jax.Array


@attrs.frozen
class _SharedFlips:
    """Randomized response on the one-hot cell, but holders ``2k`` and ``2k + 1`` draw the same
    flips: each report alone is ``epsilon``-LDP, the pair's XOR reveals both cells' XOR."""

    epsilon: float

    @property
    def flip(self) -> float:
        return 1.0 / (1.0 + math.exp(self.epsilon / 2.0))

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> _Bits:
        cells = jnp.asarray(cells)
        holders = (first_holder + jnp.arange(cells.shape[0])) // 2
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(holders)
        u = jax.vmap(lambda k: jax.random.uniform(k, (n_cells,)))(keys)
        return _Bits(jax.nn.one_hot(cells, n_cells, dtype=bool) ^ (u < self.flip))

    def summarize(self, reports: _Bits, n_cells: int) -> dict[str, Any]:
        return {"ones": jnp.sum(reports.bits, axis=0)}

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        q = self.flip
        count = (np.asarray(stats["ones"], np.float64) - q * n) / (1.0 - 2.0 * q)
        return CellEstimates(count, np.zeros_like(count), n)

    def log_prob(self, report: _Bits, cell: int, label: float, n_cells: int) -> float:
        bits = np.asarray(report.bits, dtype=bool)
        agree = int((bits == (np.arange(n_cells) == cell)).sum())
        return agree * math.log(1.0 - self.flip) + (n_cells - agree) * math.log(self.flip)


@attrs.frozen
class _LastCellInTheClear(RRLaplaceMechanism):
    """The last cell's bit is released without flips."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> RRLaplaceReport:
        report = super().privatize(key, cells, labels, n_cells, first_holder=first_holder)
        last = jnp.asarray(cells) == n_cells - 1
        return report._replace(bits=report.bits.at[:, -1].set(last))


def test_the_sign_in_the_last_mantissa_bit_is_found() -> None:
    mech = _SignInLastBit(epsilon=1.0)
    args: dict[str, Any] = dict(n_cells=1, label_bound=(-1.0, 1.0), key=jax.random.key(1))
    blind = audit_ldp(mech, **args, n_samples=100_000, exact_bits=False)
    assert not blind.refuted, str(blind)
    found = audit_ldp(mech, **args, n_samples=20_000)
    assert found.refuted and found.epsilon_lower > 5.0, str(found)


def test_the_honest_float32_label_release_is_not_refuted() -> None:
    # labels at -1 and 1 give mirror-image float grids: nothing to see in the bits
    result = audit_ldp(
        _LabelLaplace(epsilon=1.0), n_cells=1, label_bound=(-1.0, 1.0), key=jax.random.key(2)
    )
    assert not result.refuted, str(result)


def test_float64_textbook_laplace_is_refuted_by_its_grain() -> None:
    mech = _Float64Textbook(epsilon=1.0)
    args: dict[str, Any] = dict(n_cells=1, label_bound=(0.0, 1.0), key=jax.random.key(3))
    blind = audit_ldp(mech, **args, n_samples=100_000, exact_bits=False)
    assert not blind.refuted, str(blind)
    found = audit_ldp(mech, **args, n_samples=20_000)
    assert found.refuted and found.epsilon_lower > 3.0, str(found)


def test_holders_sharing_randomness_are_refuted() -> None:
    mech = _SharedFlips(epsilon=1.0)
    args: dict[str, Any] = dict(n_cells=3, labels=[0], key=jax.random.key(4), n_samples=30_000)
    blind = audit_ldp(mech, **args, holder_pairs=False)
    assert not blind.refuted, str(blind)
    found = audit_ldp(mech, **args)
    assert found.refuted and "holders (h, h+1)" in found.event, str(found)


def test_a_leak_in_the_last_cell_is_found() -> None:
    mech = _LastCellInTheClear(epsilon=1.0, label_bound=1.0)
    found = audit_ldp(mech, n_cells=5, label_bound=1.0, key=jax.random.key(5), n_samples=30_000)
    assert found.refuted and 4 in (found.record[0], found.other[0]), str(found)
