"""Wrong mechanisms, written the way a researcher might write them, for the mutation suite.

Kit-built mutants carry their bug in a declaration, so the sampler and the law both have it.
Hand-written mutants keep an honest-looking report law and get ``privatize`` (or a part of the
sampling path) wrong; most rewrite the kit's own reports (:class:`_Rewritten`) or feed it
randomness of the wrong holder (:class:`_Remapped`), so that the bug is the only difference.
Law mutants describe a law that is not a law, or that the verifier must not trust.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree.accounting import (
    AffineLabelMap,
    CellBlock,
    Divergences,
    IndexBlock,
    LabelBlock,
    LaplaceChannel,
    ReportLaw,
)
from ldptree.mechanisms import (
    BitFlip,
    Geometric,
    KitMechanism,
    KRRLaplaceMechanism,
    LaplaceCellClassMechanism,
    RRLaplaceMechanism,
    RRLaplaceReport,
    matrix_noise,
)
from ldptree.mechanisms._kit import (
    CellRelease,
    IndexRelease,
    RealLabels,
    Release,
    cell_indicator,
    debias_indicators,
    label_level,
)
from ldptree.mechanisms._random import holder_words, key_words
from ldptree.protocols import CellEstimates

EPSILON, BOUND, N_CELLS = 1.0, (-1.0, 1.0), 5


# -- kit-built: the bug is in a declaration ------------------------------------------------------
@attrs.frozen
class HalvedLabelScale(RRLaplaceMechanism):
    """Label noise calibrated to twice the label budget."""

    @property
    def label_noise(self) -> Geometric:
        return Geometric(2.0 * self.label_epsilon, span=self.labels().levels)


@attrs.frozen
class KeepFromEpsilon(RRLaplaceMechanism):
    """Each bit flipped at the whole budget instead of ``rho eps / 2``."""

    @property
    def flips(self) -> BitFlip:
        return BitFlip(self.epsilon, self.precision_bits)


@attrs.frozen
class NoisyLabelPerCell(RRLaplaceMechanism):
    """One noisy label per cell instead of per holder."""

    def releases(self) -> tuple[Release, ...]:
        bits = super().releases()[0]
        levels = np.arange(self.labels().size)
        return (bits, CellRelease("code", self.label_noise, on=levels, off=levels))


@attrs.frozen
class SharpMatrix(RRLaplaceMechanism):
    """The label through a matrix noise whose columns' ratio is ``e^3``, not ``e^{(1-rho) eps}``."""

    @property
    def label_noise(self) -> Any:
        size = self.labels().size
        low = math.exp(-3.0)
        p = np.full((size, size), low)
        np.fill_diagonal(p, 1.0)
        return matrix_noise(p / p.sum(axis=1, keepdims=True), 3.0)


@attrs.frozen
class IndexAtTwice(KRRLaplaceMechanism):
    """The cell's k-ary response at twice the cell budget."""

    def releases(self) -> tuple[Release, ...]:
        return (IndexRelease("cell", 2.0 * self.cell_epsilon), self.label_release())


class MutableKit(KitMechanism):
    """A kit mechanism in a plain, mutable class (hashed by identity): its bit budget can change
    after a fit. A certificate memoised by identity would outlive the change."""

    def __init__(self, epsilon: float, bit_epsilon: float) -> None:
        self.epsilon = epsilon
        self.bit_epsilon = bit_epsilon

    def labels(self) -> RealLabels:
        return RealLabels(BOUND, 2)

    def releases(self) -> tuple[Release, ...]:
        labels = self.labels()
        return (
            cell_indicator("bits", BitFlip(self.bit_epsilon), labels),
            label_level("code", Geometric(self.epsilon / 2.0, span=labels.levels), labels),
        )

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        labels = self.labels()
        return debias_indicators(
            BitFlip(self.bit_epsilon),
            stats["bits"],
            n,
            cross=stats["bits*code"],
            total=stats["code"],
            lo=labels.bound[0],
            step=labels.step,
        )


