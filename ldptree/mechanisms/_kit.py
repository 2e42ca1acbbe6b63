"""The mechanism kit: declare a mechanism's releases once; everything else is derived from them.

A mechanism built on the kit (a subclass of :class:`KitMechanism`) declares

* how a label enters: :class:`RealLabels` (clipped to a declared bound, then rounded at random to
  one of ``levels + 1`` evenly spaced levels, unbiasedly) or :class:`ClassLabels` (class codes, with
  undeclared codes mapped to a null level). Either way the holder's label becomes an integer
  *level* ``t`` from a finite set;
* its *releases*, each one exact noise (:mod:`ldptree.mechanisms._noise`, or any finite channel
  as a :class:`~ldptree.mechanisms.MatrixNoise`) applied independently to every coordinate of an
  integer input vector read from a table indexed by ``t``:

  - :class:`CellRelease`: ``width`` coordinates per cell; the record's own cell reads ``on[t]``,
    every other cell ``off[t]`` (randomized response on the one-hot vector, Laplace-like noise on
    ``U`` and ``V = Y U``);
  - :class:`LabelRelease`: ``width`` coordinates reading ``inputs[t]`` (a noisy label);
  - :class:`IndexRelease`: one integer, the cell (and label) index through k-ary response;
  - :class:`~ldptree.mechanisms._hadamard.HadamardRelease`: one integer, a uniform Hadamard row
    and the randomized-response bit of the cell's column in it;

* and its debiasing (``debias``), the affine map from summed statistics to cell estimates.

The kit derives ``privatize`` (jitted, vectorised over holders, holder ``h``'s randomness from
``(key, h)`` alone, so chunking never changes a report), ``summarize`` and the fused
``privatize_summarize`` (exact integer sums: per-cell sums of every cell release and their cross
sums with every label release), ``max_summary_rows``, padding to shape buckets, ``log_prob``
(exact, including the mixture over rounded levels) and ``report_law`` for the accountant. The
tables and noises that the sampler reads are the ones the report law declares, so the law the
accountant certifies is the law that is sampled.

Why levels make the certificate cover every real label: the report's law given a real label ``y``
is a mixture ``sum_t w_t(y) P(. | t)`` over levels. For any two labels and any report ``s``,
``P(s | y) <= max_t P(s | t)`` and ``P(s | y') >= min_t P(s | t)``, so the log-likelihood ratio of
two real labels never exceeds the largest ratio between two levels; enumerating the finitely many
levels is therefore a proof for all real labels, whatever the rounding probabilities are (they are
float32 arithmetic and affect only unbiasedness, never privacy).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple

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
from ldptree.accounting._law import CellBlock, IndexBlock, LabelBlock, RecordBlock, ReportLaw
from ldptree.accounting._spend import PrivacySpend
from ldptree.mechanisms._channel import MatrixNoise
from ldptree.mechanisms._exact import PRECISION_BITS
from ldptree.mechanisms._hadamard import (
    HadamardNoise,
    HadamardRelease,
    hadamard_sums,
    sample_hadamard,
)
from ldptree.mechanisms._noise import BitFlip, Geometric, KaryResponse, sample_noise
from ldptree.mechanisms._random import holder_words, key_words, unit_halfopen
from ldptree.mechanisms._records import check_first_holder, check_records
from ldptree.protocols import CellEstimates

__all__ = [
    "CellRelease",
    "ClassLabels",
    "HadamardRelease",
    "IndexRelease",
    "KitMechanism",
    "LabelRelease",
    "RealLabels",
    "cell_indicator",
    "debias_indicators",
    "label_level",
    "label_levels",
]

_INT32_LIMIT = 2**31 - 1
_FLOAT32_EXACT = 2**24
#: The label the report law uses for "any class code outside 0..K-1" (the null level).
NULL_LABEL = -1

Noise = BitFlip | Geometric | MatrixNoise


# -- how labels enter ---------------------------------------------------------------------------
def _to_levels(value: Any) -> int:
    levels = check_int(value, "levels", minimum=1)
    if levels % 2 and levels != 1:
        raise ValueError(f"levels must be 1 or even (the centre is a level), got {levels}")
    return levels


@attrs.frozen
class RealLabels:
    """Real labels, clipped to ``bound = (lo, hi)`` and rounded at random to a level.

    Level ``t in {0, ..., levels}`` stands for the value ``lo + t step`` with
    ``step = (hi - lo) / levels``; a label at ``u = (clip(y) - lo) / step`` goes to ``floor(u)`` or
    ``floor(u) + 1`` with probabilities ``1 - frac(u)`` and ``frac(u)``, so
    ``E[lo + t step] = clip(y)`` (up to float32 rounding of ``u``) and the rounding adds variance at
    most ``step^2 / 4``. ``levels`` is even so that the centre ``(lo + hi) / 2`` is a level, or
    ``1``: the two ends of the bound only (a two-point label such as Duchi et al.'s, where the
    centre enters as the fair mixture of the ends and no release needs a centre level).
    """

    bound: tuple[float, float] = attrs.field(converter=to_label_bound)
    levels: int = attrs.field(converter=_to_levels)

    integer: ClassVar[bool] = False
    words: ClassVar[int] = 1

    @property
    def size(self) -> int:
        return self.levels + 1

    @property
    def step(self) -> float:
        return (self.bound[1] - self.bound[0]) / self.levels

    @property
    def center(self) -> float:
        return (self.bound[0] + self.bound[1]) / 2.0

    def domain(self) -> tuple[float, ...]:
        """Representative labels of the levels, ``lo + t step`` (the accountant's label domain)."""
        return tuple(self.value(t) for t in range(self.size))

    def value(self, t: int) -> float:
        return self.bound[0] + t * self.step if t < self.levels else self.bound[1]

    def index(self, label: Any) -> int:
        """The level of a representative label (exact for :meth:`domain` values)."""
        u = (min(max(float(label), self.bound[0]), self.bound[1]) - self.bound[0]) / self.step
        return min(max(round(u), 0), self.levels)

    def weights(self, label: Any) -> list[tuple[int, float]]:
        """``[(level, probability)]`` of the rounding of one label (float64)."""
        lo, hi = self.bound
        u = (min(max(float(label), lo), hi) - lo) / self.step
        base = min(math.floor(u), self.levels)
        frac = u - base
        if frac <= 0.0 or base == self.levels:
            return [(base, 1.0)]
        return [(base, 1.0 - frac), (base + 1, frac)]

    def static(self) -> tuple[Any, ...]:
        return ("real",)

    def constants(self) -> tuple[Any, ...]:
        lo, hi = self.bound
        return (np.float32(lo), np.float32(hi), np.float32(self.step), np.float32(self.levels))

    def decode(self, level: Any) -> FloatArray:
        """Values ``lo + level step`` of (noisy) level codes, as float64."""
        out: FloatArray = self.bound[0] + self.step * np.asarray(level, dtype=np.float64)
        return out


def _to_n_classes(value: Any) -> int:
    return check_int(value, "n_classes", minimum=2)


@attrs.frozen
class ClassLabels:
    """Class codes ``0..K-1``; any other code becomes the null level ``K`` (``NULL_LABEL``)."""

    n_classes: int = attrs.field(converter=_to_n_classes)

    integer: ClassVar[bool] = True
    words: ClassVar[int] = 0

    @property
    def size(self) -> int:
        return self.n_classes + 1

    def domain(self) -> tuple[int, ...]:
        return (*range(self.n_classes), NULL_LABEL)

    def index(self, label: Any) -> int:
        code = int(label)
        return code if 0 <= code < self.n_classes else self.n_classes

    def weights(self, label: Any) -> list[tuple[int, float]]:
        return [(self.index(label), 1.0)]

    def static(self) -> tuple[Any, ...]:
        return ("class",)

    def constants(self) -> tuple[Any, ...]:
        return (np.int32(self.n_classes),)


Labels = RealLabels | ClassLabels


# -- releases -----------------------------------------------------------------------------------
def _table(value: Any) -> np.ndarray[Any, np.dtype[np.int32]]:
    arr = np.asarray(value)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] < 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"a release table must be an integer array [levels, width], got {arr!r}")
    out = np.ascontiguousarray(arr, dtype=np.int32)
    out.setflags(write=False)
    return out


