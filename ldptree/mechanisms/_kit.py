"""The mechanism kit: declare a mechanism's releases once; everything else is derived from them.

A mechanism built on the kit (a subclass of :class:`KitMechanism`) declares

* how a label enters (:mod:`ldptree.mechanisms._labels`): :class:`RealLabels` (clipped to a
  declared bound, then rounded at random to one of ``levels + 1`` evenly spaced levels,
  unbiasedly) or :class:`ClassLabels` (class codes, with undeclared codes mapped to a null level).
  Either way the holder's label becomes an integer *level* ``t`` from a finite set;
* its *releases*, each an instance of a release kind (:class:`~ldptree.mechanisms._release.Release`)
  that carries its own exact sampler, law, sums, likelihood and report format:

  - :class:`CellRelease`: ``width`` coordinates per cell; the record's own cell reads ``on[t]``,
    every other cell ``off[t]``, each through one exact noise;
  - :class:`LabelRelease`: ``width`` coordinates reading ``inputs[t]`` (a noisy label);
  - :class:`IndexRelease`: one integer, the cell (and label) index through k-ary response;
  - :class:`~ldptree.mechanisms.HadamardRelease`: one integer, a uniform Hadamard row and the
    randomized-response bit of the cell's column in it;
  - :class:`~ldptree.mechanisms.SubsetRelease`: a k-subset of the cells (and label indices);
  - :class:`~ldptree.mechanisms.LocalHashRelease`: a random hash of the cell and k-ary response
    on its value (optimized local hashing);

* and its debiasing (``debias``), the affine map from summed statistics to cell estimates.

The kit composes the releases generically. It derives ``privatize`` (jitted, vectorised over
holders, holder ``h``'s randomness from ``(key, h)`` alone, so chunking never changes a report:
each release reads its share of the holder's words in declaration order, the label's rounding
the last word), ``summarize`` and the fused ``privatize_summarize`` (exact integer sums: every
release's own sums and the cross sums of every cell release with every label release),
``max_summary_rows``, padding to shape buckets, ``log_prob`` (exact, including the mixture over
rounded levels) and ``report_law`` for the accountant (each release's block). The constants the
sampler reads are the ones the report law declares, so the law the accountant certifies is the
law that is sampled; enumerating the label levels certifies every real label
(:mod:`ldptree.mechanisms._labels`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple, Protocol

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._buckets import MIN_ROWS, bucket
from ldptree._jax_cache import kernel
from ldptree._memo import memoised
from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import check_int, to_epsilon, to_label_bound
from ldptree._xp import as_float, namespace
from ldptree.accounting._law import Block, ReportLaw
from ldptree.accounting._spend import PrivacySpend
from ldptree.mechanisms._hadamard import HadamardRelease
from ldptree.mechanisms._labels import (
    MAX_LEVELS,
    NULL_LABEL,
    ClassLabels,
    Labels,
    RealLabels,
    _to_levels,
    _to_n_classes,
    encode,
    encode_levels,
    label_levels,
)
from ldptree.mechanisms._random import holder_words, key_words
from ldptree.mechanisms._records import check_first_holder, check_records
from ldptree.mechanisms._release import Kernel, Release, summary_block
from ldptree.mechanisms._releases import (
    CellRelease,
    IndexRelease,
    LabelRelease,
    cell_indicator,
    label_level,
)
from ldptree.protocols import CellEstimates

__all__ = [
    "MAX_LEVELS",
    "NULL_LABEL",
    "CellRelease",
    "ClassLabels",
    "ClassMechanism",
    "HadamardRelease",
    "IndexRelease",
    "Indicator",
    "KitMechanism",
    "LabelRelease",
    "RealLabels",
    "RegressionMechanism",
    "Release",
    "_to_levels",
    "_to_n_classes",
    "cell_indicator",
    "debias_indicators",
    "encode_levels",
    "label_level",
    "label_levels",
]

_INT32_LIMIT = 2**31 - 1


class Indicator(Protocol):
    """A per-cell indicator's exact mean: ``offset + slope 1{j = j_i}``."""

    @property
    def offset(self) -> float: ...

    @property
    def slope(self) -> float: ...


