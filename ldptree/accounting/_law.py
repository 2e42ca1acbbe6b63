"""A mechanism's report law as a product of independent channels: the verification interface.

A mechanism that wants its privacy claim *checked* (:func:`~ldptree.accounting.verify_ldp`)
implements, next to the :class:`~ldptree.protocols.Mechanism` methods,

    def report_law(self, n_cells: int) -> ReportLaw

describing the law of one holder's report given its record ``(cell, label)``: a tuple of
*blocks*, each a group of coordinates released independently (given the record) by one
:class:`~ldptree.accounting.Channel`, with the coordinates' inputs as functions of the record:

* :class:`CellBlock`: ``width`` coordinates per cell (``n_cells * width`` in all); the record's
  own cell's coordinates receive ``on(t)``, every other cell's receive ``off(t)``. One-hot
  encodings (randomized response on the cell vector, Laplace on ``U`` and on ``V = Y U``, a
  per-cell class one-hot) are cell blocks; the accountant's cost does not grow with ``n_cells``.
* :class:`LabelBlock`: ``width`` coordinates whose inputs depend on the label only.
* :class:`RecordBlock`: ``width`` coordinates whose inputs are any function of ``(cell, t)``;
  general, at ``O(n_cells^2)`` cost.
* :class:`FeatureBlock`: one coordinate per feature for mechanisms whose record also carries a
  real feature vector ``x in [lo, hi]^d`` (released directly, not through a cell: DECONV);
  coordinate ``k`` receives ``feature_map(x_k)``, monotone and affine, through a
  ``convex_in_location`` channel, so the worst case over the box is at its corners and the block
  adds ``d * max(D(f(lo), f(hi)), D(f(hi), f(lo)))`` to every record pair (see
  :func:`~ldptree.accounting.verify_ldp`). Such a mechanism's ``log_prob`` takes the record's
  features as the keyword ``features``.

``t`` is the label as the channels see it:

* finite labels (class codes): ``labels`` lists the label domain (including a code standing for
  "any undeclared label" where the mechanism maps those to a null record), and ``t`` is the label;
* real labels (``labels is None``): ``t = label_map(y)`` with ``label_map`` an
  :class:`AffineLabelMap` (clip, then affine: monotone and affine *by construction*; for a
  built-in: clip to the declared bound, centre, scale). Every block input is then declared as
  *data*: a tuple of constants and :class:`AffineInput` terms (``slope * t + intercept``), affine
  in ``t`` by construction. With channels that are ``convex_in_location``, the log-likelihood ratio
  of two records is then a convex function of ``(t, t')`` on ``[t(lo), t(hi)]^2``, so its supremum
  over all labels in ``[lo, hi]`` is attained at the extreme labels: the accountant's bound covers
  every real label, not just those it evaluates. A Python function of ``t`` (as a block input or
  as ``label_map``) cannot be checked between the labels evaluated, so the verifier refuses it;
* real labels through random levels (``label_levels``): the declared encoding is *clip to the
  levels' range, then round at random to one of the two adjacent levels, unbiasedly*, and the
  holder releases that level's law; the levels are enumerated like finite labels, which covers
  every real label (see :class:`ReportLaw`), and the sampler tests check the declared rounding.
  Block inputs may then be functions of ``t`` (they are evaluated at every level).

``assemble(outputs)`` turns per-block outputs (``{block name: flat list}``, cell-major for cell
blocks) into one holder's report in the mechanism's own format, so that the certificate's witness
can be checked against the mechanism's ``log_prob``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

import attrs

from ldptree.accounting._channels import Channel, as_tuple
from ldptree.protocols import Mechanism, ReportT, StatsT

__all__ = [
    "AffineInput",
    "AffineLabelMap",
    "Block",
    "CellBlock",
    "ChannelBlock",
    "FeatureBlock",
    "IndexBlock",
    "LabelBlock",
    "RecordBlock",
    "ReportLaw",
    "VerifiableMechanism",
]


def _check_name(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a non-empty string, got {value!r}")


def _check_channel(_: object, attribute: attrs.Attribute[Channel], value: Channel) -> None:
    if not isinstance(value, Channel):
        raise TypeError(
            f"{attribute.name} must implement the Channel protocol (divergences, log_prob, "
            f"convex_in_location, sampling), got {type(value).__name__}"
        )


@attrs.frozen
class AffineInput:
    """``slope * t + intercept``: a coordinate input declared as *data*, affine in the label
    coordinate ``t`` by construction (a Python function can only be evaluated at finitely many
    labels, which proves nothing about the labels in between)."""

    slope: float = attrs.field(default=1.0, converter=float)
    intercept: float = attrs.field(default=0.0, converter=float)

    def __attrs_post_init__(self) -> None:
        if not (math.isfinite(self.slope) and math.isfinite(self.intercept)):
            raise ValueError(f"AffineInput needs finite slope and intercept, got {self!r}")

    def __call__(self, t: Any) -> Any:
        return self.slope * t + self.intercept


#: A block's inputs as a function of ``t``, or declared as data: a tuple with one entry per
#: coordinate, each a constant input or an :class:`AffineInput`.
Inputs: TypeAlias = Callable[[Any], Sequence[Any]] | tuple[Any, ...]


def _to_inputs(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _check_inputs(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, tuple):
        if not value:
            raise ValueError(f"{attribute.name} declared as data needs at least one coordinate")
        for item in value:
            if isinstance(item, bool) or not isinstance(item, AffineInput | int | float):
                raise TypeError(
                    f"{attribute.name} declared as data holds constants and AffineInput terms, "
                    f"got {item!r}"
                )
    elif not callable(value):
        raise TypeError(f"{attribute.name} must be a function of t or a tuple of inputs")


def evaluate_inputs(spec: Any, t: Any) -> tuple[Any, ...]:
    """The coordinate inputs of ``spec`` (a function of ``t`` or data) at ``t``."""
    if isinstance(spec, tuple):
        return tuple(item(t) if isinstance(item, AffineInput) else item for item in spec)
    return tuple(spec(t))


def is_data(spec: Any) -> bool:
    """Inputs declared as data (a tuple), not as a Python function."""
    return isinstance(spec, tuple)


@attrs.frozen
class CellBlock:
    """``width`` coordinates per cell: the record's cell sees ``on(t)``, other cells ``off(t)``
    (each a function of ``t``, or data: a tuple of constants and :class:`AffineInput` terms)."""

    name: str = attrs.field(validator=_check_name)
    channel: Channel = attrs.field(validator=_check_channel)
    on: Inputs = attrs.field(converter=_to_inputs, validator=_check_inputs)
    off: Inputs = attrs.field(converter=_to_inputs, validator=_check_inputs)


@attrs.frozen
class LabelBlock:
    """``width`` coordinates whose inputs ``inputs(t)`` depend on the label only (a function of
    ``t``, or data: a tuple of constants and :class:`AffineInput` terms)."""

    name: str = attrs.field(validator=_check_name)
    channel: Channel = attrs.field(validator=_check_channel)
    inputs: Inputs = attrs.field(converter=_to_inputs, validator=_check_inputs)


@attrs.frozen
class RecordBlock:
    """``width`` coordinates whose inputs ``inputs(cell, t)`` are any function of the record."""

    name: str = attrs.field(validator=_check_name)
    channel: Channel = attrs.field(validator=_check_channel)
    inputs: Callable[[int, Any], Sequence[Any]]


def _optional_tuple(values: Iterable[Any] | None) -> tuple[Any, ...] | None:
    return None if values is None else tuple(values)


def _check_convex(_: object, attribute: attrs.Attribute[Channel], value: Channel) -> None:
    _check_channel(_, attribute, value)
    if not value.convex_in_location:
        raise ValueError(
            f"{attribute.name} of a FeatureBlock must be convex_in_location (its divergence a "
            "convex function of the input difference), so that the corners of the feature box "
            "are the worst case"
        )


def _check_feature_bounds(
    _: object, attribute: attrs.Attribute[tuple[float, float]], value: tuple[float, float]
) -> None:
    lo, hi = value
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"{attribute.name} must be finite with lo < hi, got {value!r}")


def _to_pair(value: Any) -> tuple[float, float]:
    lo, hi = value
    return (float(lo), float(hi))


@attrs.frozen
class FeatureBlock:
    """``n_features`` coordinates: coordinate ``k`` sees ``feature_map(x_k)`` for the record's
    feature ``x_k in bounds`` (the mechanism clips features into ``bounds``); the channel must be
    ``convex_in_location`` and ``feature_map`` monotone and affine (both checked by the
    verifier).

    With ``levels`` (representative feature values, one per level) features instead enter the
    report only through a *random level*: the holder rounds each feature to a level at random and
    the coordinate's input is ``feature_map(level value)``. Each coordinate's law is then a mixture
    of the level laws, and a mixture's max-divergence is at most the largest over level pairs, so
    the verifier takes the worst level pair (no convexity or affinity is needed).
    """

    name: str = attrs.field(validator=_check_name)
    channel: Channel = attrs.field(validator=_check_channel)
    n_features: int = attrs.field(converter=int)
    feature_map: Callable[[float], float] = attrs.field()
    bounds: tuple[float, float] = attrs.field(
        default=(0.0, 1.0), converter=_to_pair, validator=_check_feature_bounds
    )
    levels: tuple[float, ...] | None = attrs.field(default=None, converter=_optional_tuple)

    def __attrs_post_init__(self) -> None:
        if self.levels is None:
            _check_convex(self, attrs.fields(FeatureBlock).channel, self.channel)
        elif len(self.levels) < 2:
            raise ValueError("levels must list at least two representative feature values")

    @n_features.validator
    def _positive(self, attribute: attrs.Attribute[int], value: int) -> None:
        if value < 1:
            raise ValueError(f"{attribute.name} must be >= 1, got {value}")


def _check_counts(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if len(value) != 3 or not all(isinstance(c, int) and c >= 0 for c in value) or value[2] < 1:
        raise ValueError(
            f"{attribute.name} must be (keep, other, total) non-negative ints, got {value!r}"
        )


@attrs.frozen
class IndexBlock:
    """One coordinate releasing the index ``i = cell * per_cell + label_index(t)`` through a
    *symmetric* k-ary channel over ``k = n_cells * per_cell`` values: ``P(s | i)`` is
    ``exp(log_keep)`` for ``s = i`` and ``exp(log_other)`` for each of the other ``k - 1`` values
    (k-ary randomized response). Two records with the same index have equal laws; with different
    indices the max-divergence is ``|log_keep - log_other|`` (at ``s`` = one of the two indices),
    so the accountant's cost does not grow with the number of cells.

    ``label_index`` is a function of ``t`` (finite labels or levels only) or a constant.
    ``counts = (keep, other, total)`` declares an integer-count law (``P = count / total``): its
    sum ``keep + (k - 1) other == total`` is then checked exactly and the divergence computed
    from the integers; otherwise ``exp(log_keep) + (k - 1) exp(log_other)`` must be one within
    ``1e-9``.
    """

    name: str = attrs.field(validator=_check_name)
    log_keep: float = attrs.field(converter=float)
    log_other: float = attrs.field(converter=float)
    per_cell: int = attrs.field(default=1, converter=int)
    label_index: Callable[[Any], int] | int = 0
    counts: tuple[int, int, int] | None = attrs.field(default=None, validator=_check_counts)

    def offset(self, t: Any) -> int:
        """``label_index(t)``."""
        if callable(self.label_index):
            return int(self.label_index(t))
        return int(self.label_index)

    def index(self, cell: int, t: Any) -> int:
        return int(cell) * self.per_cell + self.offset(t)


def block_inputs(block: Any, cell: int, t: Any, n_cells: int) -> list[Any]:
    """Every coordinate's input of ``block`` for the record ``(cell, t)``, cell-major for cell
    blocks (feature blocks have none here: their inputs are the record's features)."""
    if isinstance(block, CellBlock):
        on, off = evaluate_inputs(block.on, t), evaluate_inputs(block.off, t)
        return [v for c in range(n_cells) for v in (on if c == cell else off)]
    if isinstance(block, LabelBlock):
        return list(evaluate_inputs(block.inputs, t))
    if isinstance(block, IndexBlock):
        return [block.index(cell, t)]
    if isinstance(block, RecordBlock):
        return list(block.inputs(cell, t))
    raise TypeError(f"{type(block).__name__} has no per-record inputs")


#: Blocks whose coordinates are released by a :class:`~ldptree.accounting.Channel`.
ChannelBlock: TypeAlias = CellBlock | LabelBlock | RecordBlock | FeatureBlock
Block: TypeAlias = ChannelBlock | IndexBlock


def _check_blocks(_: object, attribute: attrs.Attribute[Any], value: tuple[Any, ...]) -> None:
    if not value:
        raise ValueError(f"{attribute.name} must contain at least one block")
    names = set()
    for block in value:
        if not isinstance(block, CellBlock | LabelBlock | RecordBlock | FeatureBlock | IndexBlock):
            raise TypeError(
                f"{attribute.name} must contain CellBlock, LabelBlock, RecordBlock or "
                "FeatureBlock, got "
                f"{type(block).__name__}"
            )
        if block.name in names:
            raise ValueError(f"{attribute.name}: block name {block.name!r} is used twice")
        names.add(block.name)


@attrs.frozen
class AffineLabelMap:
    """``t = scale * (clip(y, lo, hi) - offset)``: a label map that is monotone and affine on
    ``[lo, hi]`` *by construction*, so the verifier can prove its properties for every real label
    (an arbitrary callable can only be evaluated at finitely many labels, which proves nothing
    about the labels in between). ``lo``/``hi`` may be infinite (no clipping on that side).

    Computed in float64 as written (with ``scale`` a power of two, ``(clip(y) - c) / Delta``
    equals ``AffineLabelMap(lo, hi, c, 1 / Delta)(y)`` bit for bit).
    """

    lo: float = attrs.field(converter=float)
    hi: float = attrs.field(converter=float)
    offset: float = attrs.field(default=0.0, converter=float)
    scale: float = attrs.field(default=1.0, converter=float)

    def __attrs_post_init__(self) -> None:
        if math.isnan(self.lo) or math.isnan(self.hi) or not self.lo < self.hi:
            raise ValueError(f"AffineLabelMap needs lo < hi, got lo={self.lo}, hi={self.hi}")
        if not (math.isfinite(self.offset) and math.isfinite(self.scale)):
            raise ValueError(
                f"AffineLabelMap offset and scale must be finite, got {self.offset}, {self.scale}"
            )

    def __call__(self, label: float) -> float:
        return self.scale * (min(max(float(label), self.lo), self.hi) - self.offset)


def _check_levels(
    _: object, attribute: attrs.Attribute[Any], value: tuple[Any, ...] | None
) -> None:
    if value is None:
        return
    if not value:
        raise ValueError(f"{attribute.name} must contain at least one level")
    for level in value:
        if not isinstance(level, int | float) or not math.isfinite(float(level)):
            raise ValueError(f"{attribute.name} must contain finite real levels, got {level!r}")


@attrs.frozen
class ReportLaw:
    """The law of one holder's report: independent blocks of channel coordinates (module doc).

    * ``labels``: the finite label domain (class codes), or ``None`` for real labels.
    * ``label_map``: real labels: ``t = label_map(y)``. Only an :class:`AffineLabelMap` (the
      default is the identity) lets the verifier cover every real label; for any other callable
      it refuses to certify real labels unless ``label_levels`` is given.
    * ``label_levels``: real labels enter the report only through a *random level*: the holder
      maps its label ``y`` (whatever it is) to a level ``l`` in this finite set, with a level
      mapped to itself with probability one, and releases the report law of the record
      ``(cell, l)`` (``t = label_map(l)``). Then ``P(s | j, y) = sum_l w_y(l) P(s | j, l)`` is a
      mixture of the level laws, and since ``P(s | j, l) <= e^eps P(s | j', l')`` for every
      level pair, ``P(s | j, y) <= max_l P(s | j, l) <= e^eps min_l' P(s | j', l') <=
      e^eps P(s | j', y')``: the max-divergence of two mixtures is at most the largest over
      level pairs. Enumerating the levels is therefore a proof for every real label, with no
      condition on ``label_map`` or on how the inputs depend on ``t``.
    * ``assemble(outputs)``: one holder's report in the mechanism's format from per-block outputs.
    * ``disassemble(reports)``: the inverse for a batch: ``{block name: array [n, k]}`` of each
      block's ``k`` coordinates (cell-major for cell blocks) for ``n`` holders' reports. When
      ``None``, the sampler cross-check reads the report's array leaves in order, flattened per
      holder, as the blocks' coordinates in the order of ``blocks``.
    """

    blocks: tuple[Block, ...] = attrs.field(converter=as_tuple, validator=_check_blocks)
    labels: tuple[Any, ...] | None = attrs.field(default=None, converter=_optional_tuple)
    label_map: Callable[[float], float] = attrs.field(
        factory=lambda: AffineLabelMap(-math.inf, math.inf)
    )
    assemble: Callable[[dict[str, list[Any]]], Any] | None = None
    label_levels: tuple[float, ...] | None = attrs.field(
        default=None, converter=_optional_tuple, validator=_check_levels
    )
    disassemble: Callable[[Any], dict[str, Any]] | None = None

    def label_coordinate(self, label: Any) -> Any:
        """``t`` for a label: the label itself (finite labels) or ``label_map(label)``."""
        if self.labels is not None:
            return label
        t = float(self.label_map(float(label)))
        if not math.isfinite(t):
            raise ValueError(f"label_map({label!r}) = {t} is not finite")
        return t


@runtime_checkable
class VerifiableMechanism(Mechanism[ReportT, StatsT], Protocol[ReportT, StatsT]):
    """A :class:`~ldptree.protocols.Mechanism` that also describes its report law."""

    def report_law(self, n_cells: int) -> ReportLaw: ...