def _optional_table(value: Any) -> np.ndarray[Any, np.dtype[np.int32]] | None:
    return None if value is None else _table(value)


def _check_noise(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, BitFlip | Geometric | MatrixNoise):
        raise TypeError(
            f"{attribute.name} must be a BitFlip, Geometric or MatrixNoise noise, got {value!r}"
        )


@attrs.frozen(eq=False)
class CellRelease:
    """``width`` coordinates per cell: the own cell reads ``on[t]``, other cells ``off[t]``.

    Tables are integer arrays ``[levels, width]`` (a 1-d array is one column).
    """

    name: str
    noise: Noise = attrs.field(validator=_check_noise)
    on: np.ndarray[Any, np.dtype[np.int32]] = attrs.field(converter=_table)
    off: np.ndarray[Any, np.dtype[np.int32]] = attrs.field(converter=_table)

    @property
    def width(self) -> int:
        return int(self.on.shape[1])

    def tables(self) -> tuple[np.ndarray[Any, Any], ...]:
        return (self.on, self.off)


@attrs.frozen(eq=False)
class LabelRelease:
    """``width`` coordinates reading ``inputs[t]`` (``[levels, width]``): the label only."""

    name: str
    noise: Noise = attrs.field(validator=_check_noise)
    inputs: np.ndarray[Any, np.dtype[np.int32]] = attrs.field(converter=_table)

    @property
    def width(self) -> int:
        return int(self.inputs.shape[1])

    def tables(self) -> tuple[np.ndarray[Any, Any], ...]:
        return (self.inputs,)


