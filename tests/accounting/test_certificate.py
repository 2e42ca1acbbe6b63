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
from toy_mechanisms import ToyLaplace

from ldptree.accounting import (
    AffineInput,
    AffineLabelMap,
    LabelBlock,
    ReportLaw,
    binary_channel,
    verify_ldp,
)
from ldptree.accounting._law import evaluate_inputs
from ldptree.protocols import CellEstimates


def _toy_delta(tau: float) -> float:
    """Worst record pair of ToyLaplace: two cell coordinates at D = eps / 4 and the label at
    D = eps / 2 (eps = 1), each charged tau (1 + e^D)."""
    return tau * (2.0 * (1.0 + math.exp(0.25)) + (1.0 + math.exp(0.5)))


def test_an_exact_law_is_certified_but_a_hand_written_sampler_is_not_proven() -> None:
    cert = verify_ldp(ToyLaplace(epsilon=1.0), n_cells=4, label_bound=(-1.0, 2.0))
    assert cert.declared_holds and cert.law_holds and cert.exact and cert.delta == 0.0
    assert cert.epsilon_bound == pytest.approx(1.0, rel=1e-12)
    assert any("every real label" in note for note in cert.notes)
    # its privatize is hand-written (float Laplace): never "pure as implemented"
    assert not cert.holds and not cert.pure and cert.provenance.kind == "hand-written"
    assert "NOT PROVEN" in str(cert)


def test_holds_describes_the_sampler_not_only_the_declared_law() -> None:
    # the declared law is exactly 1-LDP, but the sampler only approximates it: a pure claim fails
    cert = verify_ldp(ToyLaplace(epsilon=1.0, tau=1e-4), n_cells=4, label_bound=(0.0, 1.0))
    assert cert.declared_holds and not cert.holds and not cert.pure
    assert cert.delta == pytest.approx(_toy_delta(1e-4), rel=1e-12)
    assert "as implemented FAILS" in str(cert) and "declared law: holds" in str(cert)
    # a sampler far from its law: delta 1 (the built-ins' float32 Laplace at epsilon 50 was such)
    assert verify_ldp(ToyLaplace(epsilon=1.0, tau=0.3), n_cells=4, label_bound=1.0).delta == 1.0


def test_a_declared_delta_that_covers_the_sampler_holds_but_is_not_pure() -> None:
    mech = ToyLaplace(epsilon=1.0, tau=1e-5, delta=1e-3)
    cert = verify_ldp(mech, n_cells=4, label_bound=(0.0, 1.0))
    assert cert.delta_claimed == 1e-3
    assert cert.declared_holds and cert.law_holds and not cert.pure
    too_small = verify_ldp(attrs.evolve(mech, delta=1e-6), n_cells=4, label_bound=(0.0, 1.0))
    assert too_small.declared_holds and not too_small.law_holds and not too_small.holds


@pytest.mark.parametrize("real", [True, False])
def test_sampler_delta_does_not_grow_with_the_number_of_cells(real: bool) -> None:
    # only the coordinates whose inputs differ (the two records' own cells, the label) are charged
    mech = ToyLaplace(epsilon=1.0, tau=1e-6)
    bound = (0.0, 1.0) if real else None
    law_labels = None if real else [0.0, 1.0]
    small = _verify(mech, 4, bound, law_labels).delta
    large = _verify(mech, 4096, bound, law_labels).delta
    assert small is not None and large is not None
    assert large == pytest.approx(small, rel=1e-12)
    # real labels charge the label coordinate of same-label pairs too (2 tau; see _sampled_caveats)
    assert large == pytest.approx(_toy_delta(1e-6), rel=1e-12)


def _verify(mech: Any, n_cells: int, bound: Any, levels: Any) -> Any:
    if levels is None:
        return verify_ldp(mech, n_cells=n_cells, label_bound=bound)
    return verify_ldp(_Levels(mech, tuple(levels)), n_cells=n_cells)


@attrs.frozen
class _Levels:
    """``inner`` declared through label levels (its labels enter as the levels themselves)."""

    inner: Any
    levels: tuple[float, ...]

    @property
    def epsilon(self) -> float:
        return float(self.inner.epsilon)

    def privatize(self, *args: Any, **kw: Any) -> Any:
        return self.inner.privatize(*args, **kw)

    def summarize(self, reports: Any, n_cells: int) -> Any:
        return self.inner.summarize(reports, n_cells)

    def debias(self, stats: Any, n: int) -> Any:
        return self.inner.debias(stats, n)

    def log_prob(self, report: Any, cell: int, label: Any, n_cells: int) -> float:
        return float(self.inner.log_prob(report, cell, label, n_cells))

    def report_law(self, n_cells: int) -> ReportLaw:
        return attrs.evolve(self.inner.report_law(n_cells), label_levels=self.levels)


