"""The certificate's fields mean what they say: ``holds``/``pure`` describe the mechanism as
sampled, the sampler's delta does not grow with the number of cells, and real labels are certified
only when the label map's properties are proven (structured map or label levels)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ldptree.accounting import (
    AffineLabelMap,
    LabelBlock,
    ReportLaw,
    binary_channel,
    verify_ldp,
)
from ldptree.mechanisms import (
    LaplaceCellClassMechanism,
    LaplaceCellLabelMechanism,
    RRLaplaceMechanism,
)
from ldptree.protocols import CellEstimates


@attrs.frozen
class _DeclaresDelta(RRLaplaceMechanism):
    """The built-in with an honest ``(epsilon, delta)`` claim covering its float32 sampler."""

    delta: float = 1e-3


def test_holds_describes_the_sampler_not_only_the_declared_law() -> None:
    # at epsilon 50 the float32 Laplace sampler's support differs between labels: delta 1 as
    # sampled, although the declared law is exactly 50-LDP
    cert = verify_ldp(RRLaplaceMechanism(epsilon=50.0, label_bound=1.0), n_cells=4, label_bound=1.0)
    assert cert.declared_holds and not cert.holds and not cert.pure
    assert cert.delta == 1.0
    assert "as implemented FAILS" in str(cert)


def test_a_declared_delta_that_covers_the_sampler_holds_but_is_not_pure() -> None:
    cert = verify_ldp(_DeclaresDelta(epsilon=1.0, label_bound=1.0), n_cells=4, label_bound=1.0)
    assert cert.delta_claimed == 1e-3
    assert cert.declared_holds and cert.holds and not cert.pure
    assert cert.delta is not None and 0.0 < cert.delta <= 1e-3


@pytest.mark.parametrize(
    "make, label_bound",
    [
        (lambda: LaplaceCellClassMechanism(epsilon=1.0, n_classes=3), None),
        (lambda: LaplaceCellLabelMechanism(epsilon=1.0, label_bound=(0.0, 1.0)), (0.0, 1.0)),
    ],
)
def test_sampler_delta_does_not_grow_with_the_number_of_cells(make: Any, label_bound: Any) -> None:
    mech = make()
    small = verify_ldp(mech, n_cells=4, label_bound=label_bound).delta
    large = verify_ldp(mech, n_cells=4096, label_bound=label_bound).delta
    assert small is not None and large is not None
    # only the coordinates whose inputs differ (the two records' own cells) are charged
    assert large == pytest.approx(small, rel=1e-12)
    assert large < 1e-3


# -- real-label maps ------------------------------------------------------------------------------
@attrs.frozen
class _JumpingMap(RRLaplaceMechanism):
    """Declares a label map that jumps by 64 code steps on a narrow label interval that falls
    between the verifier's 9 probe labels: the declared log-ratio there is far above the claim."""

    def report_law(self, n_cells: int) -> ReportLaw:
        base = super().report_law(n_cells)
        affine = base.label_map
        jump = 64.0 * self.label_scale / self.label_step

        def label_map(y: float) -> float:
            return affine(y) + (jump if 0.30 < y < 0.31 else 0.0)

        return attrs.evolve(base, label_map=label_map)


def test_a_callable_label_map_is_not_certified_for_every_real_label() -> None:
    mech = _JumpingMap(epsilon=1.0, label_bound=(0.0, 1.0))
    # the jump lies between probes: the declared law's ratio at y = 0.305 exceeds 64
    law = mech.report_law(2)
    t_jump, t_hi = law.label_coordinate(0.305), law.label_coordinate(1.0)
    beta = mech.label_scale / mech.label_step
    assert abs(t_jump - t_hi) / beta > 63.0
    cert = verify_ldp(mech, n_cells=2, label_bound=(0.0, 1.0))
    assert not cert.declared_holds and not cert.holds
    assert math.isinf(cert.epsilon_bound)
    assert any("arbitrary callable" in note for note in cert.notes)


def test_affine_label_map_is_clip_then_affine() -> None:
    m = AffineLabelMap(-1.0, 3.0, offset=1.0, scale=0.5)
    assert m(-5.0) == -1.0 and m(3.0) == 1.0 and m(10.0) == 1.0 and m(2.0) == 0.5
    with pytest.raises(ValueError, match="lo < hi"):
        AffineLabelMap(1.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        AffineLabelMap(0.0, 1.0, scale=math.inf)


class _BitReport(NamedTuple):
    bit: jax.Array


@attrs.frozen
class _RoundedRR:
    """Real labels in [0, 1] randomly rounded to a level in {0, 1} (P(1) = clip(y)), then the
    level released by randomized response at ``epsilon``: certified through ``label_levels``."""

    epsilon: float

    @property
    def flip(self) -> float:
        return 1.0 / (1.0 + math.exp(self.epsilon))

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> _BitReport:
        labels = jnp.clip(jnp.asarray(labels, jnp.float32), 0.0, 1.0)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(
            first_holder + jnp.arange(labels.shape[0])
        )
        u = jax.vmap(lambda k: jax.random.uniform(k, (2,)))(keys)
        level = u[:, 0] < labels
        return _BitReport(level ^ (u[:, 1] < self.flip))

    def summarize(self, reports: _BitReport, n_cells: int) -> dict[str, Any]:
        return {"ones": jnp.sum(reports.bit)}

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        q = self.flip
        total = (float(stats["ones"]) - q * n) / (1.0 - 2.0 * q)
        return CellEstimates(count=np.asarray([float(n)]), label_sum=np.asarray([total]), n=n)

    def log_prob(self, report: _BitReport, cell: int, label: float, n_cells: int) -> float:
        p1 = min(max(float(label), 0.0), 1.0)
        q = self.flip
        p = p1 * (1.0 - q) + (1.0 - p1) * q
        return math.log(p if bool(report.bit) else 1.0 - p)

    def report_law(self, n_cells: int) -> ReportLaw:
        def assemble(outputs: dict[str, list[Any]]) -> _BitReport:
            return _BitReport(jnp.asarray(bool(outputs["bit"][0])))

        return ReportLaw(
            blocks=(LabelBlock("bit", binary_channel(self.flip), inputs=lambda t: (int(t),)),),
            label_levels=(0.0, 1.0),
            label_map=lambda y: y,  # an arbitrary callable is fine behind label levels
            assemble=assemble,
        )


def test_label_levels_certify_every_real_label() -> None:
    cert = verify_ldp(_RoundedRR(epsilon=1.3), n_cells=3)
    assert cert.declared_holds and cert.holds and cert.pure and cert.exact
    assert cert.epsilon_bound == pytest.approx(1.3, rel=1e-12)
    assert any("random level" in note for note in cert.notes)


def test_label_levels_must_be_finite_reals() -> None:
    block = LabelBlock("bit", binary_channel(0.25), inputs=lambda t: (int(t),))
    with pytest.raises(ValueError, match="label_levels"):
        ReportLaw(blocks=(block,), label_levels=(0.0, math.nan))
    with pytest.raises(ValueError, match="label_levels"):
        ReportLaw(blocks=(block,), label_levels=())
