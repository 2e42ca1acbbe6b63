"""Mutation suite: deliberately broken mechanisms must be rejected, with a witness.

Each mutant changes one thing in :class:`~ldptree.mechanisms.RRLaplaceMechanism` (the code that
samples and the code that describes the law share the broken constant, as a real bug would).
``verify_ldp`` must reject every one with a witness whose ratio the mutant's own ``log_prob``
confirms; ``audit_ldp`` (black box, ``privatize`` only) must also refute the gross ones. A
mechanism written in this file against the documented protocol only is verified and audited.

Audit false-failure rate: each audit of a correct mechanism refutes with probability at most
``1 - confidence = 1e-3``; keys are fixed.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ldptree.accounting import (
    CellBlock,
    FiniteChannel,
    LabelBlock,
    LaplaceChannel,
    RecordBlock,
    ReportLaw,
    audit_ldp,
    verify_ldp,
)
from ldptree.accounting._channels import grid_laplace_log_probs
from ldptree.mechanisms import RRLaplaceMechanism, RRLaplaceReport
from ldptree.protocols import CellEstimates, Mechanism

EPSILON, RHO, BOUND, N_CELLS = 1.0, 0.5, 1.0, 4


# -- mutants --------------------------------------------------------------------------------------
@attrs.frozen
class HalvedScale(RRLaplaceMechanism):
    """Laplace scale halved: the label costs 2 (1 - rho) eps."""

    @property
    def label_scale(self) -> float:
        return super().label_scale / 2.0


@attrs.frozen
class KeepFromEpsilon(RRLaplaceMechanism):
    """Keep probability from eps instead of rho eps / 2: the cell costs 2 eps."""

    @property
    def flip_threshold(self) -> int:
        q = 1.0 / (1.0 + math.exp(self.epsilon))
        return max(1, math.ceil(q * 2.0**self.bits))


@attrs.frozen
class Unclipped(RRLaplaceMechanism):
    """Labels not clipped: constructed with a bound so wide it never acts, calibrated to [-1, 1]."""

    @property
    def label_range(self) -> float:
        return 2.0

    @property
    def label_center(self) -> float:
        return 0.0


class PerCellReport(NamedTuple):
    bits: jax.Array
    codes: jax.Array  # [n, L]: one noisy label per cell


@attrs.frozen
class NoisyLabelPerCell(RRLaplaceMechanism):
    """One noisy label per cell instead of per holder (the reference code's bug)."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> PerCellReport:
        base = super().privatize(key, cells, labels, n_cells, first_holder=first_holder)
        copies = [
            super(NoisyLabelPerCell, self)
            .privatize(jax.random.fold_in(key, 1 + c), cells, labels, n_cells)
            .code
            for c in range(n_cells)
        ]
        return PerCellReport(base.bits, jnp.stack(copies, axis=1))

    def log_prob(self, report: Any, cell: int, label: float, n_cells: int) -> float:
        codes = np.asarray(report.codes)
        return self.cell_log_prob(report.bits, cell) + sum(
            self.label_log_prob(int(c), label) for c in codes
        )

    def report_law(self, n_cells: int) -> ReportLaw:
        base = super().report_law(n_cells)
        label = base.blocks[1].channel

        def assemble(outputs: dict[str, list[Any]]) -> PerCellReport:
            return PerCellReport(
                jnp.asarray(outputs["cell"], dtype=bool), jnp.asarray(outputs["labels"])
            )

        return ReportLaw(
            blocks=(
                base.blocks[0],
                CellBlock("labels", label, on=lambda t: (t,), off=lambda t: (t,)),
            ),
            label_map=base.label_map,
            assemble=assemble,
        )


@attrs.frozen
class LabelDependentScale(RRLaplaceMechanism):
    """Noise scale grows with the holder's own label: from b/2 at lo to 3b/2 at hi."""

    def multiplier(self, mu: Any) -> Any:
        half = self.label_range / 2.0 / self.label_step
        return 1.0 + 0.5 * mu / half

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> RRLaplaceReport:
        base = super().privatize(key, cells, labels, n_cells, first_holder=first_holder)
        lo, hi = self.label_bound
        mu = (jnp.clip(jnp.asarray(labels, jnp.float32), lo, hi) - self.label_center) / (
            self.label_step
        )
        k_noise, k_round = jax.random.split(jax.random.fold_in(key, 7))
        beta = self.label_scale / self.label_step * self.multiplier(mu)
        v = mu + beta * jax.random.laplace(k_noise, mu.shape)
        code = jnp.floor(v + jax.random.uniform(k_round, mu.shape))
        k_lim = self.code_limit
        return base._replace(code=jnp.clip(code, -k_lim, k_lim).astype(jnp.int32))

    def _label_law(self, value: tuple[float, float]) -> Any:
        mu, mult = value
        return grid_laplace_log_probs(
            self.label_scale / self.label_step * mult, self.code_limit, mu
        )

    def log_prob(self, report: Any, cell: int, label: float, n_cells: int) -> float:
        mu = self.label_location(label)
        law = self._label_law((mu, float(self.multiplier(mu))))
        return self.cell_log_prob(report.bits, cell) + float(
            law[int(report.code) + self.code_limit]
        )

    def report_law(self, n_cells: int) -> ReportLaw:
        base = super().report_law(n_cells)
        k_lim = self.code_limit
        channel = FiniteChannel(outputs=range(-k_lim, k_lim + 1), log_probs=self._label_law)
        return attrs.evolve(
            base,
            blocks=(
                base.blocks[0],
                LabelBlock("label", channel, inputs=lambda t: ((t, float(self.multiplier(t))),)),
            ),
        )


class LeakReport(NamedTuple):
    bits: jax.Array
    code: jax.Array
    leak: jax.Array  # the cell index with probability 4 / 2^32, else -1


#: The leak fires when a 32-bit uniform integer is below 4: probability exactly 4 / 2^32.
LEAK_PROB = 4.0 / 2.0**32


@attrs.frozen
class LeakyCell(RRLaplaceMechanism):
    """Also reports the cell index with probability ~1e-9 (-1 otherwise)."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> LeakReport:
        base = super().privatize(key, cells, labels, n_cells, first_holder=first_holder)
        cells = jnp.asarray(cells, jnp.int32)
        fire = jax.random.bits(jax.random.fold_in(key, 3), cells.shape, jnp.uint32) < 4
        return LeakReport(base.bits, base.code, jnp.where(fire, cells, -1))

    def _leak_law(self, cell: int, n_cells: int) -> Any:
        row = np.full(n_cells + 1, -np.inf)
        row[0] = math.log1p(-LEAK_PROB)
        row[1 + cell] = math.log(LEAK_PROB)
        return row

    def log_prob(self, report: Any, cell: int, label: float, n_cells: int) -> float:
        base = super().log_prob(report, cell, label, n_cells)
        return base + float(self._leak_law(cell, n_cells)[int(report.leak) + 1])

    def report_law(self, n_cells: int) -> ReportLaw:
        base = super().report_law(n_cells)
        leak = FiniteChannel(
            outputs=range(-1, n_cells), log_probs=lambda cell: self._leak_law(cell, n_cells)
        )

        def assemble(outputs: dict[str, list[Any]]) -> LeakReport:
            assert base.assemble is not None
            rr = base.assemble(outputs)
            return LeakReport(rr.bits, rr.code, jnp.asarray(outputs["leak"][0]))

        return attrs.evolve(
            base,
            blocks=(*base.blocks, RecordBlock("leak", leak, inputs=lambda cell, t: (cell,))),
            assemble=assemble,
        )


def _mutant(cls: type, **kw: Any) -> Any:
    return cls(epsilon=EPSILON, label_bound=kw.pop("label_bound", BOUND), budget_split=RHO, **kw)


MUTANTS = {
    "halved scale": (lambda: _mutant(HalvedScale), True),
    "keep probability from eps": (lambda: _mutant(KeepFromEpsilon), True),
    "labels not clipped": (lambda: _mutant(Unclipped, label_bound=1e6), True),
    "noisy label per cell": (lambda: _mutant(NoisyLabelPerCell), True),
    "scale depends on the label": (lambda: _mutant(LabelDependentScale), True),
    "leaks the cell index": (lambda: _mutant(LeakyCell), False),
}
#: Label domain checked: three times the mechanisms' bound, so missing clipping shows.
DOMAIN = (-3.0, 3.0)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_verify_rejects_every_mutant_with_a_witness(name: str) -> None:
    mech = MUTANTS[name][0]()
    cert = verify_ldp(mech, n_cells=N_CELLS, label_bound=DOMAIN)
    assert not cert.holds
    assert cert.epsilon_lower > EPSILON  # the witness itself proves the violation
    w = cert.witness
    (cell_a, label_a), (cell_b, label_b) = w.record, w.other
    lp_a = mech.log_prob(w.report, cell_a, label_a, N_CELLS)
    lp_b = mech.log_prob(w.report, cell_b, label_b, N_CELLS)
    if math.isinf(w.log_ratio):
        assert math.isfinite(lp_a) and lp_b == -math.inf
    else:
        assert lp_a - lp_b == pytest.approx(w.log_ratio, rel=1e-9)
    assert "FAILS" in str(cert)


@pytest.mark.parametrize("name", [n for n, (_, gross) in MUTANTS.items() if gross])
def test_audit_refutes_the_gross_mutants(name: str) -> None:
    mech = MUTANTS[name][0]()
    result = audit_ldp(
        mech, n_cells=N_CELLS, label_bound=DOMAIN, key=jax.random.key(17), n_samples=200_000
    )
    assert result.refuted, str(result)


def test_expected_violations() -> None:
    """The certified ratios are what the bugs predict (one flip bit realised with 16 bits)."""
    base = verify_ldp(_mutant(RRLaplaceMechanism), n_cells=N_CELLS, label_bound=DOMAIN)
    cell, label = (dict(base.witness.parts)[k] for k in ("cell", "label"))
    got = {
        name: verify_ldp(make(), n_cells=N_CELLS, label_bound=DOMAIN).epsilon_lower
        for name, (make, _) in MUTANTS.items()
    }
    assert got["halved scale"] == pytest.approx(cell + 2 * label, rel=1e-9)
    assert got["keep probability from eps"] == pytest.approx(2 * EPSILON + label, rel=1e-4)
    assert got["labels not clipped"] == pytest.approx(cell + 3 * label, rel=1e-9)
    assert got["noisy label per cell"] == pytest.approx(cell + N_CELLS * label, rel=1e-9)
    assert got["scale depends on the label"] > 10 * EPSILON
    assert got["leaks the cell index"] == math.inf


# -- a third-party mechanism written against the documented protocol only ----------------------
class OneHotReport(NamedTuple):
    u: jax.Array  # [n, L]
    v: jax.Array  # [n, L]


@attrs.frozen
class LaplaceOneHot:
    """LPCT-style: Laplace(4/eps) on the cell one-hot U and on V = Y U, binary labels
    0/1; any other label is the null record U = V = 0."""

    epsilon: float

    @property
    def scale(self) -> float:
        return 4.0 / self.epsilon

    def _encode(self, cells: Any, labels: Any, n_cells: int) -> tuple[jax.Array, jax.Array]:
        labels = jnp.asarray(labels)
        valid = ((labels == 0) | (labels == 1))[:, None]
        u = (jnp.arange(n_cells)[None, :] == jnp.asarray(cells)[:, None]) & valid
        return u.astype(jnp.float32), (u & (labels == 1)[:, None]).astype(jnp.float32)

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> OneHotReport:
        u, v = self._encode(cells, labels, n_cells)
        k_u, k_v = jax.random.split(jax.random.fold_in(key, first_holder))
        noise = self.scale
        return OneHotReport(
            u + noise * jax.random.laplace(k_u, u.shape),
            v + noise * jax.random.laplace(k_v, v.shape),
        )

    def summarize(self, reports: OneHotReport, n_cells: int) -> dict[str, Any]:
        return {"u": np.asarray(reports.u).sum(axis=0), "v": np.asarray(reports.v).sum(axis=0)}

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        return CellEstimates(count=stats["u"], label_sum=stats["v"], n=n)

    def log_prob(self, report: OneHotReport, cell: int, label: float, n_cells: int) -> float:
        u, v = (np.asarray(a, dtype=np.float64)[0] for a in self._encode([cell], [label], n_cells))
        s = np.concatenate([np.asarray(report.u, np.float64), np.asarray(report.v, np.float64)])
        x = np.concatenate([u, v])
        return float(np.sum(-math.log(2 * self.scale) - np.abs(s - x) / self.scale))

    def report_law(self, n_cells: int) -> ReportLaw:
        channel = LaplaceChannel(self.scale)

        def assemble(outputs: dict[str, list[Any]]) -> OneHotReport:
            return OneHotReport(jnp.asarray(outputs["U"]), jnp.asarray(outputs["V"]))

        return ReportLaw(
            blocks=(
                CellBlock("U", channel, on=lambda y: (float(y in (0, 1)),), off=lambda y: (0.0,)),
                CellBlock("V", channel, on=lambda y: (float(y == 1),), off=lambda y: (0.0,)),
            ),
            labels=(0, 1, -1),
            assemble=assemble,
        )


def test_third_party_mechanism_is_verified_and_audited() -> None:
    mech = LaplaceOneHot(epsilon=1.5)
    assert isinstance(mech, Mechanism)
    cert = verify_ldp(mech, n_cells=6)
    assert cert.holds and cert.exact and cert.pure
    assert cert.epsilon_bound == pytest.approx(1.5, rel=1e-12)
    assert cert.witness.record[0] != cert.witness.other[0]
    # on the reports' values alone, the declared law is not refuted ...
    result = audit_ldp(
        mech,
        n_cells=6,
        labels=[0, 1, -1],
        key=jax.random.key(4),
        n_samples=240_000,
        exact_bits=False,
        holder_pairs=False,
    )
    assert not result.refuted, str(result)
    assert result.epsilon_lower > 0.5  # the audit sees a good part of the budget
    # ... but its textbook float32 Laplace sampler leaks the cell in the reports' exact bits
    # (1 + noise is a multiple of 2^-24, noise alone is not): the certificate trusts the
    # declaration (no Sampling caveat), the exact-bit audit refutes what runs
    bits = audit_ldp(mech, n_cells=6, labels=[0, 1, -1], key=jax.random.key(4), n_samples=20_000)
    assert bits.refuted and bits.epsilon_lower > 2.0, str(bits)


def test_third_party_overclaim_is_caught_by_both() -> None:
    @attrs.frozen
    class Doubled(LaplaceOneHot):
        @property
        def scale(self) -> float:  # calibrated for twice the claim
            return 2.0 / self.epsilon

    mech = Doubled(epsilon=1.0)
    cert = verify_ldp(mech, n_cells=3)
    assert not cert.holds and cert.epsilon_bound == pytest.approx(2.0, rel=1e-12)
    result = audit_ldp(mech, n_cells=3, labels=[0, 1], key=jax.random.key(9), n_samples=400_000)
    assert result.refuted, str(result)
