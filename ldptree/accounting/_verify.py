"""``verify_ldp``: a certified upper bound on a mechanism's worst-case log-likelihood ratio.

For records ``x = (j, y)``, ``x' = (j', y')`` and a report ``s``, the mechanism is epsilon-LDP iff

    L(x, x') = sup_s log P(s | x) / P(s | x') <= epsilon      for all x, x'.

The mechanism describes ``P`` as a product of independent coordinates (its
:class:`~ldptree.accounting.ReportLaw`), coordinate ``k`` released by a channel with input
``a_k(x)``. Then ``log P(s | x) / P(s | x') = sum_k log P_k(s_k | a_k(x)) / P_k(s_k | a_k(x'))``
and, each ``s_k`` being free, ``L(x, x') = sum_k D_k(a_k(x), a_k(x'))`` exactly, with ``D_k`` the
channel's max-divergence (:class:`~ldptree.accounting.Channel`). Per block the sum has closed
forms: a :class:`~ldptree.accounting.CellBlock` with ``n_cells = L`` contributes, for records in
the same cell, ``D(on(t), on(t')) + (L - 1) D(off(t), off(t'))`` and, for different cells,
``D(on(t), off(t')) + D(off(t), on(t')) + (L - 2) D(off(t), off(t'))`` — so the cost does not grow
with ``L`` (randomized response on a 4096-bit one-hot vector is two table look-ups).

Labels. Finite label domains and label levels (:class:`~ldptree.accounting.ReportLaw`: a mixture
of level laws is no less private than the worst level pair) are enumerated. For real labels in
``[lo, hi]`` the channels see ``t = label_map(y)`` with ``label_map`` an
:class:`~ldptree.accounting.AffineLabelMap` (monotone and affine by construction; any other
callable is refused: its properties cannot be proven from finitely many evaluations); every
block input is declared as *data* (constants and :class:`~ldptree.accounting.AffineInput`
terms), so every ``t``-dependent input is affine in ``t`` by construction, and its channel's
divergence is a convex function of the input difference, so ``L`` restricted to each pair type
(same cell / different cells) is convex in ``(t, t')`` and attains its maximum over
``[t(lo), t(hi)]^2`` at a corner: evaluating the extreme labels is a proof for every real label.
A block input written as a Python function of ``t`` is refused for real labels: it can only be
evaluated at finitely many labels, and it can tell a probe from a label (a function that caught a
symbolic probe's ``TypeError`` once passed a spike as affine).

Features. A :class:`~ldptree.accounting.FeatureBlock` releases each coordinate ``x_k`` of a
record's feature vector ``x in [lo, hi]^d`` through a ``convex_in_location`` channel at input
``f(x_k)`` (``f`` monotone and affine). These coordinates do not depend on the cell or the label,
so they add the same term to every record pair: ``sum_k D(f(x_k), f(x'_k))``, whose supremum over
the box is attained coordinate by coordinate at ``(x_k, x'_k) in {(lo, hi), (hi, lo)}`` (a convex
function of ``x_k - x'_k`` on ``[lo - hi, hi - lo]`` is largest at an end). With several feature
blocks the orientation is chosen jointly (the blocks see the same ``x``), so the term is
``d * max_o sum_blocks D_o``. The verifier also evaluates interior features and checks the
declared monotonicity, affinity and convexity on them, as for labels. The witness then carries the
two corner feature vectors, and ``log_prob`` is called with ``features=``.
The verifier also evaluates interior labels and cross-checks convexity on them; a declaration
that fails is not certified (``epsilon_bound = inf``, with the largest ratio found as
``epsilon_lower``). A feature block's ``feature_map`` must be an
:class:`~ldptree.accounting.AffineLabelMap` (monotone by construction).

A law must be a law: only the library's channel classes are read (a user's channel object could
report any divergence), a finite channel's probabilities sum to one (exactly, for integer
counts), and an :class:`~ldptree.accounting.IndexBlock`'s keep and other probabilities sum to one
(exactly, for declared counts). Finite channels' divergences are computed by enumeration, from
the integers for integer-count laws (relative error of a few ulps at any budget) and from float64
log-probabilities otherwise; the default *relative* tolerance ``1e-9`` absorbs rounding and
nothing else.

Provenance. Whether the certificate speaks for the code that runs depends on where the sampler
comes from (:func:`~ldptree.accounting.provenance`): ``holds`` and ``pure`` need a sampler derived
from the law by the mechanism kit (or the library's own); for a hand-written mechanism they are
false and ``law_holds`` says what is certified.

The witness report is assembled in the mechanism's own format and its log-likelihood ratio is
recomputed with the mechanism's ``log_prob``: a report law that disagrees with ``log_prob`` is not
certified.

Sampling. A channel's :class:`~ldptree.accounting.Sampling` says how its sampler deviates from the
declared law (e.g. float32 Laplace noise with bounded support). If the declared law is pure
``eps_b``-LDP and coordinate ``k``'s sampled law is within total variation ``tau_k`` of its declared
law, then coordinate by coordinate ``P~(S|a) <= P(S|a) + tau <= e^D P(S|b) + tau
<= e^D P~(S|b) + tau (1 + e^D)``, a coordinate whose two inputs are equal adds nothing, and basic
composition gives that the sampled mechanism is ``(eps_b, sum_k tau_k (1 + e^{D_k}))``-LDP with
the sum over the coordinates whose inputs differ; its supremum over record pairs is the
certificate's ``delta`` (:func:`_sampled_caveats`). ``holds`` and ``pure`` describe the mechanism
as sampled: ``holds`` needs ``delta`` at most the mechanism's own ``delta`` claim (0 by default).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import attrs
import jax
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import NotApplicableError, check_bounds, check_int, check_key, check_real
from ldptree.accounting._channels import Channel, Divergences
from ldptree.accounting._law import (
    AffineInput,
    AffineLabelMap,
    CellBlock,
    ChannelBlock,
    FeatureBlock,
    IndexBlock,
    LabelBlock,
    RecordBlock,
    ReportLaw,
    VerifiableMechanism,
    evaluate_inputs,
    is_data,
)
from ldptree.accounting._sampler import check_sampler as _check_sampler
from ldptree.mechanisms._provenance import Provenance, provenance
from ldptree.protocols import ReportT, StatsT

__all__ = ["LDPCertificate", "SampledCaveat", "Witness", "verify_ldp"]

#: Interior labels evaluated next to the extremes (checks of the declaration; lower bounds).
INTERIOR_LABELS = 7


@attrs.frozen(eq=False)
class Witness:
    """A record pair and a report attaining ``log_ratio = log P(report|record)/P(report|other)``.

    ``parts`` splits the ratio by block; ``report`` is in the mechanism's format when its report
    law can assemble one (else ``{block: outputs}``). ``features`` holds the two records' feature
    vectors when the law has :class:`~ldptree.accounting.FeatureBlock` s (else ``None``).
    """

    record: tuple[int, Any]
    other: tuple[int, Any]
    report: Any
    log_ratio: float
    parts: tuple[tuple[str, float], ...]
    features: tuple[tuple[float, ...], tuple[float, ...]] | None = None

    def __str__(self) -> str:
        parts = ", ".join(f"{name}: {value:.12g}" for name, value in self.parts)
        report = repr(self.report)
        if len(report) > 400:
            report = report[:400] + " ..."
        feats = (
            ""
            if self.features is None
            else f" with features {self.features[0][:4]}... and {self.features[1][:4]}..."
        )
        return (
            f"records (cell, label) x = {self.record} and x' = {self.other}{feats}; "
            f"report s = {report}; "
            f"log P(s|x)/P(s|x') = {self.log_ratio:.12g} ({parts})"
        )


@attrs.frozen(eq=False)
class SampledCaveat:
    """How a block's *sampler* deviates from its declared law (one per block with a sampler).

    ``tv_bound`` per coordinate, ``delta`` the block's share of the certificate's delta,
    ``unreachable`` a report coordinate (at the witness pair) that the sampler produces from the
    first record and never from the second — a proof that pure epsilon fails as sampled — and
    ``exact_delta`` the sampled coordinate's exact ``delta`` at its own declared divergence at the
    witness pair (when requested and enumerable).
    """

    block: str
    note: str
    tv_bound: float
    delta: float
    unreachable: Any
    exact_delta: float | None


@attrs.frozen(eq=False)
class LDPCertificate:
    """Result of :func:`verify_ldp`. Three questions are answered separately: is the *declared*
    report law private (``declared_holds``, ``epsilon_bound``), does the law with its declared
    sampling caveats meet the claim (``law_holds``, ``delta``), and is the mechanism *as
    implemented* — what its sampler draws — private at its claim (``holds``, ``pure``), which
    needs a sampler *derived* from the law (``provenance``).

    * ``epsilon_claimed``: the mechanism's ``epsilon``; ``delta_claimed``: its ``delta``
      (``getattr(mechanism, "delta", 0.0)``; 0 is a pure claim).
    * ``epsilon_bound``: certified upper bound on ``sup_{x, x', s} log P(s|x) / P(s|x')`` for the
      *declared* report law (``inf`` when none could be certified, with the reason in ``notes``).
    * ``epsilon_lower``: the ratio attained by ``witness`` (a lower bound on the supremum).
    * ``exact``: ``epsilon_bound == epsilon_lower`` (the bound is attained).
    * ``declared_holds``: ``epsilon_bound <= epsilon_claimed * (1 + tolerance)`` — a statement
      about the declared law only.
    * ``delta``: certified ``delta`` at ``epsilon_claimed`` of the law *as sampled* according to
      the channels' sampling caveats (0 for exact samplers; ``sum`` over coordinates whose inputs
      differ of ``tau_k (1 + e^{D_k})`` otherwise, see :func:`verify_ldp`); ``None`` when the
      declared law already fails. The caveats of a kit mechanism are derived from its noise
      objects; a hand-written mechanism's are its own declaration, not proven.
    * ``law_holds``: ``declared_holds`` and ``delta <= delta_claimed`` (and, when requested, the
      sampler cross-check did not reject ``privatize`` against the declared law).
    * ``provenance``: where the sampler comes from (:class:`~ldptree.accounting.Provenance`:
      ``"kit"``, ``"library"`` or ``"hand-written"``).
    * ``holds``: the mechanism *as implemented* is ``(epsilon_claimed, delta_claimed)``-LDP:
      ``law_holds`` and a sampler derived from the law (``provenance.proven``). A hand-written
      mechanism never ``holds``: its certificate says "law certified, sampler tested, not proven"
      (``status``), with the sampler checks' evidence in ``sampler_check``.
    * ``pure``: ``holds and delta == 0``: the code that runs is pure ``epsilon_claimed``-LDP.
    * ``sampled``: per-block sampling caveats; ``sampler_check``: the cross-check of
      ``privatize`` against the declared law (``verify_ldp(..., check_sampler=True)``), else
      ``None``; ``notes``: everything else worth saying.
    """

    epsilon_claimed: float
    epsilon_bound: float
    epsilon_lower: float
    exact: bool
    declared_holds: bool
    holds: bool
    tolerance: float
    witness: Witness
    delta: float | None
    sampled: tuple[SampledCaveat, ...]
    notes: tuple[str, ...]
    delta_claimed: float = 0.0
    sampler_check: Any = None
    law_holds: bool = False
    provenance: Provenance = attrs.field(factory=lambda: Provenance("hand-written", "unknown"))

    @property
    def pure(self) -> bool:
        return self.holds and self.delta == 0.0

    @property
    def proven(self) -> bool:
        """The sampler is derived from the certified law (kit or library mechanism)."""
        return self.provenance.proven

    @property
    def status(self) -> str:
        """One line: what the certificate establishes about the code that runs."""
        if not self.law_holds:
            return "fails"
        if self.proven:
            return "proven pure" if self.pure else "proven"
        if self.sampler_check is None:
            return "law certified, sampler not tested, not proven"
        return "law certified, sampler tested, not proven"

    def __str__(self) -> str:
        if self.holds:
            verdict = "HOLDS" + (" (pure)" if self.pure else "")
        elif self.law_holds:
            verdict = f"NOT PROVEN: {self.status}"
        else:
            verdict = "FAILS"
        declared = "holds" if self.declared_holds else "fails"
        lines = [
            f"LDP claim ({self.epsilon_claimed:.12g}, {self.delta_claimed:.3g}) as implemented "
            f"{verdict}",
            f"sampler provenance: {self.provenance.kind} ({self.provenance.reason})",
            f"declared law: {declared}: certified bound "
            f"{self.epsilon_bound:.12g} ({'exact' if self.exact else 'upper bound'}), "
            f"relative tolerance {self.tolerance:g}",
            f"witness: {self.witness}",
        ]
        if self.delta is not None:
            how = "as sampled" if self.proven else "as sampled by its declaration (not proven)"
            lines.append(
                f"{how}: ({self.epsilon_claimed:.6g}, {self.delta:.3g})-LDP"
                + (" (pure)" if self.delta == 0.0 else "")
            )
        if self.sampler_check is not None:
            lines.append(f"sampler cross-check: {self.sampler_check}")
        for caveat in self.sampled:
            extra = (
                ""
                if caveat.unreachable is None
                else (
                    f"; pure epsilon fails as sampled: output {caveat.unreachable!r} is reachable "
                    "from the witness record x and unreachable from x'"
                )
            )
            exact = (
                ""
                if caveat.exact_delta is None
                else (f"; exact delta at the witness pair {caveat.exact_delta:.3g}")
            )
            lines.append(
                f"sampling [{caveat.block}]: {caveat.note}; TV <= {caveat.tv_bound:.3g} per "
                f"coordinate, delta share {caveat.delta:.3g}{exact}{extra}"
            )
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


# -- helpers ------------------------------------------------------------------------------------
def _tuple(values: Any, where: str) -> tuple[Any, ...]:
    try:
        out = tuple(values)
    except TypeError:
        raise TypeError(f"{where} must return a sequence of channel inputs") from None
    for v in out:
        try:
            hash(v)
        except TypeError:
            raise TypeError(f"{where} returned an unhashable input {v!r}") from None
    return out


@attrs.frozen(eq=False)
class _Evaluated:
    """One block evaluated at the probe labels: input indices and its divergence table."""

    block: ChannelBlock
    uniques: list[Any]
    div: Divergences
    # cell blocks: on/off [P, w]; label blocks: inp [P, w]; record blocks: inp [L, P, w];
    # feature blocks: inp [F, 1] at the feature probes ``features`` (the two ends first)
    on: np.ndarray[Any, Any] | None
    off: np.ndarray[Any, Any] | None
    inp: np.ndarray[Any, Any] | None
    features: tuple[float, ...] = ()


def _index(values: list[tuple[Any, ...]], uniques: dict[Any, int], where: str) -> Any:
    widths = {len(v) for v in values}
    if len(widths) > 1:
        raise ValueError(f"{where} returned inputs of different widths {sorted(widths)}")
    for v in values:
        for a in v:
            uniques.setdefault(a, len(uniques))
    return np.asarray([[uniques[a] for a in v] for v in values], dtype=np.int64).reshape(
        len(values), -1
    )


def _evaluate(block: ChannelBlock, ts: list[Any], n_cells: int) -> _Evaluated:
    uniques: dict[Any, int] = {}
    on = off = inp = None
    features: tuple[float, ...] = ()
    if isinstance(block, FeatureBlock) and block.levels is not None:
        # features enter through random levels: every level pair is a candidate; the worst pair
        # goes first, where the corner logic looks (FeatureBlock docstring)
        values = [float(x) for x in block.levels]
        inputs = [block.feature_map(x) for x in values]
        table = np.asarray(block.channel.divergences(inputs).value, dtype=np.float64)
        i, j = np.unravel_index(int(np.argmax(table)), table.shape)
        rest = [k for k in range(len(values)) if k not in (i, j)]
        order = [int(i), int(j), *rest] if i != j else [int(i), *rest]
        features = tuple(values[k] for k in order)
        rows = [_tuple((block.feature_map(x),), block.name) for x in features]
        inp = _index(rows, uniques, block.name)
    elif isinstance(block, FeatureBlock):
        lo, hi = block.bounds
        inner = np.linspace(lo, hi, INTERIOR_LABELS + 2)[1:-1]
        features = (lo, hi, *(float(x) for x in inner))
        rows = [_tuple((float(block.feature_map(x)),), block.name) for x in features]
        inp = _index(rows, uniques, block.name)
    elif isinstance(block, CellBlock):
        on = _index(
            [_tuple(evaluate_inputs(block.on, t), f"{block.name}.on") for t in ts],
            uniques,
            block.name,
        )
        off = _index(
            [_tuple(evaluate_inputs(block.off, t), f"{block.name}.off") for t in ts],
            uniques,
            block.name,
        )
        if on.shape[1] != off.shape[1]:
            raise ValueError(f"{block.name}: on and off must return inputs of equal width")
    elif isinstance(block, LabelBlock):
        inp = _index(
            [_tuple(evaluate_inputs(block.inputs, t), block.name) for t in ts], uniques, block.name
        )
    else:
        rows = [_tuple(block.inputs(j, t), block.name) for j in range(n_cells) for t in ts]
        inp = _index(rows, uniques, block.name).reshape(n_cells, len(ts), -1)
    keys = list(uniques)
    div = block.channel.divergences(keys)
    n = len(keys)
    if np.asarray(div.value).shape != (n, n):
        raise ValueError(f"{block.name}: channel divergences must have shape ({n}, {n})")
    return _Evaluated(
        block=block, uniques=keys, div=div, on=on, off=off, inp=inp, features=features
    )


def _pair_sum(
    d: FloatArray,
    a: np.ndarray[Any, Any],
    b: np.ndarray[Any, Any],
    d_const: FloatArray | None = None,
) -> FloatArray:
    """``out[p, q] = sum_i d[a[p, i], b[q, i]]``, reading ``d_const`` instead of ``d`` for the
    slots ``i`` whose input is the same at every probe in both ``a`` and ``b``."""
    if d_const is None:
        out: FloatArray = d[a[:, None, :], b[None, :, :]].sum(axis=-1)
        return out
    const = np.all(a == a[:1], axis=0) & np.all(b == b[:1], axis=0)
    terms = np.where(const, d_const[a[:, None, :], b[None, :, :]], d[a[:, None, :], b[None, :, :]])
    summed: FloatArray = terms.sum(axis=-1)
    return summed


def _times(count: int, x: FloatArray) -> FloatArray:
    """``count * x`` with ``0 * inf = 0``."""
    return np.zeros_like(x) if count == 0 else count * x


def _block_terms(
    ev: _Evaluated,
    n_cells: int,
    d: FloatArray | None = None,
    d_const: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, Any, Any]:
    """``(same[P, P], diff[P, P], same_cells, diff_cells)``: the block's contribution to the
    ratio of records in the same / different cells, and (record blocks) the cells attaining it.

    ``d`` replaces the divergence table (the sampler's delta costs use this), and ``d_const`` is
    read for cell- and label-block slots whose input is one constant (see :func:`_pair_sum`)."""
    d = np.asarray(ev.div.value, dtype=np.float64) if d is None else d
    if isinstance(ev.block, FeatureBlock):
        # the same for every record pair; the joint corner orientation is chosen by the caller
        zero = np.zeros((1, 1))
        return zero, zero, None, None
    if isinstance(ev.block, CellBlock):
        assert ev.on is not None and ev.off is not None
        off_off = _pair_sum(d, ev.off, ev.off, d_const)
        same = _pair_sum(d, ev.on, ev.on, d_const) + _times(n_cells - 1, off_off)
        diff = (
            _pair_sum(d, ev.on, ev.off, d_const)
            + _pair_sum(d, ev.off, ev.on, d_const)
            + _times(max(n_cells - 2, 0), off_off)
        )
        return same, diff, None, None
    assert ev.inp is not None
    if isinstance(ev.block, LabelBlock):
        u = _pair_sum(d, ev.inp, ev.inp, d_const)
        return u, u, None, None
    n_probe = ev.inp.shape[1]
    flat = ev.inp.reshape(n_cells * n_probe, -1)
    same = np.full((n_probe, n_probe), -np.inf)
    diff = np.full((n_probe, n_probe), -np.inf)
    same_cells = np.zeros((n_probe, n_probe, 2), dtype=np.int64)
    diff_cells = np.zeros((n_probe, n_probe, 2), dtype=np.int64)
    chunk = max(1, 4_000_000 // max(1, flat.shape[0] * flat.shape[1]))
    for start in range(0, n_cells, chunk):
        stop = min(n_cells, start + chunk)
        rows = flat[start * n_probe : stop * n_probe]
        r = _pair_sum(d, rows, flat).reshape(stop - start, n_probe, n_cells, n_probe)
        for j in range(start, stop):
            block = r[j - start]  # [P, L, P]
            s = block[:, j, :]
            better = s > same
            same = np.where(better, s, same)
            same_cells[better] = (j, j)
            masked = block.copy()
            masked[:, j, :] = -np.inf
            best = np.argmax(masked, axis=1)  # [P, P]
            val = np.take_along_axis(masked, best[:, None, :], axis=1)[:, 0, :]
            better = val > diff
            diff = np.where(better, val, diff)
            diff_cells[better] = np.stack([np.full_like(best, j), best], axis=-1)[better]
    return same, diff, same_cells, diff_cells


def _feature_corner(ev: _Evaluated, orientation: tuple[int, int]) -> float:
    """``D(f(x_a), f(x_b))`` per coordinate for the corners ``orientation`` (0 = lo, 1 = hi)."""
    assert ev.inp is not None
    d = np.asarray(ev.div.value, dtype=np.float64)
    return float(d[ev.inp[orientation[0], 0], ev.inp[orientation[1], 0]])


def _feature_problems(ev: _Evaluated) -> list[str]:
    """Checks of a feature block's declaration on its probes (module docstring)."""
    assert ev.inp is not None and isinstance(ev.block, FeatureBlock)
    if ev.block.levels is not None:
        return []  # the worst level pair is evaluated directly: nothing to prove by convexity
    problems = []
    if not isinstance(ev.block.feature_map, AffineLabelMap):
        problems.append(
            f"block {ev.block.name!r}: feature_map is an arbitrary callable, whose monotonicity "
            "can only be checked at finitely many features; declare it as an AffineLabelMap "
            "(clip, then affine: monotone by construction)"
        )
    values = [ev.uniques[int(i)] for i in ev.inp[:, 0]]
    xs = np.asarray(ev.features)
    order = np.argsort(xs)
    v = np.asarray([float(x) for x in values])[order]
    if not (np.all(np.diff(v) >= 0) or np.all(np.diff(v) <= 0)):
        problems.append(f"block {ev.block.name!r}: feature_map is not monotone")
    if not _affine_ok(values, list(ev.features)):
        problems.append(f"block {ev.block.name!r}: feature_map is not affine")
    d = np.asarray(ev.div.value, dtype=np.float64)
    corner = max(_feature_corner(ev, (0, 1)), _feature_corner(ev, (1, 0)))
    inner = float(d[np.ix_(ev.inp[:, 0], ev.inp[:, 0])].max())
    if inner > corner + 1e-12 * max(1.0, abs(corner)):
        problems.append(
            f"block {ev.block.name!r}: an interior feature pair reaches {inner:.12g} > "
            f"{corner:.12g} at the box corners: not convex as declared"
        )
    return problems


def _coordinate_inputs(
    ev: _Evaluated, cell: int, probe: int, n_cells: int, corner: int = 0
) -> list[int]:
    """Flat (cell-major) input indices of every coordinate of the block for one record
    (feature blocks: every coordinate at the feature probe ``corner``)."""
    if isinstance(ev.block, FeatureBlock):
        assert ev.inp is not None
        return [int(ev.inp[corner, 0])] * ev.block.n_features
    if isinstance(ev.block, CellBlock):
        assert ev.on is not None and ev.off is not None
        rows = [ev.on[probe] if c == cell else ev.off[probe] for c in range(n_cells)]
        return [int(i) for row in rows for i in row]
    assert ev.inp is not None
    row = ev.inp[probe] if isinstance(ev.block, LabelBlock) else ev.inp[cell, probe]
    return [int(i) for i in row]


def _affine_ok(values: list[Any], ts: list[float]) -> bool:
    """Constant, or numeric and affine in ``t`` (to ``1e-9`` relative)."""
    if all(v == values[0] for v in values):
        return True
    try:
        v = np.asarray([float(x) for x in values])
    except (TypeError, ValueError):
        return False
    t = np.asarray(ts, dtype=np.float64)
    i, k = int(np.argmin(t)), int(np.argmax(t))
    if t[k] == t[i]:
        return bool(np.all(v == v[0]))
    slope = (v[k] - v[i]) / (t[k] - t[i])
    pred = v[i] + slope * (t - t[i])
    return bool(np.all(np.abs(pred - v) <= 1e-9 * (np.abs(v).max() + 1.0)))


def _declaration_problems(
    evaluated: list[_Evaluated], index_blocks: list[IndexBlock], ts: list[float]
) -> list[str]:
    """Why real labels are not covered by the extreme labels, if they are not: every input that
    can depend on the label must be declared as *data* (constants and
    :class:`~ldptree.accounting.AffineInput` terms: affine in ``t`` by construction) and its
    channel ``convex_in_location``; a Python function of ``t`` is refused, since its values
    between the evaluated labels are unknown (a function can even detect a probe and answer
    it differently). Convexity is cross-checked on the evaluated labels."""
    problems = []
    for ev in evaluated:
        block = ev.block
        if isinstance(block, FeatureBlock):
            continue  # checked by _feature_problems, whatever the labels
        if isinstance(block, RecordBlock):
            problems.append(
                f"block {block.name!r}: a RecordBlock's inputs are a Python function of "
                "(cell, t), which finitely many labels cannot certify for every real label; "
                "declare label_levels (labels enter through random levels) or finite labels"
            )
            continue
        specs = [block.on, block.off] if isinstance(block, CellBlock) else [block.inputs]
        if not all(is_data(spec) for spec in specs):
            problems.append(
                f"block {block.name!r}: its inputs are a Python function of the label "
                "coordinate t, which finitely many labels cannot certify for every real label; "
                "declare them as data (constants and AffineInput(slope, intercept) terms), or "
                "declare label_levels or finite labels"
            )
            continue
        varying = any(
            isinstance(item, AffineInput) and item.slope != 0.0
            for spec in specs
            if isinstance(spec, tuple)
            for item in spec
        )
        if varying and not block.channel.convex_in_location:
            problems.append(
                f"block {block.name!r}: inputs depend on the label but its channel is not "
                "convex_in_location, so only the evaluated labels are covered"
            )
    for index_block in index_blocks:
        if callable(index_block.label_index):
            problems.append(
                f"block {index_block.name!r}: label_index is a Python function of t, which "
                "finitely many labels cannot certify for every real label; declare "
                "label_levels or finite labels"
            )
    return problems


def _index_divergence(block: IndexBlock, n_cells: int) -> float:
    """``|log(keep / other)|``: the max-divergence of two different indices (0 when the
    response has a single value); from the integers when the block declares counts."""
    if n_cells * block.per_cell == 1:
        return 0.0
    if block.counts is not None:
        keep, other, _ = block.counts
        if other == 0 or keep == 0:
            return math.inf
        return abs(math.log1p((keep - other) / other))
    return abs(block.log_keep - block.log_other)


def _index_problems(block: IndexBlock, n_cells: int) -> list[str]:
    """The index law must be a law: ``keep + (k - 1) other`` is the total (exactly, for
    counts), and the declared log-probabilities agree with the counts."""
    k = n_cells * block.per_cell
    name = f"block {block.name!r}"
    if block.counts is not None:
        keep, other, total = block.counts
        if keep + (k - 1) * other != total:
            return [
                f"{name}: keep + (k - 1) other = {keep + (k - 1) * other} is not the total "
                f"{total} for k = {k} values: not a law"
            ]
        for value, count in ((block.log_keep, keep), (block.log_other, other)):
            expected = math.log(count / total) if count else -math.inf
            if not (value == expected or abs(value - expected) <= 1e-12 * (1.0 + abs(expected))):
                return [f"{name}: log_keep/log_other disagree with the declared counts: not a law"]
        return []
    mass = math.exp(block.log_keep) + (k - 1) * math.exp(block.log_other)
    if not abs(mass - 1.0) <= 1e-9:
        return [
            f"{name}: exp(log_keep) + (k - 1) exp(log_other) = {mass:.12g} for k = {k} values: "
            "the probabilities do not sum to one (within 1e-9), so it is not a law"
        ]
    return []


def _channel_problems(block: Any) -> list[str]:
    """A channel's divergences are read, not recomputed, so only the library's channel classes
    are accepted: :class:`~ldptree.accounting.FiniteChannel` (whose divergences the library
    computes from the declared, normalisation-checked probabilities), the Laplace channel and
    the mechanism kit's channels. Another object with the ``Channel`` methods could report any
    divergence."""
    channel = getattr(block, "channel", None)
    if channel is None:
        return []
    module = type(channel).__module__
    if module == "ldptree" or module.startswith("ldptree."):
        return []
    return [
        f"block {block.name!r}: its channel {type(channel).__name__} is not a library channel, "
        "so its divergences and normalisation cannot be checked; describe it as a "
        "FiniteChannel (finite outputs and their probabilities)"
    ]


def _index_terms(block: IndexBlock, ts: list[Any], n_cells: int) -> tuple[FloatArray, FloatArray]:
    """``(same[P, P], diff[P, P])`` of an :class:`~ldptree.accounting.IndexBlock`: records in
    different cells always have different indices; in the same cell the index differs when the
    label index does."""
    d = _index_divergence(block, n_cells)
    g = np.asarray([block.offset(t) for t in ts])
    same: FloatArray = np.where(g[:, None] != g[None, :], d, 0.0)
    diff: FloatArray = np.full((len(ts), len(ts)), d)
    return same, diff


def _index_witness(
    block: IndexBlock, a: tuple[int, Any], b: tuple[int, Any]
) -> tuple[str, float, int, tuple[float, float]]:
    """The output attaining the index block's divergence for records ``a``, ``b`` (their cells and
    label coordinates): the index of the record whose value is more likely to be kept."""
    ia, ib = block.index(*a), block.index(*b)
    keep_first = block.log_keep >= block.log_other
    out = ia if (ia == ib or keep_first) else ib

    def log_p(i: int) -> float:
        return block.log_keep if out == i else block.log_other

    return block.name, log_p(ia) - log_p(ib), out, (log_p(ia), log_p(ib))


def _channel_log_prob(ev: _Evaluated, outputs: list[Any], inputs: list[int]) -> float:
    """``sum_k log P(s_k | a_k)`` over the block's coordinates (each distinct pair once)."""
    channel: Channel = ev.block.channel
    counts: dict[tuple[Any, int], int] = {}
    for pair in zip(outputs, inputs, strict=True):
        counts[pair] = counts.get(pair, 0) + 1
    terms = (n * channel.log_prob(s, ev.uniques[i]) for (s, i), n in counts.items())
    return float(math.fsum(terms))


def _close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


#: Largest ``n_cells`` :func:`verify_ldp` accepts (its witness is linear in ``n_cells``).
MAX_VERIFIED_CELLS = 2**24


def check_label_codes(labels: Any, name: str) -> list[int]:
    """``labels`` as a list of integer class codes (a float such as 0.5 or a string is not a code
    and must not be certified as one), else a ``TypeError`` naming ``name``."""
    if isinstance(labels, str | bytes):
        raise TypeError(f"{name} must be a sequence of integer class codes, got a string")
    try:
        values = list(labels)
    except TypeError:
        raise TypeError(
            f"{name} must be a sequence of integer class codes, got {type(labels).__name__}"
        ) from None
    for value in values:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(
                f"{name} must hold integer class codes (ints), got {value!r} of type "
                f"{type(value).__name__}"
            )
    return [int(v) for v in values]


def _probe_labels(law: ReportLaw, label_bound: Any, labels: Any) -> tuple[list[Any], bool]:
    """Labels to evaluate and whether they are real: the finite domain, the label levels, or for
    real labels the ends of ``label_bound`` first, then ``INTERIOR_LABELS`` interior points."""
    if law.labels is not None:
        probes = list(law.labels if labels is None else check_label_codes(labels, "labels"))
        if not probes:
            raise ValueError("labels must contain at least one label")
        return probes, False
    if labels is not None:
        raise ValueError(
            "labels= is for mechanisms with finite labels; this one takes real labels: pass "
            "label_bound=(lo, hi)"
        )
    if law.label_levels is not None:
        return [float(v) for v in law.label_levels], False
    if label_bound is None:
        raise ValueError(
            "label_bound is required for a mechanism with real labels: pass the label domain "
            "to certify, e.g. wider than the mechanism's own bound to check that it clips"
        )
    lo, hi = check_bounds(label_bound, "label_bound")
    inner = np.linspace(lo, hi, INTERIOR_LABELS + 2)[1:-1]
    return [lo, hi, *(float(y) for y in inner)], True


def _sampled_caveats(
    evaluated: list[_Evaluated],
    n_cells: int,
    real: bool,
    coordinate_pairs: dict[str, list[tuple[int, int]]],
    exact_sampled_delta: bool,
) -> tuple[list[SampledCaveat], float]:
    """One caveat per block whose channel has a sampler, and the certified ``delta`` as sampled.

    Argument. Fix records ``x, x'``. Coordinate ``k`` of the report is sampled from a law within
    total variation ``tau_k`` of its declared law at each input (``tv_bound`` of the channel's
    sampler; 0 for exact samplers). If its two inputs are *equal*, its sampled law is the same
    under ``x`` and ``x'``: it is ``(0, 0)``-private for this pair and adds nothing. If they
    differ, for every event ``S``: ``P~(S|a) <= P(S|a) + tau <= e^D P(S|b) + tau <=
    e^D P~(S|b) + tau (1 + e^D)`` with ``D = D_k(a, b)`` its own max-divergence, so it is
    ``(D_k, tau_k (1 + e^{D_k}))``-private. The coordinates are sampled independently, so basic
    composition makes the report ``(sum_k D_k, sum_k tau_k (1 + e^{D_k}))``-private for this pair,
    and ``sum_k D_k <= epsilon_bound``. The certificate's ``delta`` is the supremum over record
    pairs of that sum (capped at 1), computed with the same closed forms as the ratio itself, with
    the cost table ``c(a, b) = tau (1 + e^{D(a, b)})`` for ``a != b`` and ``c(a, a) = 0``:

    * finite labels (or label levels) are enumerated: the supremum is exact over record pairs;
    * real labels: a coordinate whose two inputs are one constant (e.g. the other cells'
      coordinates of a one-hot encoding) costs 0 everywhere; every other coordinate is charged
      ``h(a, b) = tau (1 + e^{D(a, b)})`` *including* when its inputs happen to be equal
      (``2 tau``). ``h`` is a convex function of the input difference (``exp`` of a convex
      ``D``), the inputs are affine in ``(t, t')``, so the charged sum is convex in ``(t, t')``
      and is largest at the extreme labels, which are among the evaluated labels.

    The cost therefore does not grow with the number of cells when the other cells' coordinates
    are constant, as in one-hot encodings.
    """
    sampled_evs = [ev for ev in evaluated if ev.block.channel.sampling is not None]
    if not sampled_evs:
        return [], 0.0
    shares: list[tuple[FloatArray, FloatArray]] = []
    feature_costs: list[float] = []
    tvs: list[float] = []
    for ev in sampled_evs:
        sampling = ev.block.channel.sampling
        assert sampling is not None
        tv = float(sampling.tv_bound(ev.uniques))
        tvs.append(tv)
        d = np.asarray(ev.div.value, dtype=np.float64)
        with np.errstate(over="ignore"):
            full = tv * (1.0 + np.exp(np.minimum(d, 700.0)))
        zero = full.copy()
        np.fill_diagonal(zero, 0.0)
        if isinstance(ev.block, FeatureBlock):
            assert ev.inp is not None
            lo, hi = int(ev.inp[0, 0]), int(ev.inp[1, 0])
            # every feature coordinate's inputs differ at the box corners, either orientation
            feature_costs.append(ev.block.n_features * float(max(zero[lo, hi], zero[hi, lo])))
            shares.append((np.zeros((1, 1)), np.zeros((1, 1))))
            continue
        if real:
            same, diff, _, _ = _block_terms(ev, n_cells, full, zero)
        else:
            same, diff, _, _ = _block_terms(ev, n_cells, zero)
        feature_costs.append(0.0)
        shares.append((same, diff))
    total_same = sum((sh[0] for sh in shares), np.zeros((1, 1)))
    total_diff = sum((sh[1] for sh in shares), np.zeros((1, 1)))
    candidates = [total_same]
    if n_cells >= 2:
        candidates.append(total_diff)
    best = max(range(len(candidates)), key=lambda i: float(np.max(candidates[i])))
    where = np.unravel_index(int(np.argmax(candidates[best])), candidates[best].shape)
    fixed = math.fsum(feature_costs)
    delta = min(1.0, float(candidates[best][where]) + fixed)
    sampled = []
    for ev, tv, (same, diff), extra in zip(sampled_evs, tvs, shares, feature_costs, strict=True):
        sampling = ev.block.channel.sampling
        assert sampling is not None
        table = same if best == 0 else diff
        share = float(table[where] if table.shape == candidates[best].shape else table.max())
        d = np.asarray(ev.div.value)
        unreachable = None
        exact_delta = None
        for i, k in coordinate_pairs[ev.block.name]:
            if i == k:
                continue
            a, b = ev.uniques[i], ev.uniques[k]
            if unreachable is None:
                unreachable = sampling.unreachable(a, b)
            if exact_sampled_delta and exact_delta is None:
                exact_delta = sampling.exact_delta(a, b, float(d[i, k]))
        sampled.append(
            SampledCaveat(
                block=ev.block.name,
                note=sampling.note,
                tv_bound=tv,
                delta=min(1.0, share + extra),
                unreachable=unreachable,
                exact_delta=exact_delta,
            )
        )
    return sampled, delta


# -- the verifier -------------------------------------------------------------------------------
def verify_ldp(
    mechanism: VerifiableMechanism[ReportT, StatsT],
    *,
    n_cells: int,
    label_bound: Any = None,
    labels: Sequence[Any] | None = None,
    tolerance: float = 1e-9,
    exact_sampled_delta: bool = False,
    check_sampler: bool = False,
    key: Any = None,
    n_sampler: int = 20_000,
) -> LDPCertificate:
    """Certify ``mechanism``'s epsilon-LDP claim for ``n_cells`` cells (module docstring).

    Parameters
    ----------
    mechanism:
        A :class:`~ldptree.accounting.VerifiableMechanism` (a mechanism with ``report_law``).
    n_cells:
        Number of cells of the published partition.
    label_bound:
        Real labels: the label domain ``[lo, hi]`` (or ``M`` for ``[-M, M]``) over which record
        pairs are certified. Pass a range wider than the mechanism's own bound to certify that it
        clips. Ignored for mechanisms with finite labels.
    labels:
        Finite labels: the label domain to enumerate (default: the report law's ``labels``).
    tolerance:
        ``holds`` allows ``epsilon_bound`` to exceed the claim by ``tolerance * max(1, claim)``
        (float64 rounding of log-probabilities).
    exact_sampled_delta:
        Also compute each sampler's exact delta at the witness pair (can take seconds).
    check_sampler:
        Also cross-check ``privatize`` against the declared law
        (:func:`~ldptree.testing.check_sampler` with ``n_sampler`` reports per record and PRNG
        ``key``, default ``PRNGKey(0)``); a rejection makes ``holds`` false.
    """
    if not isinstance(mechanism, VerifiableMechanism):
        raise TypeError(
            "mechanism must implement the Mechanism protocol and report_law(n_cells) -> "
            f"ReportLaw (see ldptree.accounting.ReportLaw), got {type(mechanism).__name__}"
        )
    claim = check_real(mechanism.epsilon, "mechanism.epsilon")
    delta_claimed = check_real(getattr(mechanism, "delta", 0.0), "mechanism.delta")
    if not 0.0 <= delta_claimed <= 1.0:
        raise ValueError(f"mechanism.delta must lie in [0, 1], got {delta_claimed}")
    n_cells = check_int(n_cells, "n_cells", minimum=1)
    if n_cells > MAX_VERIFIED_CELLS:
        raise NotApplicableError(
            f"n_cells must be <= 2**24 for verify_ldp (its witness report lists every cell, so "
            f"the work grows linearly in n_cells), got {n_cells}"
        )
    if key is not None:
        check_key(key, "key")
    tol = check_real(tolerance, "tolerance")
    if tol < 0:
        raise ValueError(f"tolerance must be >= 0, got {tol}")
    law = mechanism.report_law(n_cells)
    if not isinstance(law, ReportLaw):
        raise TypeError(f"report_law must return a ReportLaw, got {type(law).__name__}")

    notes: list[str] = []
    probes, real = _probe_labels(law, label_bound, labels)
    ts = [law.label_coordinate(y) for y in probes]

    index_blocks = [b for b in law.blocks if isinstance(b, IndexBlock)]
    evaluated = [_evaluate(b, ts, n_cells) for b in law.blocks if not isinstance(b, IndexBlock)]
    n_probe = len(probes)
    same_total = np.zeros((n_probe, n_probe))
    diff_total = np.zeros((n_probe, n_probe))
    if n_cells < 2:
        diff_total -= np.inf
    terms = []
    for ev in evaluated:
        same, diff, same_cells, diff_cells = _block_terms(ev, n_cells)
        same_total = same_total + same
        if n_cells >= 2:
            diff_total = diff_total + diff
        terms.append((same, diff, same_cells, diff_cells))
    for block in index_blocks:
        same, diff = _index_terms(block, ts, n_cells)
        same_total = same_total + same
        if n_cells >= 2:
            diff_total = diff_total + diff

    # feature blocks: one term for every record pair, at the jointly worst corner orientation
    feature_evs = [ev for ev in evaluated if isinstance(ev.block, FeatureBlock)]
    feature_blocks = [ev.block for ev in evaluated if isinstance(ev.block, FeatureBlock)]
    orientation = (0, 1)
    feature_problems: list[str] = []
    if feature_blocks:
        shapes = {(b.n_features, b.bounds) for b in feature_blocks}
        if len(shapes) > 1:
            raise ValueError(
                "all FeatureBlocks of a report law must share n_features and bounds (they "
                f"release the same feature vector), got {sorted(shapes)}"
            )
        n_feat = feature_blocks[0].n_features
        totals = {
            o: n_feat * math.fsum(_feature_corner(ev, o) for ev in feature_evs)
            for o in ((0, 1), (1, 0))
        }
        orientation = max(totals, key=lambda o: totals[o])
        same_total = same_total + totals[orientation]
        diff_total = diff_total + totals[orientation]
        for ev in feature_evs:
            feature_problems.extend(_feature_problems(ev))

    certified = all(ev.div.exact for ev in evaluated)
    if not certified:
        notes.append("some channel divergences are upper bounds, not attained values")
    best_same = np.unravel_index(int(np.argmax(same_total)), same_total.shape)
    best_diff = np.unravel_index(int(np.argmax(diff_total)), diff_total.shape)
    use_diff = diff_total[best_diff] > same_total[best_same]
    p, q = (int(i) for i in (best_diff if use_diff else best_same))
    lower = float(diff_total[p, q] if use_diff else same_total[p, q])
    law_problems = list(feature_problems)
    for any_block in law.blocks:
        law_problems.extend(_channel_problems(any_block))
    for block in index_blocks:
        law_problems.extend(_index_problems(block, n_cells))
    proven = not law_problems
    notes.extend(law_problems)
    if real and not isinstance(law.label_map, AffineLabelMap):
        proven = False
        notes.append(
            "real labels: label_map is an arbitrary callable, whose monotonicity and affinity "
            "can only be checked at finitely many labels, which proves nothing about the labels "
            "in between; declare it as an AffineLabelMap (clip, then affine) or declare "
            "label_levels (labels enter through a random level), or finite labels"
        )
    if law.label_levels is not None:
        notes.append(
            f"certified for every real label: labels enter the report through a random level "
            f"among {len(probes)} levels, and a mixture of the level laws is no less private "
            "than the worst level pair"
        )
    if real:
        problems = _declaration_problems(evaluated, index_blocks, ts)
        corner = max(float(same_total[:2, :2].max()), float(diff_total[:2, :2].max()))
        if lower > corner + 1e-12 * max(1.0, abs(corner)):
            problems.append(
                f"an interior label pair reaches {lower:.12g} > {corner:.12g} at the extreme "
                "labels: the report law is not convex in the label as declared"
            )
        if problems:
            proven = False
            notes.extend(problems)

    # cells of the witness pair
    cell_a, cell_b = (0, 1) if use_diff else (0, 0)
    for (_, _, same_cells, diff_cells), ev in zip(terms, evaluated, strict=True):
        if isinstance(ev.block, RecordBlock):
            cells = diff_cells if use_diff else same_cells
            cell_a, cell_b = int(cells[p, q, 0]), int(cells[p, q, 1])
    record_a = (cell_a, probes[p])
    record_b = (cell_b, probes[q])

    parts = []
    outputs: dict[str, list[Any]] = {}
    consistent = True
    lp_law = [0.0, 0.0]
    coordinate_pairs: dict[str, list[tuple[int, int]]] = {}
    for ev in evaluated:
        ia = _coordinate_inputs(ev, cell_a, p, n_cells, orientation[0])
        ib = _coordinate_inputs(ev, cell_b, q, n_cells, orientation[1])
        d = np.asarray(ev.div.value)
        parts.append((ev.block.name, float(sum(d[i, k] for i, k in zip(ia, ib, strict=True)))))
        outs = [ev.div.witness[i][k] for i, k in zip(ia, ib, strict=True)]
        outputs[ev.block.name] = outs
        coordinate_pairs[ev.block.name] = list(zip(ia, ib, strict=True))
        if math.isfinite(lower):
            lp_law[0] += _channel_log_prob(ev, outs, ia)
            lp_law[1] += _channel_log_prob(ev, outs, ib)
    for block in index_blocks:
        name, value, out, lp = _index_witness(block, (cell_a, ts[p]), (cell_b, ts[q]))
        parts.append((name, value))
        outputs[name] = [out]
        lp_law[0] += lp[0]
        lp_law[1] += lp[1]
    report: Any = outputs
    witness_features = None
    extra_a: dict[str, Any] = {}
    extra_b: dict[str, Any] = {}
    if feature_blocks:
        first = feature_evs[0]
        witness_features = (
            (first.features[orientation[0]],) * n_feat,
            (first.features[orientation[1]],) * n_feat,
        )
        extra_a = {"features": np.asarray(witness_features[0])}
        extra_b = {"features": np.asarray(witness_features[1])}
    if law.assemble is not None:
        report = law.assemble(outputs)
        if math.isfinite(lower):
            lp_a = float(mechanism.log_prob(report, cell_a, probes[p], n_cells, **extra_a))
            lp_b = float(mechanism.log_prob(report, cell_b, probes[q], n_cells, **extra_b))
            if not (_close(lp_a, lp_law[0]) and _close(lp_b, lp_law[1])):
                consistent = False
                notes.append(
                    "the report law disagrees with mechanism.log_prob at the witness: "
                    f"log P(s|x) = {lp_law[0]:.12g} (law) vs {lp_a:.12g} (log_prob), "
                    f"log P(s|x') = {lp_law[1]:.12g} (law) vs {lp_b:.12g} (log_prob)"
                )
    witness = Witness(
        record=record_a,
        other=record_b,
        report=report,
        log_ratio=lower,
        parts=tuple(parts),
        features=witness_features,
    )

    bound = lower if (certified and proven and consistent) else math.inf
    exact = bound == lower
    # relative: an absolute allowance would let a 2x over-claim pass at a tiny epsilon
    declared_holds = bound <= claim * (1.0 + tol)

    sampled, sampled_delta = _sampled_caveats(
        evaluated, n_cells, real, coordinate_pairs, exact_sampled_delta
    )
    delta = sampled_delta if declared_holds else None
    law_holds = declared_holds and delta is not None and delta <= delta_claimed
    if declared_holds and not law_holds:
        notes.append(
            f"the declared law holds but the sampler only approximates it: delta {delta:.3g} "
            f"as sampled exceeds the claimed delta {delta_claimed:.3g}"
        )
    sampler_result = None
    if check_sampler:
        sampler_result = _check_sampler(
            mechanism,
            n_cells,
            label_bound=label_bound,
            labels=labels,
            n=n_sampler,
            key=jax.random.PRNGKey(0) if key is None else key,
        )
        if sampler_result.rejected:
            law_holds = False
            notes.append("privatize does not sample the declared report law (sampler check)")
    origin = provenance(mechanism)
    holds = law_holds and origin.proven
    if law_holds and not origin.proven:
        notes.append(
            "not proven as implemented: the law is certified, but the sampler is hand-written, "
            "so that it samples this law is only tested (check_sampler), never proven"
        )
    if real and proven:
        notes.append(
            f"certified for every real label in [{probes[0]:.6g}, {probes[1]:.6g}] "
            "(convex report law: the extreme labels are the worst case)"
        )
    return LDPCertificate(
        epsilon_claimed=claim,
        epsilon_bound=bound,
        epsilon_lower=lower,
        exact=exact,
        declared_holds=declared_holds,
        holds=holds,
        tolerance=tol,
        witness=witness,
        delta=delta,
        sampled=tuple(sampled),
        notes=tuple(notes),
        delta_claimed=delta_claimed,
        sampler_check=sampler_result,
        law_holds=law_holds,
        provenance=origin,
    )