# -- hand-written sampling paths ---------------------------------------------------------------
def _truth(mech: RRLaplaceMechanism, cells: Any, labels: Any, n_cells: int) -> RRLaplaceReport:
    """The record itself: the one-hot cell and the label's nearest level, noiseless."""
    lab = mech.labels()
    lo, hi = lab.bound
    level = jnp.round((jnp.clip(jnp.asarray(labels, jnp.float32), lo, hi) - lo) / lab.step)
    one_hot = jnp.arange(n_cells)[None, :] == jnp.asarray(cells)[:, None]
    return RRLaplaceReport(one_hot, level.astype(jnp.int32))


@attrs.frozen
class _Rewritten(RRLaplaceMechanism):
    """The kit's reports, rewritten by :meth:`rewrite` (a hand-written ``privatize``)."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> Any:
        report = super().privatize(key, cells, labels, n_cells, first_holder=first_holder)
        truth = _truth(self, cells, labels, n_cells)
        index = first_holder + np.arange(len(np.asarray(cells)), dtype=np.int64)
        return self.rewrite(report, truth, np.asarray(cells), np.asarray(labels), index, n_cells)

    def rewrite(
        self, report: Any, truth: Any, cells: Any, labels: Any, index: Any, n_cells: int
    ) -> Any:
        raise NotImplementedError


def _where(mask: Any, truth: RRLaplaceReport, report: RRLaplaceReport) -> RRLaplaceReport:
    mask = jnp.asarray(mask)
    return RRLaplaceReport(
        jnp.where(mask[:, None], truth.bits, report.bits), jnp.where(mask, truth.code, report.code)
    )


@attrs.frozen
class TrueCell(_Rewritten):
    """Releases the true one-hot cell (no flips) under the honest law."""

    def rewrite(self, report: Any, truth: Any, *_: Any) -> Any:
        return RRLaplaceReport(truth.bits, report.code)


@attrs.frozen
class SharedUniform(_Rewritten):
    """One uniform decides every cell bit's flip: each bit is flipped with the right
    probability, but all together, so the report is the one-hot vector or its complement."""

    def rewrite(self, report: Any, truth: Any, *_: Any) -> Any:
        flipped = report.bits[:, :1] ^ truth.bits[:, :1]
        return RRLaplaceReport(truth.bits ^ flipped, report.code)


@attrs.frozen
class MiddleCellLeak(_Rewritten):
    """Holders in the middle cell release their record in the clear."""

    def rewrite(self, report: Any, truth: Any, cells: Any, labels: Any, index: Any, n: int) -> Any:
        return _where(cells == n // 2, truth, report)


@attrs.frozen
class NoiselessFarLabels(_Rewritten):
    """Labels above ``hi + 5`` are released without noise (an outlier path left unclipped)."""

    def rewrite(self, report: Any, truth: Any, cells: Any, labels: Any, *_: Any) -> Any:
        far = labels > self.label_bound[1] + 5.0
        return RRLaplaceReport(report.bits, jnp.where(far, truth.code, report.code))


@attrs.frozen
class LabelSpike(_Rewritten):
    """Labels in a narrow interval between two levels are released without noise."""

    def rewrite(self, report: Any, truth: Any, cells: Any, labels: Any, *_: Any) -> Any:
        spike = (labels > -0.30) & (labels < -0.20)
        return RRLaplaceReport(report.bits, jnp.where(spike, truth.code, report.code))


@attrs.frozen
class DtypeLeak(_Rewritten):
    """A batch of labels above the centre is released as int16 codes, else int32: one holder's
    report type reveals its label's side."""

    def rewrite(self, report: Any, truth: Any, cells: Any, labels: Any, *_: Any) -> Any:
        dtype = jnp.int16 if bool(np.all(labels > 0.0)) else jnp.int32
        return RRLaplaceReport(report.bits, report.code.astype(dtype))


@attrs.frozen
class FirstOfCall(_Rewritten):
    """The first holder of every call releases its record (an off-by-one in a loop)."""

    def rewrite(self, report: Any, truth: Any, cells: Any, *_: Any) -> Any:
        return _where(np.arange(len(cells)) == 0, truth, report)


@attrs.frozen
class EveryThousandth(_Rewritten):
    """Holders whose index is a multiple of 1000 release their record (0.1% of holders)."""

    def rewrite(self, report: Any, truth: Any, cells: Any, labels: Any, index: Any, _: int) -> Any:
        return _where(index % 1000 == 0, truth, report)