@attrs.frozen(eq=False)
class IndexRelease:
    """One coordinate: the index ``cell * per_cell + label_index[t]`` through k-ary randomized
    response (:class:`KaryResponse`) over all ``k = n_cells * per_cell`` values, with budget
    ``epsilon``. The report is one integer per holder (``O(log L)`` bits instead of ``L``); its
    summary is the per-value count ``[L]`` (``[L, per_cell]``), and its cross sums with label
    releases are per-value sums of their outputs.
    """

    name: str
    epsilon: float = attrs.field(converter=to_epsilon)
    label_index: np.ndarray[Any, np.dtype[np.int32]] | None = attrs.field(
        default=None, converter=_optional_table
    )

    @property
    def width(self) -> int:
        """Values per cell, ``per_cell``."""
        return 1 if self.label_index is None else int(self.label_index.max()) + 1

    def noise(self, n_cells: int) -> KaryResponse:
        """The k-ary response over ``n_cells * per_cell`` values."""
        return KaryResponse(self.epsilon, int(n_cells) * self.width)

    def tables(self, size: int) -> tuple[np.ndarray[Any, Any], ...]:
        if self.label_index is None:
            return (np.zeros((size, 1), dtype=np.int32),)
        return (self.label_index,)


Release = CellRelease | LabelRelease | IndexRelease | HadamardRelease


def _noise_of(r: Release, n_cells: int) -> Noise | KaryResponse | HadamardNoise:
    return r.noise(n_cells) if isinstance(r, IndexRelease | HadamardRelease) else r.noise


def _tables_of(r: Release, size: int) -> tuple[np.ndarray[Any, Any], ...]:
    if isinstance(r, HadamardRelease):
        return ()
    return r.tables(size) if isinstance(r, IndexRelease) else r.tables()


def _abs_bound(r: Release) -> int:
    """Largest absolute value a release's summary adds per report (index releases add counts,
    Hadamard releases signs)."""
    return 1 if isinstance(r, IndexRelease | HadamardRelease) else r.noise.max_abs_output