def debias_indicators(
    noise: Indicator,
    counts: Any,
    n: int,
    *,
    cross: Any = None,
    total: Any = None,
    lo: float = 0.0,
    step: float = 1.0,
) -> CellEstimates:
    """Debiased counts (and label sums) from a per-cell indicator release.

    Each holder's indicator of cell ``j`` has mean ``offset + slope 1{j = j_i}`` (``noise.offset``
    and ``noise.slope``, exact for the realised law), so ``c^_j = (C_j - n offset) / slope``. With a
    label release of unbiased level codes (total ``S = sum_i code_i``, cross sums
    ``S_j = sum_i 1_ij code_i``), ``sum_{i in j} t_i`` is estimated by ``(S_j - offset S) / slope``
    and the label sum ``sum_{i in j} (lo + step t_i)`` by
    ``lo c^_j + step (S_j - offset S) / slope``. Without ``cross`` the label sums are zero.

    Pure array arithmetic (:mod:`ldptree._xp`): float64 NumPy on concrete sums, ``jax.numpy``
    on traced ones, so it runs under ``jax.jit``/``jax.vmap``.
    """
    xp = namespace(counts, cross, total)
    offset, slope = noise.offset, noise.slope
    centred = as_float(counts, xp) - n * offset
    if cross is None:
        return CellEstimates(count=centred / slope, label_sum=xp.zeros_like(centred), n=int(n))
    levels = as_float(cross, xp) - offset * as_float(total, xp).reshape(())
    label_sum = (lo * centred + step * levels) / slope
    return CellEstimates(count=centred / slope, label_sum=label_sum, n=int(n))


# -- the derived mechanism ------------------------------------------------------------------------
class _Spec(NamedTuple):
    """The static (shape-fixing) description of a kit mechanism's kernel."""

    labels: tuple[Any, ...]
    kernels: tuple[Kernel, ...]
    width: int  # padded number of cells
    block: int  # rows per exact float32 block of the summaries
    cross: tuple[tuple[int, int], ...]  # (cell release, label release) index pairs