@attrs.frozen
class _Remapped(RRLaplaceMechanism):
    """The kit's sampling, fed the random words of holder :meth:`source` instead of its own."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> Any:
        n = len(np.asarray(cells))
        width = self.words_per_holder(n_cells)
        source = self.source(first_holder + np.arange(n, dtype=np.int64))
        data = key_words(key)
        words = jax.vmap(lambda h: holder_words(data, h, 1, width)[0])(
            jnp.asarray(source.astype(np.uint32))
        )
        return self.privatize_words(np.asarray(words), cells, labels, n_cells)

    def source(self, index: Any) -> Any:
        raise NotImplementedError


@attrs.frozen
class StrideShared(_Remapped):
    """Holders ``h`` and ``h + 64`` share randomness (a batch index reused for two rows)."""

    def source(self, index: Any) -> Any:
        return np.where((index // 64) % 2 == 1, index - 64, index)


@attrs.frozen
class Int32Clamped(_Remapped):
    """Holder indices stored as int32 and clamped at zero: every holder from ``2^31`` on uses
    holder 0's randomness."""

    def source(self, index: Any) -> Any:
        return np.where(index >= 2**31, 0, index)


@attrs.frozen
class IndexMod31(_Remapped):
    """Holder indices taken modulo ``2^31``: holder ``2^31 + i`` repeats holder ``i``."""

    def source(self, index: Any) -> Any:
        return index % 2**31


