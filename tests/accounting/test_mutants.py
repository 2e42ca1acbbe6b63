"""Mutation suite: deliberately broken mechanisms must be rejected, with a witness.

Each mutant changes one declaration of :class:`~ldptree.mechanisms.RRLaplaceMechanism` on the
mechanism kit (the sampler and the law are derived from it, so both carry the bug, as a real bug
would).
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
    LaplaceChannel,
    RecordBlock,
    ReportLaw,
    audit_ldp,
    verify_ldp,
)
from ldptree.mechanisms import BitFlip, CellRelease, Geometric, RRLaplaceMechanism
from ldptree.mechanisms._kit import Release
from ldptree.protocols import CellEstimates, Mechanism

EPSILON, RHO, BOUND, N_CELLS = 1.0, 0.5, 1.0, 4


# -- mutants --------------------------------------------------------------------------------------
@attrs.frozen
class HalvedScale(RRLaplaceMechanism):
    """Label noise calibrated to twice the label budget: the label costs 2 (1 - rho) eps."""

    @property
    def label_noise(self) -> Geometric:
        return Geometric(2.0 * self.label_epsilon, span=self.labels().levels)


@attrs.frozen
class KeepFromEpsilon(RRLaplaceMechanism):
    """Each bit flipped at budget eps instead of rho eps / 2: the cell costs 2 eps."""

    @property
    def flips(self) -> BitFlip:
        return BitFlip(self.epsilon, self.precision_bits)


@attrs.frozen
class NoisyLabelPerCell(RRLaplaceMechanism):
    """One noisy label per cell instead of per holder (the reference code's bug)."""

    def releases(self) -> tuple[Release, ...]:
        bits = super().releases()[0]
        levels = np.arange(self.labels().size)
        return (bits, CellRelease("code", self.label_noise, on=levels, off=levels))


@attrs.frozen
class UnboundedLabel(RRLaplaceMechanism):
    """Label levels beyond the noise's calibrated span (labels not clipped to it)."""

    @property
    def label_noise(self) -> Geometric:
        return Geometric(self.label_epsilon, span=self.labels().levels // 2)


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
    "noisy label per cell": (lambda: _mutant(NoisyLabelPerCell), True),
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


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, (_, gross) in MUTANTS.items() if gross])
def test_audit_refutes_the_gross_mutants(name: str) -> None:
    mech = MUTANTS[name][0]()
    result = audit_ldp(
        mech, n_cells=N_CELLS, label_bound=DOMAIN, key=jax.random.key(17), n_samples=200_000
    )
    assert result.refuted, str(result)


def test_expected_violations() -> None:
    """The certified ratios are what the bugs predict."""
    base = verify_ldp(_mutant(RRLaplaceMechanism), n_cells=N_CELLS)
    cell, label = (dict(base.witness.parts)[k] for k in ("bits", "code"))
    got = {
        name: verify_ldp(make(), n_cells=N_CELLS, label_bound=DOMAIN).epsilon_lower
        for name, (make, _) in MUTANTS.items()
    }
    assert got["halved scale"] == pytest.approx(cell + 2 * label, rel=1e-6)
    assert got["keep probability from eps"] == pytest.approx(2 * EPSILON + label, rel=1e-4)
    assert got["noisy label per cell"] == pytest.approx(cell + N_CELLS * label, rel=1e-9)
    assert got["leaks the cell index"] == math.inf


def test_label_levels_beyond_the_calibrated_span_are_refused() -> None:
    """On the kit, a label whose levels exceed the span its noise is calibrated for (the old
    "labels not clipped" bug) cannot even be constructed: tables must stay in the noise's
    inputs."""
    with pytest.raises(ValueError, match="code"):
        _mutant(UnboundedLabel)


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


@pytest.mark.slow
def test_third_party_mechanism_is_verified_and_audited() -> None:
    mech = LaplaceOneHot(epsilon=1.5)
    assert isinstance(mech, Mechanism)
    cert = verify_ldp(mech, n_cells=6)
    assert cert.law_holds and cert.exact and cert.delta == 0.0
    # its privatize is hand-written: the law is certified, the sampler never called pure
    assert not cert.holds and not cert.pure
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


@pytest.mark.slow
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