class KitMechanism:
    """Base class of the kit's mechanisms (module docstring).

    A subclass is an immutable attrs class with an ``epsilon`` field and implements
    :meth:`labels` (``RealLabels`` or ``ClassLabels``), :meth:`releases` and :meth:`debias`. It
    may set ``report_type`` (a ``NamedTuple`` whose fields are the release names; default a dict)
    and override :meth:`budget_parts` (the claimed split of ``epsilon`` between releases).
    """

    epsilon: float
    report_type: ClassVar[Any] = None

    # -- to implement ----------------------------------------------------------------------------
    def labels(self) -> Labels:
        raise NotImplementedError

    def releases(self) -> tuple[Release, ...]:
        raise NotImplementedError

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        raise NotImplementedError

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        """``(release name, claimed epsilon)`` pairs; default: the whole budget, unsplit."""
        return ()

    # -- derived: constants ------------------------------------------------------------------------
    @property
    def spend(self) -> PrivacySpend:
        """The claimed privacy map (the accountant's certificate is what estimators charge)."""
        return PrivacySpend(epsilon=float(self.epsilon), parts=self.budget_parts())

    def _checked_releases(self) -> tuple[Release, ...]:
        return memoised(_releases_of, self)

    def _build_releases(self) -> tuple[Release, ...]:
        releases = tuple(self.releases())
        labels = self.labels()
        names = [getattr(r, "name", None) for r in releases]
        if not releases or len(set(names)) != len(names):
            raise ValueError(f"releases must be non-empty with distinct names, got {names}")
        for r in releases:
            if not isinstance(r, Release) or r.role not in ("cell", "label"):
                raise TypeError(
                    f"releases must be Release instances with role 'cell' or 'label', got {r!r}"
                )
            r.check(labels)
        return releases

    @staticmethod
    def _cross(releases: Sequence[Release]) -> tuple[tuple[int, int], ...]:
        cells = [i for i, r in enumerate(releases) if r.role == "cell"]
        labels = [i for i, r in enumerate(releases) if r.role == "label"]
        return tuple((i, k) for i in cells for k in labels)

    @property
    def max_summary_rows(self) -> int:
        """Largest report batch whose integer sums (and cross sums) fit in int32."""
        releases = self._checked_releases()
        bounds = [max(r.abs_bound for r in releases)]
        bounds += [releases[i].abs_bound * releases[k].abs_bound for i, k in self._cross(releases)]
        return _INT32_LIMIT // max(bounds)

    def _spec(self, n_cells: int) -> tuple[_Spec, tuple[Any, ...]]:
        return memoised(_spec_of, self, n_cells)

    def _build_spec(self, n_cells: int) -> tuple[_Spec, tuple[Any, ...]]:
        releases = self._checked_releases()
        labels = self.labels()
        cross = self._cross(releases)
        width = bucket(int(n_cells))
        kernels = tuple(Kernel(type(r), r.static(n_cells, width, labels)) for r in releases)
        # The summary block is chosen from the kernels' static bounds (shape buckets), so nearby
        # budgets share one compiled program.
        bounds = [k.kind.sum_bound(k.static) for k in kernels]
        spec = _Spec(
            labels=labels.static(),
            kernels=kernels,
            width=width,
            block=summary_block(bounds, cross),
            cross=cross,
        )
        consts = (
            labels.constants(),
            tuple(r.constants(n_cells, labels) for r in releases),
        )
        return spec, consts

    # -- derived: holder side ----------------------------------------------------------------------
    def _args(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        first_holder: Any,
        rows: int | None = None,
        n_holders: Any = None,
    ) -> tuple[int, tuple[Any, ...]]:
        cells, labels = check_records(cells, labels, n_cells, integer_labels=self.labels().integer)
        records = int(cells.shape[0])
        n = records if n_holders is None else check_int(n_holders, "n_holders", minimum=0)
        if n > records:
            raise ValueError(f"n_holders must be <= the number of records ({records}), got {n}")
        check_first_holder(first_holder, n)
        pad = (bucket(records, MIN_ROWS) if rows is None else rows) - records
        if pad < 0:
            raise ValueError(f"rows={rows} is below the {records} records")
        padded: tuple[Any, Any]
        if isinstance(cells, jax.core.Tracer) or isinstance(labels, jax.core.Tracer):
            padded = (jnp.pad(cells.astype(jnp.int32), (0, pad)), jnp.pad(labels, (0, pad)))
        else:
            # host padding: a NumPy pad is free, a jnp pad is a device dispatch
            padded = (
                np.pad(np.asarray(cells, dtype=np.int32), (0, pad)),
                np.pad(np.asarray(labels), (0, pad)),
            )
        return n, (key_words(key), *padded, np.uint32(first_holder))

    def _trimmed(self, spec: _Spec, outs: Sequence[Any], n: int, n_cells: int) -> Any:
        pairs = zip(spec.kernels, outs, strict=True)
        return self._assemble([k.kind.trim(k.static, o, n, n_cells) for k, o in pairs])

    def privatize(
        self, key: PRNGKey, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> Any:
        """Reports of holders ``first_holder, first_holder + 1, ...`` (one per record)."""
        spec, consts = self._spec(n_cells)
        n, args = self._args(key, cells, labels, n_cells, first_holder)
        return self._trimmed(spec, _privatize(spec, consts, *args), n, n_cells)

    def words_per_holder(self, n_cells: int) -> int:
        """``W``: the 32-bit random words one holder's report consumes over ``n_cells`` cells.

        Cell releases draw words for the padded cell count (a shape bucket of ``n_cells``), so
        ``W`` can exceed what the real cells need; the extra words are drawn and discarded.
        """
        spec, _ = self._spec(check_int(n_cells, "n_cells", minimum=1))
        counts, label_words = _word_counts(spec)
        return sum(counts) + label_words

    def privatize_words(self, words: Any, cells: Any, labels: Any, n_cells: int) -> Any:
        """Reports of ``n`` holders from caller-supplied randomness ``words`` (``uint32[n, W]``,
        ``W =`` :meth:`words_per_holder`), row ``i`` being holder ``i``'s only randomness.

        The sampling is the one :meth:`privatize` runs, which feeds holder ``h`` the Threefry
        words ``holder_words(key, h)``; passing those words here gives the same reports bit for
        bit. A deployment passes words from the operating system's CSPRNG instead
        (:func:`ldptree.protocol.holder_report`). Uniform, independent words are what the
        certificate assumes: the law of each report is then exactly the certified law.
        """
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        spec, consts = self._spec(n_cells)
        cells, labels = check_records(cells, labels, n_cells, integer_labels=self.labels().integer)
        n = int(cells.shape[0])
        width = self.words_per_holder(n_cells)
        arr = np.asarray(words)
        if arr.dtype != np.uint32 or arr.shape != (n, width):
            raise ValueError(
                f"words must be a uint32 array of shape ({n}, {width}) (one row of "
                f"words_per_holder(n_cells) words per holder), got {arr.dtype} {arr.shape}"
            )
        pad = bucket(n, MIN_ROWS) - n
        outs = _privatize_words(
            spec,
            consts,
            np.pad(arr, ((0, pad), (0, 0))),
            np.pad(np.asarray(cells, dtype=np.int32), (0, pad)),
            np.pad(np.asarray(labels), (0, pad)),
        )
        return self._trimmed(spec, outs, n, n_cells)

    def report_fields(self, n_cells: int) -> tuple[tuple[str, tuple[int, ...], int, int], ...]:
        """``(name, shape, lowest, highest)`` of every release in one holder's report: the shape
        of its array in :meth:`privatize`'s report without the holder axis (``(n_cells,)`` or
        ``(n_cells, width)`` for a cell release, ``()`` or ``(width,)`` for a label release,
        ``()`` for an index release) and the range of integers its noise can output (``{0, 1}``
        for flips, ``[-margin, span + margin]`` for geometric noise, ``[0, k)`` for k-ary
        response). A report outside these is impossible under the mechanism."""
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        return tuple((r.name, *r.field(n_cells)) for r in self._checked_releases())

    def _assemble(self, arrays: Sequence[Any]) -> Any:
        names = self._names()
        if self.report_type is None:
            return dict(zip(names, arrays, strict=True))
        return self.report_type(*arrays)

    def _report_arrays(self, reports: Any) -> list[Any]:
        names = self._names()
        if isinstance(reports, dict):
            return [reports[name] for name in names]
        return [getattr(reports, name) for name in names]

    def privatize_summarize(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        *,
        first_holder: int = 0,
        n_holders: int | None = None,
    ) -> dict[str, Any]:
        """``summarize(privatize(...))`` in one jitted kernel; at most ``max_summary_rows``.

        ``n_holders`` (default: every record) says that only the first ``n_holders`` records are
        holders ``first_holder, ..., first_holder + n_holders - 1``; the records after them are
        padding (any valid cells and labels), which report nothing and add nothing to the sums.
        A caller pads a short batch to the length of batches already summarised so that one
        compiled kernel serves both: the sums equal those of the first ``n_holders`` records
        alone, bit for bit (each holder's words depend only on the key and its index).
        """
        spec, consts, args = self.summary_inputs(
            key, cells, labels, n_cells, first_holder, n_holders=n_holders
        )
        return self.summary_stats(spec, _privatize_summarize(spec, consts, *args), n_cells)

    def prepare_summary(self, key: PRNGKey, cells: Any, labels: Any, n_cells: int) -> None:
        """Compile (or load) the kernel :meth:`privatize_summarize` runs on records of these
        shapes, without running it (:class:`~ldptree.protocols.PreparesSummary`)."""
        spec, consts, args = self.summary_inputs(key, cells, labels, n_cells, 0, n_holders=0)
        _privatize_summarize.prepare(spec, consts, *args)

    def summary_inputs(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        first_holder: Any,
        rows: int | None = None,
        *,
        n_holders: int | None = None,
    ) -> tuple[_Spec, tuple[Any, ...], tuple[Any, ...]]:
        """The checked inputs of the fused kernel :func:`fused_sums`: its static description,
        the mechanism's constants and ``(key words, cells, labels, first_holder, n_valid)`` with
        the records padded to ``rows`` (default: a power-of-two row bucket; padded holders
        report nothing; ``n_valid`` is ``n_holders``, default every record). ``ValueError``
        beyond ``max_summary_rows``."""
        spec, consts = self._spec(n_cells)
        if rows is not None and rows > spec.block and rows % spec.block:
            rows = None  # the exact float32 blocks of the cross sums need whole blocks
        n, args = self._args(key, cells, labels, n_cells, first_holder, rows, n_holders)
        if n > self.max_summary_rows:
            raise ValueError(
                f"{n} holders exceed max_summary_rows={self.max_summary_rows}; use smaller chunks"
            )
        return spec, consts, (*args, np.int32(n))

    @property
    def summary_kernel(self) -> Callable[..., tuple[jax.Array, ...]]:
        """The kernel :meth:`summary_inputs` feeds, :func:`fused_sums`: one function for every kit
        mechanism, so releases of one description share a vectorised call
        (:class:`~ldptree.protocols.FusedSummary`)."""
        return fused_sums

    # -- derived: curator side ---------------------------------------------------------------------
    def summarize(self, reports: Any, n_cells: int) -> dict[str, Any]:
        """Exact integer sums of a batch of reports (see :meth:`stat_names`)."""
        spec, _ = self._spec(n_cells)
        arrays = self._report_arrays(reports)
        n = int(np.shape(arrays[0])[0])
        if n > self.max_summary_rows:
            raise ValueError(
                f"a batch of {n} reports exceeds max_summary_rows={self.max_summary_rows}; "
                "split it (SumAggregator.update does)"
            )
        rows = bucket(n, MIN_ROWS)
        padded = []
        for name, k, arr in zip(self._names(), spec.kernels, arrays, strict=True):
            expected = k.kind.report_shape(k.static, n, n_cells)
            if np.shape(arr) != expected:
                raise ValueError(f"reports.{name} must have shape {expected}")
            padded.append(k.kind.pad(k.static, arr, n, rows, n_cells))
        return self.summary_stats(spec, _summarize(spec, tuple(padded), np.int32(n)), n_cells)

    def _names(self) -> list[str]:
        return [r.name for r in self._checked_releases()]

    def stat_names(self) -> list[str]:
        """Keys of :meth:`summarize`: each release's name (its own sums: ``[L]``/``[L, w]`` for
        cell-marking releases, a scalar/``[w]`` for label releases) and ``"cell*label"`` for the
        cross sums ``sum_i out_cell[i, j] out_label[i]`` of every cell release with every label
        release.
        """
        names = self._names()
        cross = self._cross(self._checked_releases())
        return names + [f"{names[i]}*{names[k]}" for i, k in cross]

    def summary_stats(self, spec: _Spec, sums: Any, n_cells: int) -> dict[str, Any]:
        """The named statistics (:meth:`stat_names`) of the kernels' raw sums."""
        host = sums if isinstance(sums[0], jax.core.Tracer) else jax.device_get(sums)
        names = self._names()
        out: dict[str, Any] = {}
        for name, k, s in zip(names, spec.kernels, host[: len(names)], strict=False):
            out[name] = k.kind.stat(k.static, s, n_cells)
        for (i, j), s in zip(spec.cross, host[len(names) :], strict=True):
            k = spec.kernels[i]
            label_width = int(np.shape(host[j])[0])  # a label release sums one number per column
            out[f"{names[i]}*{names[j]}"] = k.kind.cross_stat(k.static, s, n_cells, label_width)
        return out

    def simulate_summary(
        self, key: PRNGKey, cells: Any, labels: Any, n_cells: int
    ) -> dict[str, FloatArray]:
        """Simulation only: the summed reports of all holders drawn in aggregate, ``O(L)`` draws.

        Every coordinate's sum is the sum of its true inputs plus the sum of ``n`` noises; for the
        two-sided geometric law ``Z = G_1 - G_2`` with ``G`` geometric on ``{0, 1, ...}``
        (``P(G = k) = (1 - r) r^k``, ``r = e^{-gamma}``), so the noise sum is the difference of two
        negative binomial ``NB(n, 1 - r)`` draws: exact in law for the unrounded, unclamped
        geometric noise (the realised law differs from it by its clamp mass, below ``e^{-40}``, and
        by the 2^-64 rounding of its probabilities). Real labels are rounded to levels per holder as
        in the protocol. The input is the whole private sample, so this is never the protocol.
        Only for mechanisms whose releases all use :class:`Geometric` noise and need no cross sums.
        """
        releases = self._aggregate_releases()
        label_spec = self.labels()
        cells_j, labels_j = check_records(cells, labels, n_cells, integer_labels=label_spec.integer)
        if int(np.shape(cells_j)[0]) == 0:
            raise ValueError("cells must hold at least one record")
        rng = np.random.default_rng(np.asarray(key_words(key)).tolist())
        joint = _joint(cells_j, label_spec.host_levels(labels_j, rng), n_cells, label_spec.size)
        return _aggregate(releases, joint, rng)

    def record_counts(self, cells: Any, labels: Any, n_cells: int) -> np.ndarray[Any, Any] | None:
        """Simulation only: ``int64[n_cells, levels]``, how many records hold each (cell, label
        level), or ``None`` when the levels are drawn at random (real labels), so that the
        records themselves must be kept (:class:`~ldptree.protocols.SimulatesFromCounts`)."""
        label_spec = self.labels()
        if not label_spec.integer:
            return None
        self._aggregate_releases()
        cells_j, labels_j = check_records(cells, labels, n_cells, integer_labels=True)
        levels = label_spec.host_levels(labels_j, np.random.default_rng(0))  # rng unused
        return _joint(cells_j, levels, n_cells, label_spec.size)

    def simulate_counts(self, key: PRNGKey, counts: Any, n_cells: int) -> dict[str, FloatArray]:
        """Simulation only: :meth:`simulate_summary` of records with these :meth:`record_counts`,
        the same draws bit for bit, in memory that does not grow with the number of holders."""
        releases = self._aggregate_releases()
        joint = np.asarray(counts)
        if joint.shape != (n_cells, self.labels().size) or joint.dtype.kind not in "iu":
            raise ValueError(
                f"counts must be integer counts of shape ({n_cells}, {self.labels().size}), got "
                f"{joint.dtype} {joint.shape}"
            )
        if int(joint.sum()) < 1 or int(joint.min()) < 0:
            raise ValueError("counts must be non-negative and count at least one record")
        rng = np.random.default_rng(np.asarray(key_words(key)).tolist())
        return _aggregate(releases, joint.astype(np.int64), rng)

    def _aggregate_releases(self) -> tuple[Release, ...]:
        releases = self._checked_releases()
        if self._cross(releases) or not all(r.can_aggregate for r in releases):
            raise TypeError(
                f"{type(self).__name__} cannot draw aggregate reports: the aggregate simulation "
                "needs Geometric noise on every release and no cross sums"
            )
        return tuple(releases)

    # -- derived: likelihood -----------------------------------------------------------------------
    def log_prob(self, report: Any, cell: int, label: Any, n_cells: int) -> float:
        """``log P(report | cell, label)`` of one holder's report, exact in float64.

        For a real label this is the mixture over the two levels its rounding can reach.
        """
        releases = self._checked_releases()
        arrays = [np.asarray(a) for a in self._report_arrays(report)]
        terms = []
        for t, weight in self.labels().weights(label):
            total = 0.0
            for r, out in zip(releases, arrays, strict=True):
                total += r.report_log_prob(out, int(cell), t, n_cells)
            terms.append(math.log(weight) + total)
        return float(np.logaddexp.reduce(terms)) if terms else -math.inf

    def report_law(self, n_cells: int) -> ReportLaw:
        """The report's law for :func:`~ldptree.accounting.verify_ldp`, read off the same noises
        and tables that :meth:`privatize` samples (module docstring)."""
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        labels = self.labels()
        releases = self._checked_releases()
        blocks: list[Block] = [r.block(n_cells, labels) for r in releases]

        def assemble(outputs: dict[str, list[Any]]) -> Any:
            arrays = []
            for r in releases:
                arr = r.assemble(list(outputs[r.name]), n_cells)
                # jnp.asarray's arrays (same dtype and weak type) by a plain transfer: no jitted
                # conversion program to trace and look up in a fresh process
                arrays.append(jax.device_put(arr if arr.ndim else int(arr)))
            return self._assemble(arrays)

        def disassemble(reports: Any) -> dict[str, Any]:
            arrays = self._report_arrays(reports)
            return {
                r.name: r.disassemble(a, n_cells) for r, a in zip(releases, arrays, strict=True)
            }

        if isinstance(labels, RealLabels):
            # real labels enter only through a random level: enumerating the levels certifies
            # every real label (ldptree.mechanisms._labels)
            return ReportLaw(
                blocks=tuple(blocks),
                label_levels=labels.domain(),
                assemble=assemble,
                disassemble=disassemble,
            )
        return ReportLaw(
            blocks=tuple(blocks), labels=labels.domain(), assemble=assemble, disassemble=disassemble
        )


@attrs.frozen
class RegressionMechanism(KitMechanism):
    """Base of a regression kit mechanism: the fields ``epsilon`` and ``label_bound`` (first, in
    this order; a subclass adds its own after them), and releases checked when it is
    constructed."""

    epsilon: float = attrs.field(converter=to_epsilon)
    label_bound: tuple[float, float] = attrs.field(converter=to_label_bound)

    def __attrs_post_init__(self) -> None:
        self._checked_releases()  # fail at construction, naming what is wrong


@attrs.frozen
class ClassMechanism(KitMechanism):
    """Base of a classification kit mechanism: the fields ``epsilon`` and ``n_classes`` (first,
    in this order; a subclass adds its own after them), class labels, and releases checked when
    it is constructed."""

    epsilon: float = attrs.field(converter=to_epsilon)
    n_classes: int = attrs.field(default=2, converter=_to_n_classes)

    def __attrs_post_init__(self) -> None:
        self._checked_releases()  # fail at construction, naming what is wrong

    def labels(self) -> ClassLabels:
        return ClassLabels(self.n_classes)


# A mechanism is immutable, so its checked releases and its kernel's description are functions of
# its value: computed once per (mechanism, n_cells), not on every call (a grid of small fits
# spent a fifth of its time rebuilding them). An unhashable user mechanism is not memoised
# (:func:`~ldptree._memo.memoised`).
@functools.lru_cache(maxsize=1024)
def _releases_of(mechanism: KitMechanism) -> tuple[Release, ...]:
    return mechanism._build_releases()


@functools.lru_cache(maxsize=1024)
def _spec_of(mechanism: KitMechanism, n_cells: int) -> tuple[_Spec, tuple[Any, ...]]:
    return mechanism._build_spec(n_cells)


# -- kernels ------------------------------------------------------------------------------------
def _word_counts(spec: _Spec) -> tuple[list[int], int]:
    """Words per holder of every release, and of the label rounding (0 or 1, the last word)."""
    counts = [k.kind.words(k.static) for k in spec.kernels]
    return counts, 1 if spec.labels[0] == "real" else 0


def _outputs(
    spec: _Spec,
    consts: Any,
    key_data: jax.Array,
    cells: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
) -> tuple[jax.Array, ...]:
    counts, label_words = _word_counts(spec)
    words = holder_words(key_data, first_holder, cells.shape[0], sum(counts) + label_words)
    return _outputs_from_words(spec, consts, words, cells, labels)


def _outputs_from_words(
    spec: _Spec, consts: Any, words: jax.Array, cells: jax.Array, labels: jax.Array
) -> tuple[jax.Array, ...]:
    """Every release's outputs from the holders' ``uint32[n, W]`` words (the one sampling path of
    :meth:`KitMechanism.privatize` and :meth:`KitMechanism.privatize_words`)."""
    label_consts, release_consts = consts
    counts, label_words = _word_counts(spec)
    t = encode(spec.labels, label_consts, labels, words[:, -1] if label_words else None)
    outs = []
    start = 0
    for k, c, count in zip(spec.kernels, release_consts, counts, strict=True):
        outs.append(k.kind.sample(k.static, c, words[:, start : start + count], cells, t))
        start += count
    return tuple(outs)


def _sums(spec: _Spec, outs: Sequence[jax.Array], valid: jax.Array) -> tuple[jax.Array, ...]:
    """Exact int32 sums: every release's own sums, then the cross sums of ``spec.cross``.

    ``valid`` (``bool[rows]``) marks real holders. Every partial sum stays below ``2^31`` for at
    most ``max_summary_rows`` holders; float32 products are summed in blocks of ``spec.block``
    rows, within which they are integers below ``2^24`` (exact).
    """
    sums = [k.kind.sums(k.static, out, valid) for k, out in zip(spec.kernels, outs, strict=True)]
    for i, j in spec.cross:
        k = spec.kernels[i]
        rhs = outs[j].astype(jnp.int32)
        sums.append(k.kind.cross_sums(k.static, outs[i], rhs, valid, spec.block))
    return tuple(sums)


def _joint(cells: Any, levels: Any, n_cells: int, size: int) -> np.ndarray[Any, Any]:
    """How many records hold each (cell, label level): ``int64[n_cells, size]``."""
    index = np.asarray(cells, dtype=np.int64) * size + np.asarray(levels, dtype=np.int64)
    return np.bincount(index, minlength=n_cells * size).reshape(n_cells, size)


def _aggregate(
    releases: tuple[Release, ...], joint: np.ndarray[Any, Any], rng: np.random.Generator
) -> dict[str, FloatArray]:
    totals, n = joint.sum(axis=0), int(joint.sum())
    return {r.name: r.aggregate(joint, totals, rng, n) for r in releases}


@kernel(static_argnums=(0,))
def _privatize(spec: _Spec, consts: Any, *args: Any) -> tuple[jax.Array, ...]:
    return _outputs(spec, consts, *args)


@kernel(static_argnums=(0,))
def _privatize_words(
    spec: _Spec, consts: Any, words: jax.Array, cells: jax.Array, labels: jax.Array
) -> tuple[jax.Array, ...]:
    return _outputs_from_words(spec, consts, words, cells, labels)


@kernel(static_argnums=(0,))
def _summarize(
    spec: _Spec, outs: tuple[jax.Array, ...], n_valid: jax.Array
) -> tuple[jax.Array, ...]:
    valid = jnp.arange(outs[0].shape[0]) < n_valid
    return _sums(spec, outs, valid)


def fused_sums(spec: _Spec, consts: Any, *args: Any) -> tuple[jax.Array, ...]:
    """The summed reports of one padded batch of holders: ``args = (key words, cells, labels,
    first_holder, n_valid)`` (:func:`blocked_sums` runs it block by block;
    :func:`ldptree.mechanisms.summarize_many` vectorises it over releases)."""
    *inputs, n_valid = args
    outs = _outputs(spec, consts, *inputs)
    valid = jnp.arange(outs[0].shape[0]) < n_valid  # padding holders report nothing
    masked = tuple(jnp.where(valid[:, None], o, jnp.zeros_like(o)) for o in outs)
    return _sums(spec, masked, valid)


#: Most rows per step of the fused kernel's loop (a power of two): a block's intermediates (its
#: holders' words and one-hot cell rows) stay in cache, and rows that only pad a batch to an
#: already compiled shape cost nothing beyond the block they end in.
_SUMMARY_BLOCK = 1 << 13


def blocked_sums(
    summary_kernel: Callable[..., tuple[jax.Array, ...]],
    spec: Any,
    most: int,
    consts: Any,
    key_data: jax.Array,
    cells: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
    n_valid: jax.Array,
) -> tuple[jax.Array, ...]:
    """``summary_kernel`` (:func:`fused_sums` for a kit mechanism) block by block, at most
    ``most`` rows per block, in a loop over the blocks that hold holders only (the sums are exact
    integer sums, so blocking changes no bit; the loop traces the block once and starts from the
    exact additive identity: ``-0.0`` for floats, so that ``-0.0 + x`` is ``x`` bit for bit,
    signed zeros included, and ``0`` for integers). The traced body of
    :meth:`KitMechanism.privatize_summarize` and of a round resident on a device."""
    rows = int(cells.shape[0])
    block = min(rows & -rows, most)  # the largest power of two dividing rows, capped

    def part(start: jax.Array) -> tuple[jax.Array, ...]:
        # rows start .. start + block - 1: holders first_holder + start, ...
        c = jax.lax.dynamic_slice_in_dim(cells, start, block)
        lab = jax.lax.dynamic_slice_in_dim(labels, start, block)
        first = first_holder + start.astype(jnp.uint32)
        return tuple(summary_kernel(spec, consts, key_data, c, lab, first, n_valid - start))

    def step(i: jax.Array, acc: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        return tuple(a + b for a, b in zip(acc, part(i * block), strict=True))

    shapes = jax.eval_shape(part, jnp.int32(0))
    zero = tuple(
        jnp.full(x.shape, -0.0 if jnp.issubdtype(x.dtype, jnp.floating) else 0, x.dtype)
        for x in shapes
    )
    blocks = jnp.maximum((n_valid + block - 1) // block, 1)
    total: tuple[jax.Array, ...] = jax.lax.fori_loop(0, blocks, step, zero)
    return total


@kernel(static_argnums=(0,))
def _privatize_summarize(spec: _Spec, consts: Any, *args: Any) -> tuple[jax.Array, ...]:
    return blocked_sums(fused_sums, spec, _SUMMARY_BLOCK, consts, *args)