@attrs.frozen
class TamperedSpec(RRLaplaceMechanism):
    """Overrides the kit's internal sampler description: its flip threshold is an eighth of
    the one its law declares (the bits are flipped far less often)."""

    def _spec(self, n_cells: int) -> Any:
        # constants: (label encoding, one tuple per release); the cell release's is
        # (flip thresholds, on-table, off-table)
        spec, (labels, releases) = super()._spec(n_cells)
        thresholds, *tables = releases[0]
        lazy = tuple(np.uint32(int(c) // 8) for c in thresholds)
        return spec, (labels, ((lazy, *tables), *releases[1:]))


@attrs.frozen
class LazyFlip(BitFlip):
    """A user's bit flip whose sampler constants flip an eighth as often as its law says."""

    def constants(self) -> tuple[Any, ...]:
        return tuple(np.uint32(int(c) // 8) for c in super().constants())


@attrs.frozen
class ForeignNoise(RRLaplaceMechanism):
    """A kit mechanism assembled from a user's noise class (:class:`LazyFlip`)."""

    @property
    def flips(self) -> BitFlip:
        return LazyFlip(self.cell_epsilon / 2.0, self.precision_bits)


@attrs.frozen
class UndeclaredClassLeak(LaplaceCellClassMechanism):
    """An undeclared class code (the null record) is released with the cell in the clear."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> Any:
        report = super().privatize(key, cells, labels, n_cells, first_holder=first_holder)
        lab = np.asarray(labels)
        null = (lab < 0) | (lab >= self.n_classes)
        one_hot = jnp.arange(n_cells)[None, :] == jnp.asarray(cells)[:, None]
        cell = jnp.where(jnp.asarray(null)[:, None], one_hot.astype(report.cell.dtype), report.cell)
        return report._replace(cell=cell)


# -- laws that are not laws, or must not be trusted -------------------------------------------
@attrs.frozen
class UnnormalisedIndex(KRRLaplaceMechanism):
    """Declares its k-ary response with probabilities that do not sum to one (keep and other
    both far below ``1 / k``): the declared ratio is small, the sampled one is not."""

    def report_law(self, n_cells: int) -> ReportLaw:
        law = super().report_law(n_cells)
        index = next(b for b in law.blocks if isinstance(b, IndexBlock))
        k = n_cells * index.per_cell
        small = math.log(0.1 / k)
        fake = attrs.evolve(index, log_keep=small + 0.1, log_other=small, counts=None)
        return attrs.evolve(law, blocks=tuple(fake if b is index else b for b in law.blocks))


class ToyReport(NamedTuple):
    cells: jax.Array
    label: jax.Array


@attrs.frozen
class _ToyLaplace:
    """Laplace on the one-hot cell (scale ``4 / eps``) and on the label (scale ``2 / eps``),
    hand-written with a float sampler of ``dtype``."""

    epsilon: float
    dtype: Any = jnp.float32

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> ToyReport:
        cells = jnp.asarray(cells)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(
            jnp.asarray(first_holder + np.arange(cells.shape[0]), jnp.uint32)
        )
        noise = jax.vmap(lambda k: jax.random.laplace(k, (n_cells + 1,), dtype=self.dtype))(keys)
        t = jnp.clip(jnp.asarray(labels, self.dtype), 0.0, 1.0)
        one_hot = jax.nn.one_hot(cells, n_cells, dtype=self.dtype)
        return ToyReport(
            one_hot + (4.0 / self.epsilon) * noise[:, :n_cells],
            t + (2.0 / self.epsilon) * noise[:, n_cells],
        )

    def summarize(self, reports: ToyReport, n_cells: int) -> dict[str, Any]:
        return {"cells": jnp.sum(reports.cells, axis=0)}

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        count = np.asarray(stats["cells"], np.float64)
        return CellEstimates(count, np.zeros_like(count), n)

    def log_prob(self, report: ToyReport, cell: int, label: float, n_cells: int) -> float:
        def laplace(x: Any, mu: Any, b: float) -> float:
            return float(np.sum(-math.log(2.0 * b) - np.abs(np.asarray(x, np.float64) - mu) / b))

        mu = (np.arange(n_cells) == cell).astype(np.float64)
        t = min(max(float(label), 0.0), 1.0)
        return laplace(report.cells, mu, 4.0 / self.epsilon) + laplace(
            report.label, t, 2.0 / self.epsilon
        )

    def label_inputs(self) -> Any:
        from ldptree.accounting import AffineInput

        return (AffineInput(),)

    def report_law(self, n_cells: int) -> ReportLaw:
        def assemble(outputs: dict[str, list[Any]]) -> ToyReport:
            return ToyReport(jnp.asarray(outputs["cells"]), jnp.asarray(outputs["label"][0]))

        return ReportLaw(
            blocks=(
                CellBlock("cells", LaplaceChannel(4.0 / self.epsilon), on=(1.0,), off=(0.0,)),
                LabelBlock("label", LaplaceChannel(2.0 / self.epsilon), inputs=self.label_inputs()),
            ),
            label_map=AffineLabelMap(0.0, 1.0),
            assemble=assemble,
        )


@attrs.frozen
class FloatLaplace(_ToyLaplace):
    """Textbook floating-point Laplace declared as the exact continuous law (``sampling=None``):
    ``y + b * laplace()`` in float32, whose set of outputs depends on ``y``."""


def _evasive(t: Any) -> tuple[Any, ...]:
    try:
        spike = 32.0 if 0.30 < t < 0.31 else 0.0
    except TypeError:  # a symbolic probe cannot be compared: answer as an affine map would
        spike = 0.0
    return (t + spike,)


@attrs.frozen
class EvasiveLabelMap(_ToyLaplace):
    """Its label input is a Python function that answers a symbolic probe affinely and jumps by
    32 on ``(0.30, 0.31)`` for real labels."""

    def label_inputs(self) -> Any:
        return _evasive


@attrs.frozen
class SilentChannel:
    """A user's channel object that reports every divergence as zero."""

    inner: Any

    @property
    def convex_in_location(self) -> bool:
        return False

    @property
    def sampling(self) -> Any:
        return None

    def divergences(self, inputs: Sequence[Any]) -> Divergences:
        n = len(inputs)
        return Divergences(np.zeros((n, n)), tuple((0,) * n for _ in range(n)), exact=True)

    def log_prob(self, output: Any, value: Any) -> float:
        return float(self.inner.log_prob(output, value))


@attrs.frozen
class CustomChannel(RRLaplaceMechanism):
    """Declares its cell bits through a channel object of its own that reports no divergence."""

    def report_law(self, n_cells: int) -> ReportLaw:
        law = super().report_law(n_cells)
        bits, code = law.blocks
        quiet = attrs.evolve(bits, channel=SilentChannel(bits.channel))  # type: ignore[arg-type]
        return attrs.evolve(law, blocks=(quiet, code))


def rr(cls: type, **kw: Any) -> Any:
    """The mutant ``cls`` at the suite's budget and label bound (``rho = 1/2``)."""
    return cls(epsilon=EPSILON, label_bound=BOUND, budget_split=0.5, **kw)