def debias_indicators(
    noise: BitFlip | KaryResponse,
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


#: Largest number of label levels :func:`label_levels` chooses.
MAX_LEVELS = 64


def label_levels(epsilon: float) -> int:
    """Levels for a real label released with budget ``epsilon``: ``2 ceil(2 epsilon)`` in
    ``[2, MAX_LEVELS]``. Rounding to levels adds variance at most ``step^2 / 4``, below 1% of the
    geometric noise's ``~ 2 (levels / epsilon)^2 step^2`` while ``epsilon <= MAX_LEVELS / 2``."""
    return min(MAX_LEVELS, max(2, 2 * math.ceil(2.0 * float(epsilon))))


def cell_indicator(name: str, noise: Noise, labels: Labels) -> CellRelease:
    """The one-hot cell vector: input 1 in the record's cell and 0 elsewhere, whatever the label."""
    return CellRelease(
        name, noise, on=np.ones(labels.size, np.int32), off=np.zeros(labels.size, np.int32)
    )


def label_level(name: str, noise: Noise, labels: Labels) -> LabelRelease:
    """One coordinate carrying the label's level ``t`` itself (``noise`` spans the levels)."""
    return LabelRelease(name, noise, inputs=np.arange(labels.size))


# -- the derived mechanism ------------------------------------------------------------------------
class _Spec(NamedTuple):
    """The static (shape-fixing) description of a kit mechanism's kernel."""

    labels: tuple[Any, ...]
    kinds: tuple[str, ...]
    noises: tuple[tuple[Any, ...], ...]
    widths: tuple[int, ...]
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
        names = [r.name for r in releases]
        if not releases or len(set(names)) != len(names):
            raise ValueError(f"releases must be non-empty with distinct names, got {names}")
        for r in releases:
            if isinstance(r, HadamardRelease):
                continue
            if isinstance(r, IndexRelease):
                table = _tables_of(r, labels.size)[0]
                if table.shape[0] != labels.size or table.min() < 0:
                    raise ValueError(
                        f"release {r.name!r}: label_index needs one non-negative entry per label "
                        f"level ({labels.size})"
                    )
                continue
            domain = set(r.noise.inputs)
            for table in r.tables():
                if table.shape[0] != labels.size:
                    raise ValueError(
                        f"release {r.name!r}: tables need one row per label level "
                        f"({labels.size}), got {table.shape[0]}"
                    )
                if not set(np.unique(table).tolist()) <= domain:
                    raise ValueError(
                        f"release {r.name!r}: table values must be noise inputs {sorted(domain)}"
                    )
        return releases

    def _cross(self, releases: Sequence[Release]) -> tuple[tuple[int, int], ...]:
        cells = [
            i
            for i, r in enumerate(releases)
            if isinstance(r, CellRelease | IndexRelease | HadamardRelease)
        ]
        labels = [i for i, r in enumerate(releases) if isinstance(r, LabelRelease)]
        return tuple((i, k) for i in cells for k in labels)

    def _bound(self, releases: Sequence[Release], pair: tuple[int, int] | None) -> int:
        if pair is None:
            return max(_abs_bound(r) for r in releases)
        return _abs_bound(releases[pair[0]]) * _abs_bound(releases[pair[1]])

    @property
    def max_summary_rows(self) -> int:
        """Largest report batch whose integer sums (and cross sums) fit in int32."""
        releases = self._checked_releases()
        bounds = [self._bound(releases, None)]
        bounds += [self._bound(releases, p) for p in self._cross(releases)]
        return _INT32_LIMIT // max(bounds)

    def _spec(self, n_cells: int) -> tuple[_Spec, tuple[Any, ...]]:
        return memoised(_spec_of, self, n_cells)

    def _build_spec(self, n_cells: int) -> tuple[_Spec, tuple[Any, ...]]:
        releases = self._checked_releases()
        labels = self.labels()
        cross = self._cross(releases)
        # The summary block is chosen from the shape buckets (a geometric noise's outputs are
        # below its padded table size), so nearby budgets share one compiled program.
        noises = [_noise_of(r, n_cells) for r in releases]
        bounds = [
            1 if isinstance(r, IndexRelease | HadamardRelease) else _static_bound(noise.static)
            for r, noise in zip(releases, noises, strict=True)
        ]
        largest = max([max(bounds)] + [bounds[i] * bounds[k] for i, k in cross])
        block = 1 << max(0, ((_FLOAT32_EXACT - 1) // largest).bit_length() - 1)
        spec = _Spec(
            labels=labels.static(),
            kinds=tuple(_kind(r) for r in releases),
            noises=tuple(noise.static for noise in noises),
            widths=tuple(r.width for r in releases),
            width=bucket(int(n_cells)),
            block=block,
            cross=cross,
        )
        consts = (
            labels.constants(),
            tuple(noise.constants() for noise in noises),
            tuple(tuple(_pad_rows(t) for t in _tables_of(r, labels.size)) for r in releases),
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

    def privatize(
        self, key: PRNGKey, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> Any:
        """Reports of holders ``first_holder, first_holder + 1, ...`` (one per record)."""
        spec, consts = self._spec(n_cells)
        n, args = self._args(key, cells, labels, n_cells, first_holder)
        outs = _privatize(spec, consts, *args)
        return self._assemble([_trim(o, spec, i, n, n_cells) for i, o in enumerate(outs)])

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
        rows = bucket(n, MIN_ROWS)
        pad = rows - n
        outs = _privatize_words(
            spec,
            consts,
            np.pad(arr, ((0, pad), (0, 0))),
            np.pad(np.asarray(cells, dtype=np.int32), (0, pad)),
            np.pad(np.asarray(labels), (0, pad)),
        )
        return self._assemble([_trim(o, spec, i, n, n_cells) for i, o in enumerate(outs)])

    def report_fields(self, n_cells: int) -> tuple[tuple[str, tuple[int, ...], int, int], ...]:
        """``(name, shape, lowest, highest)`` of every release in one holder's report: the shape
        of its array in :meth:`privatize`'s report without the holder axis (``(n_cells,)`` or
        ``(n_cells, width)`` for a cell release, ``()`` or ``(width,)`` for a label release,
        ``()`` for an index release) and the range of integers its noise can output (``{0, 1}``
        for flips, ``[-margin, span + margin]`` for geometric noise, ``[0, k)`` for k-ary
        response). A report outside these is impossible under the mechanism."""
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        fields = []
        for r in self._checked_releases():
            noise = _noise_of(r, n_cells)
            per = () if r.width == 1 else (r.width,)
            shape = (n_cells, *per) if isinstance(r, CellRelease) else per
            if isinstance(noise, KaryResponse):
                fields.append((r.name, (), 0, noise.k - 1))
            elif isinstance(noise, HadamardNoise):
                fields.append((r.name, (), 0, 2 * noise.order - 1))
            elif isinstance(noise, BitFlip):
                fields.append((r.name, shape, 0, 1))
            elif isinstance(noise, MatrixNoise):
                fields.append((r.name, shape, 0, noise.max_abs_output))
            else:
                fields.append((r.name, shape, -noise.margin, noise.span + noise.margin))
        return tuple(fields)

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
        for i, arr in enumerate(arrays):
            a = jnp.asarray(arr)
            expected = _report_shape(spec, i, n, n_cells)
            if a.shape != expected:
                raise ValueError(f"reports.{self._names()[i]} must have shape {expected}")
            a = a.reshape(n, -1).astype(jnp.int32)
            if spec.kinds[i] == "cell":
                w = spec.widths[i]
                a = a.reshape(n, n_cells, w)
                a = jnp.pad(a, ((0, rows - n), (0, spec.width - n_cells), (0, 0)))
                a = a.reshape(rows, spec.width * w)
            else:
                a = jnp.pad(a, ((0, rows - n), (0, 0)))
            padded.append(a)
        return self.summary_stats(spec, _summarize(spec, tuple(padded), np.int32(n)), n_cells)

    def _names(self) -> list[str]:
        return [r.name for r in self._checked_releases()]

    def stat_names(self) -> list[str]:
        """Keys of :meth:`summarize`: each release's name (its coordinate sums: ``[L]``/``[L, w]``
        for cell releases, a scalar/``[w]`` for label releases) and ``"cell*label"`` for the cross
        sums ``sum_i out_cell[i, j] out_label[i]`` of every cell release with every label release.
        """
        names = self._names()
        cross = self._cross(self._checked_releases())
        return names + [f"{names[i]}*{names[k]}" for i, k in cross]

    def summary_stats(self, spec: _Spec, sums: Any, n_cells: int) -> dict[str, Any]:
        """The named statistics (:meth:`stat_names`) of the kernels' raw sums."""
        host = sums if isinstance(sums[0], jax.core.Tracer) else jax.device_get(sums)
        names = self._names()
        out: dict[str, Any] = {}
        for i, s in enumerate(host[: len(names)]):
            if spec.kinds[i] in ("cell", "index"):
                s = s.reshape(spec.width, spec.widths[i])[:n_cells]
            elif spec.kinds[i] == "hadamard":
                s = s.reshape(-1, 1)[:n_cells]
            out[names[i]] = _squeeze(s, spec.widths[i])
        for (i, k), s in zip(spec.cross, host[len(names) :], strict=True):
            rows = -1 if spec.kinds[i] == "hadamard" else spec.width
            s = s.reshape(rows, spec.widths[i], spec.widths[k])[:n_cells]
            if spec.widths[k] == 1:
                s = s[..., 0]
            out[f"{names[i]}*{names[k]}"] = _squeeze(s, spec.widths[i])
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
        releases = self._checked_releases()
        if self._cross(releases) or not all(isinstance(r.noise, Geometric) for r in releases):
            raise TypeError(
                f"{type(self).__name__} cannot draw aggregate reports: the aggregate simulation "
                "needs Geometric noise on every release and no cross sums"
            )
        label_spec = self.labels()
        cells_j, labels_j = check_records(cells, labels, n_cells, integer_labels=label_spec.integer)
        cell_idx = np.asarray(cells_j, dtype=np.int64)
        n = int(cell_idx.shape[0])
        if n == 0:
            raise ValueError("cells must hold at least one record")
        rng = np.random.default_rng(np.asarray(key_words(key)).tolist())
        raw = np.asarray(labels_j)
        if isinstance(label_spec, RealLabels):
            lo, hi = label_spec.bound
            u = (np.clip(raw.astype(np.float64), lo, hi) - lo) / label_spec.step
            t = np.minimum(np.floor(u + rng.random(n)), label_spec.levels).astype(np.int64)
        else:
            t = np.where((raw >= 0) & (raw < label_spec.n_classes), raw, label_spec.n_classes)
        size = label_spec.size
        joint = np.bincount(cell_idx * size + t, minlength=n_cells * size).reshape(n_cells, size)
        totals = joint.sum(axis=0)
        stats: dict[str, FloatArray] = {}
        for r in releases:
            assert isinstance(r.noise, Geometric)
            if isinstance(r, CellRelease):
                truth = joint @ r.on + (totals[None, :] - joint) @ r.off
            else:
                truth = totals @ r.inputs
            success = -math.expm1(-r.noise.gamma)
            noise = rng.negative_binomial(n, success, size=(2, *truth.shape))
            stats[r.name] = _squeeze((truth + noise[0] - noise[1]).astype(np.float64), r.width)
        return stats

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
                total += _release_log_prob(r, out, int(cell), t, n_cells)
            terms.append(math.log(weight) + total)
        return float(np.logaddexp.reduce(terms)) if terms else -math.inf

    def report_law(self, n_cells: int) -> ReportLaw:
        """The report's law for :func:`~ldptree.accounting.verify_ldp`, read off the same noises
        and tables that :meth:`privatize` samples (module docstring)."""
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        labels = self.labels()
        releases = self._checked_releases()
        blocks: list[CellBlock | LabelBlock | IndexBlock | RecordBlock] = []
        for r in releases:
            if isinstance(r, CellRelease):
                blocks.append(
                    CellBlock(
                        r.name, r.noise.channel(), on=_row(r.on, labels), off=_row(r.off, labels)
                    )
                )
            elif isinstance(r, LabelRelease):
                blocks.append(LabelBlock(r.name, r.noise.channel(), inputs=_row(r.inputs, labels)))
            elif isinstance(r, HadamardRelease):
                blocks.append(RecordBlock(r.name, r.channel(n_cells), inputs=_cell_only))
            else:
                blocks.append(_index_block(r, n_cells, labels))

        def assemble(outputs: dict[str, list[Any]]) -> Any:
            arrays = []
            for r in releases:
                flat = np.asarray(outputs[r.name], dtype=np.int64)
                if isinstance(r, IndexRelease | HadamardRelease):  # one integer per holder
                    arr = flat.reshape(())
                else:
                    shape = (n_cells, r.width) if isinstance(r, CellRelease) else (r.width,)
                    arr = flat.reshape(shape)
                    arr = arr[..., 0] if r.width == 1 else arr
                if isinstance(r.noise, BitFlip):
                    arr = arr.astype(bool)
                # jnp.asarray's arrays (same dtype and weak type) by a plain transfer: no jitted
                # conversion program to trace and look up in a fresh process
                arrays.append(jax.device_put(arr if arr.ndim else int(arr)))
            return self._assemble(arrays)

        if isinstance(labels, RealLabels):
            # real labels enter only through a random level: enumerating the levels certifies
            # every real label (module docstring)
            return ReportLaw(blocks=tuple(blocks), label_levels=labels.domain(), assemble=assemble)
        return ReportLaw(blocks=tuple(blocks), labels=labels.domain(), assemble=assemble)


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


def _kind(r: Release) -> str:
    if isinstance(r, IndexRelease):
        return "index"
    if isinstance(r, HadamardRelease):
        return "hadamard"
    return "cell" if isinstance(r, CellRelease) else "label"


def _pad_rows(table: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A table padded with zero rows (never indexed) to a bucket of rows, so that the number of
    label levels does not change the compiled program's shapes."""
    rows = bucket(table.shape[0], 2 * MAX_LEVELS)
    return np.pad(table, ((0, rows - table.shape[0]), (0, 0)))


def _static_bound(static: tuple[Any, ...]) -> int:
    """An upper bound on a noise's absolute outputs read off its static description."""
    return 1 if static[0] == "bits" else int(static[1])


def _index_block(r: IndexRelease, n_cells: int, labels: Labels) -> IndexBlock:
    noise = r.noise(n_cells)
    shift = PRECISION_BITS * math.log(2.0)
    table = _tables_of(r, labels.size)[0]

    def label_index(label: Any) -> int:
        return int(table[labels.index(label), 0])

    other = math.log(noise.other_count) - shift if noise.other_count else -math.inf
    return IndexBlock(
        r.name,
        log_keep=math.log(noise.keep_count) - shift,
        log_other=other,
        per_cell=r.width,
        label_index=label_index,
        counts=(noise.keep_count, noise.other_count, 1 << PRECISION_BITS),
    )


def _cell_only(cell: int, t: Any) -> tuple[int, ...]:
    return (int(cell),)


def _row(table: np.ndarray[Any, Any], labels: Labels) -> Callable[[Any], tuple[int, ...]]:
    def row(label: Any) -> tuple[int, ...]:
        return tuple(int(v) for v in table[labels.index(label)])

    return row


def _squeeze(s: Any, width: int) -> Any:
    return s[..., 0] if width == 1 else s


def _report_shape(spec: _Spec, i: int, n: int, n_cells: int) -> tuple[int, ...]:
    w = spec.widths[i]
    if spec.kinds[i] in ("index", "hadamard"):
        return (n,)
    if spec.kinds[i] == "cell":
        return (n, n_cells) if w == 1 else (n, n_cells, w)
    return (n,) if w == 1 else (n, w)


def _trim(out: Any, spec: _Spec, i: int, n: int, n_cells: int) -> Any:
    w = spec.widths[i]
    if spec.kinds[i] in ("index", "hadamard"):
        return out[:n, 0]
    if spec.kinds[i] == "cell":
        out = out.reshape(out.shape[0], spec.width, w)[:n, :n_cells]
    else:
        out = out[:n]
    return _squeeze(out, w)


def _release_log_prob(
    r: Release, out: np.ndarray[Any, Any], cell: int, t: int, n_cells: int
) -> float:
    """``sum_k log P(out_k | input_k)`` over one release's coordinates for level ``t``."""
    if isinstance(r, HadamardRelease):
        return r.log_prob(int(np.asarray(out).reshape(-1)[0]), cell, n_cells)
    if isinstance(r, IndexRelease):
        noise = r.noise(n_cells)
        index = cell * r.width + int(_tables_of(r, t + 1)[0][t, 0])
        value = int(np.asarray(out).reshape(-1)[0])
        if not 0 <= value < noise.k:
            return -math.inf
        count = noise.keep_count if value == index else noise.other_count
        return math.log(count) - PRECISION_BITS * math.log(2.0) if count else -math.inf
    first = -r.noise.margin if isinstance(r.noise, Geometric) else 0
    if isinstance(r, CellRelease):
        out = out.reshape(n_cells, r.width).astype(np.int64)
        inputs = np.broadcast_to(r.off[t], (n_cells, r.width)).copy()
        inputs[cell] = r.on[t]
    else:
        out = out.reshape(r.width).astype(np.int64)
        inputs = r.inputs[t]
    total = 0.0
    flat_in, flat_out = inputs.reshape(-1), out.reshape(-1) - first
    for a in np.unique(flat_in):
        table = r.noise.log_probs(int(a))
        idx = flat_out[flat_in == a]
        if (idx < 0).any() or (idx >= table.shape[0]).any():
            return -math.inf
        total += float(table[idx].sum())
    return total


# -- kernels ------------------------------------------------------------------------------------
def encode_levels(consts: Any, values: jax.Array, word: jax.Array) -> jax.Array:
    """Real values to random levels with :meth:`RealLabels.constants` ``(lo, hi, step, levels)``:
    ``floor(u + W)`` for ``u = (clip(v) - lo) / step`` and a uniform ``W`` from ``word``."""
    lo, hi, step, levels = consts
    # a NaN would survive clip and leak through a deterministic level: treat it as the centre
    y = jnp.where(jnp.isnan(values), (lo + hi) / 2, values)
    u = (jnp.clip(y, lo, hi) - lo) / step
    t = jnp.floor(u + unit_halfopen(word))
    return jnp.clip(t, 0, levels).astype(jnp.int32)


def _encode(spec: _Spec, consts: Any, labels: jax.Array, word: jax.Array | None) -> jax.Array:
    if spec.labels[0] == "class":
        (k,) = consts
        return jnp.where((labels >= 0) & (labels < k), labels, k).astype(jnp.int32)
    assert word is not None
    return encode_levels(consts, labels, word)


def _word_counts(spec: _Spec) -> tuple[list[int], int]:
    """Words per holder of every release, and of the label rounding (0 or 1, the last word)."""
    counts = []
    for kind, noise, w in zip(spec.kinds, spec.noises, spec.widths, strict=True):
        coords = {"cell": spec.width * w, "label": w, "index": 1, "hadamard": 1}[kind]
        counts.append(_noise_words(noise, coords))
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
    label_consts, noise_consts, tables = consts
    n = cells.shape[0]
    counts, label_words = _word_counts(spec)
    t = _encode(spec, label_consts, labels, words[:, -1] if label_words else None)
    outs = []
    start = 0
    for i, (kind, noise, w) in enumerate(zip(spec.kinds, spec.noises, spec.widths, strict=True)):
        chunk = words[:, start : start + counts[i]]
        start += counts[i]
        if kind == "hadamard":
            outs.append(sample_hadamard(noise, noise_consts[i], chunk, cells))
            continue
        if kind == "index":
            offset = jnp.asarray(tables[i][0])[t][:, :1]  # [n, 1]
            inputs = cells.astype(jnp.int32)[:, None] * w + offset
        elif kind == "cell":
            on, off = (jnp.asarray(tab)[t] for tab in tables[i])  # [n, w]
            own = jnp.arange(spec.width)[None, :, None] == cells[:, None, None]
            inputs = jnp.where(own, on[:, None, :], off[:, None, :]).reshape(n, spec.width * w)
        else:
            inputs = jnp.asarray(tables[i][0])[t]
        outs.append(sample_noise(noise, noise_consts[i], chunk, inputs))
    return tuple(outs)


def _noise_words(noise: tuple[Any, ...], coords: int) -> int:
    """32-bit words per holder for ``coords`` coordinates (``BitFlip.words`` and the others)."""
    if noise[0] == "hadamard":  # one word for the row, then the bit's flip
        return coords * (1 + _noise_words(("bits", noise[2]), 1))
    if noise[0] == "bits":
        return -(-coords // 2) if noise[1] == 16 else coords * (noise[1] // 32)
    if noise[0] == "matrix":
        return coords * (int(noise[2]) // 32)
    return 2 * coords


def _sums(spec: _Spec, outs: Sequence[jax.Array], valid: jax.Array) -> tuple[jax.Array, ...]:
    """Exact int32 sums: every release's column sums, then the cross sums of ``spec.cross``.

    ``valid`` (``bool[rows]``) marks real holders; padded rows of cell and label releases are zero
    already, and an index release counts only valid rows. Cross sums of a cell release with a
    one-coordinate label release are int32 products summed over rows (exact: every partial sum is
    at most ``max_summary_rows`` times the pair's bound, below ``2^31``). With a wider label release
    they are blocked float32 matmuls: each block's products and sums are integers below ``2^24``
    (``spec.block``), hence exact in float32; blocks are then added in int32 (exact below
    ``max_summary_rows``).
    Index releases use segment sums (integer scatter-adds, exact).
    """
    sums = []
    segments: list[tuple[jax.Array, int] | None] = []
    for kind, w, out, noise in zip(spec.kinds, spec.widths, outs, spec.noises, strict=True):
        if kind == "hadamard":
            segments.append(None)
            sums.append(hadamard_sums(out[:, 0], valid, noise[1]))
            continue
        if kind == "index":
            index = out[:, 0]
            segments.append((index, spec.width * w))
            sums.append(jax.ops.segment_sum(valid.astype(jnp.int32), index, spec.width * w))
        else:
            segments.append(None)
            sums.append(out.astype(jnp.int32).sum(axis=0))
    for i, k in spec.cross:
        rhs = outs[k].astype(jnp.int32)
        if spec.kinds[i] == "hadamard":
            sums.append(hadamard_sums(outs[i][:, 0], valid, spec.noises[i][1], rhs).reshape(-1))
            continue
        seg = segments[i]
        if seg is not None:
            weights = jnp.where(valid[:, None], rhs, 0)
            sums.append(jax.ops.segment_sum(weights, seg[0], seg[1]).reshape(-1))
            continue
        lhs = outs[i]
        if rhs.shape[1] == 1:
            # one label coordinate: an int32 product summed per cell, exact (``|product| <=`` the
            # pair's bound and rows ``<= max_summary_rows``, so no partial sum reaches 2^31), and
            # cheaper than a one-column matmul
            sums.append((lhs.astype(jnp.int32) * rhs).sum(axis=0))
            continue
        rows = lhs.shape[0]
        block = min(spec.block, rows)
        g = rows // block
        a = lhs.astype(jnp.float32).reshape(g, block, -1)
        b = rhs.astype(jnp.float32).reshape(g, block, -1)
        per_block = jnp.einsum("gbw,gbk->gwk", a, b)
        sums.append(per_block.astype(jnp.int32).sum(axis=0).reshape(-1))
    return tuple(sums)


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
    spec: _Spec,
    consts: Any,
    key_data: jax.Array,
    cells: jax.Array,
    labels: jax.Array,
    first_holder: jax.Array,
    n_valid: jax.Array,
) -> tuple[jax.Array, ...]:
    """:func:`fused_sums` block by block, in a loop over the blocks that hold holders only (the
    sums are exact int32 sums, so blocking changes no bit): the traced body of
    :meth:`KitMechanism.privatize_summarize`."""
    rows = int(cells.shape[0])
    block = min(rows & -rows, _SUMMARY_BLOCK)  # the largest power of two dividing rows, capped

    def part(start: jax.Array) -> tuple[jax.Array, ...]:
        # rows start .. start + block - 1: holders first_holder + start, ...
        c = jax.lax.dynamic_slice_in_dim(cells, start, block)
        lab = jax.lax.dynamic_slice_in_dim(labels, start, block)
        first = first_holder + start.astype(jnp.uint32)
        return fused_sums(spec, consts, key_data, c, lab, first, n_valid - start)

    def step(i: jax.Array, acc: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        return tuple(a + b for a, b in zip(acc, part(i * block), strict=True))

    blocks = (n_valid + block - 1) // block
    # the first block starts the sums (zero when n_valid = 0: every row is masked)
    total: tuple[jax.Array, ...] = jax.lax.fori_loop(1, blocks, step, part(jnp.int32(0)))
    return total


@kernel(static_argnums=(0,))
def _privatize_summarize(spec: _Spec, consts: Any, *args: Any) -> tuple[jax.Array, ...]:
    return blocked_sums(spec, consts, *args)