# -- real-label maps ------------------------------------------------------------------------------
def _jumping(y: float) -> float:
    """Clip to [0, 1], but jump by 32 on (0.30, 0.31), between the verifier's 9 probe labels."""
    t = min(max(y, 0.0), 1.0)
    return t + (32.0 if 0.30 < y < 0.31 else 0.0)


def test_a_callable_label_map_is_not_certified_for_every_real_label() -> None:
    mech = ToyLaplace(epsilon=1.0, label_map=_jumping)
    # the declared law's log-ratio between labels 0.305 and 0 is 32.305 / (2 / eps) > 16 >> 1:
    # the probes never see it, and the verifier used to certify this map (bound 1.0)
    report = mech.report_law(2).assemble({"cells": [0.0, 0.0], "label": [32.305]})  # type: ignore[misc]
    ratio = mech.log_prob(report, 0, 0.305, 2) - mech.log_prob(report, 0, 0.0, 2)
    assert ratio == pytest.approx(32.305 / 2.0, rel=1e-6)
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
    assert cert.declared_holds and cert.law_holds and cert.delta == 0.0 and cert.exact
    assert not cert.pure  # hand-written: the law is certified, the sampler not proven
    assert cert.epsilon_bound == pytest.approx(1.3, rel=1e-12)
    assert any("random level" in note for note in cert.notes)


def test_label_levels_must_be_finite_reals() -> None:
    block = LabelBlock("bit", binary_channel(0.25), inputs=lambda t: (int(t),))
    with pytest.raises(ValueError, match="label_levels"):
        ReportLaw(blocks=(block,), label_levels=(0.0, math.nan))
    with pytest.raises(ValueError, match="label_levels"):
        ReportLaw(blocks=(block,), label_levels=())


@attrs.frozen
class _JumpingInput(ToyLaplace):
    """An affine label map, but the label block's input jumps by 32 on a narrow interval of t."""

    def report_law(self, n_cells: int) -> ReportLaw:
        law = super().report_law(n_cells)
        cells, label = law.blocks
        jumping = attrs.evolve(label, inputs=lambda t: (t + (32.0 if 0.30 < t < 0.31 else 0.0),))
        return attrs.evolve(law, blocks=(cells, jumping))


def test_block_inputs_must_be_affine_for_every_label_not_only_the_probes() -> None:
    cert = verify_ldp(_JumpingInput(epsilon=1.0), n_cells=2, label_bound=(0.0, 1.0))
    assert not cert.declared_holds and math.isinf(cert.epsilon_bound)
    assert any("Python function of the label" in note for note in cert.notes)


def _evasive(t: Any) -> tuple[Any, ...]:
    """Affine for the verifier's symbolic probe, a spike for real labels: the old proof ran the
    function on a symbolic t and trusted whatever came back without a TypeError."""
    try:
        spike = 32.0 if 0.30 < t < 0.31 else 0.0
    except TypeError:  # the probe cannot be compared: answer as an affine map would
        spike = 0.0
    return (t + spike,)


def test_a_label_function_that_evades_a_probe_is_refused() -> None:
    @attrs.frozen
    class Evasive(ToyLaplace):
        def report_law(self, n_cells: int) -> ReportLaw:
            law = super().report_law(n_cells)
            cells, label = law.blocks
            return attrs.evolve(law, blocks=(cells, attrs.evolve(label, inputs=_evasive)))

    cert = verify_ldp(Evasive(epsilon=1.0), n_cells=2, label_bound=(0.0, 1.0))
    assert not cert.declared_holds and math.isinf(cert.epsilon_bound)


def test_inputs_declared_as_data_are_affine_for_every_label() -> None:
    block = LabelBlock(
        "b",
        binary_channel(0.25),
        inputs=(AffineInput(2.0, -1.0), AffineInput(-0.25, 0.75), 5),
    )
    assert evaluate_inputs(block.inputs, 1.0) == (1.0, 0.5, 5)
    with pytest.raises(TypeError, match="AffineInput"):
        LabelBlock("c", binary_channel(0.25), inputs=("t",))
    with pytest.raises(ValueError, match="finite"):
        AffineInput(math.inf, 0.0)
