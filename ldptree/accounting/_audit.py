"""``audit_ldp``: a black-box, statistically valid *lower* bound on a mechanism's epsilon.

Only ``privatize`` is used. For records ``x, x'`` and any event ``E`` of the report space, an
``(epsilon, delta)``-LDP mechanism satisfies ``P(E | x) <= e^epsilon P(E | x') + delta``, so

    epsilon >= log((P(E | x) - delta) / P(E | x')).

With Clopper–Pearson bounds (:mod:`ldptree.accounting._binomial`) ``P_lo(E|x)`` and ``P_hi(E|x')``
from independent samples, ``log((P_lo - delta) / P_hi)`` is a lower bound on epsilon that holds
with probability at least ``1 - 2a``. Events are *chosen* on one split of the samples and
*evaluated* on the other, so the choice does not bias the evaluation; a Bonferroni correction over
the ``m`` evaluated events (``a = (1 - confidence) / (2 m)``) makes all bounds hold simultaneously
with probability at least ``confidence``, and ``epsilon_lower`` is the largest of them.

Comparisons. Records are the first, second and last cell (own cell vs others, first vs last) times
the labels (the ends of ``label_bound``, or the given class labels); every pair of them is
compared on single reports, and so is the first record with a middle and a random cell (a leak
confined to one cell). Across holders (``holder_pairs``): holders ``h`` and ``h + 1`` are
privatized together (in both pairings, ``first_holder`` 0 and 1), holder ``h``'s record changing
and holder ``h + 1``'s fixed; the joint reports, with their difference as extra columns, are
compared. For independent holders the joint likelihood ratio is holder ``h``'s own, so the same
bound applies; holders that reuse randomness show up in the difference.

Exact bits (``exact_bits``): every float column also contributes two discrete columns with
exact-value bins: its lowest 4 representation bits and its *grain* ``e`` (the value is ``m 2^e``
with ``m`` odd). A support that depends on the record (``y + N`` in floating point: for ``y = 1``
every output is a multiple of ``ulp(1) / 2``, for ``y = 0`` small outputs are not) or a leak in
the low mantissa bits is invisible to quantile bins and plain in these columns.

Choice of events (on the selection split, per comparison): every report is flattened to numbers
and each column's law under ``x`` and ``x'`` is estimated (exact values when a column takes few
values, else quantile bins); columns whose laws do not differ (G-test, ``p > 0.05``) are dropped,
and the rest are combined into the naive-Bayes log-likelihood ratio score. This is the
Neyman–Pearson statistic when the report's coordinates are independent given the record, as in
every built-in. A second, *joint* score is fitted the same way on each multi-coordinate leaf's
whole row (its exact value for integer leaves) and row sum, which sees dependence between
coordinates that every marginal misses. The events are ``{score >= t}`` (favouring ``x``) and
``{score <= t}`` (favouring ``x'``); the score and ``t`` maximising the Clopper–Pearson lower bound
on the selection split give the one event evaluated on the rest (choosing among scores on the
selection split costs no extra test). Every report carries a code of its structure (dtypes,
shapes): a structure that depends on the record is an event of probability one against zero.

What an audit can and cannot show: a ``refuted`` claim is false with probability at least
``confidence`` (the mechanism is not ``epsilon_claimed``-LDP); an unrefuted claim proves nothing —
violations on events of probability far below ``1 / n_samples`` (e.g. a rare leak) are invisible
to sampling. Certification is :func:`~ldptree.accounting.verify_ldp`'s job.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Sequence
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import check_bounds, check_int, check_key, check_real
from ldptree.accounting._binomial import binomial_lower, binomial_upper
from ldptree.accounting._verify import check_label_codes
from ldptree.protocols import Mechanism

__all__ = ["AuditResult", "audit_ldp"]

_MAX_DISCRETE = 128
_BINS = 64
_THRESHOLDS = 200
_LOW_BITS = 4


@attrs.frozen(eq=False)
class AuditResult:
    """Result of :func:`audit_ldp`.

    ``epsilon_lower`` holds with probability at least ``confidence`` (simultaneously for the
    ``n_tests`` events evaluated); ``refuted`` is ``epsilon_lower > epsilon_claimed``. The best
    event separates ``record`` from ``other``: ``counts = (k, n, k', n')`` of its occurrences
    in the evaluation split under each.
    """

    epsilon_claimed: float
    epsilon_lower: float
    refuted: bool
    confidence: float
    n_samples: int
    n_tests: int
    record: tuple[int, Any]
    other: tuple[int, Any]
    event: str
    counts: tuple[int, int, int, int]

    def __str__(self) -> str:
        verdict = "REFUTED" if self.refuted else "not refuted"
        k, n, k2, n2 = self.counts
        return (
            f"audit: claim epsilon={self.epsilon_claimed:.6g} {verdict}; epsilon >= "
            f"{self.epsilon_lower:.6g} with confidence {self.confidence:g} ({self.n_tests} events, "
            f"{self.n_samples} reports); best event {self.event} on records {self.record} vs "
            f"{self.other}: {k}/{n} vs {k2}/{n2}"
        )


#: Code of the grain of a zero (below every real grain).
_ZERO_GRAIN = -100_000.0


def _bit_columns(values: np.ndarray[Any, Any]) -> list[FloatArray]:
    """Exact-bit statistics of a float column: its lowest ``_LOW_BITS`` representation bits and
    its *grain* ``e`` (the value is ``m 2^e`` with ``m`` odd; ``_ZERO_GRAIN`` for zero)."""
    info = np.finfo(values.dtype)
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[values.dtype.itemsize]
    bits = values.view(uint).astype(np.uint64)
    mant_bits = int(info.nmant)
    bias = int(info.maxexp) - 1
    exponent = (bits >> np.uint64(mant_bits)) & np.uint64((1 << int(info.nexp)) - 1)
    mantissa = bits & np.uint64((1 << mant_bits) - 1)
    normal = exponent > 0
    full = np.where(normal, mantissa | np.uint64(1 << mant_bits), mantissa)
    lowest = full & (~full + np.uint64(1))  # lowest set bit
    with np.errstate(divide="ignore"):
        trailing = np.log2(lowest.astype(np.float64))
    scale = np.where(normal, exponent.astype(np.float64), 1.0) - bias - mant_bits
    grain = np.where(full == 0, _ZERO_GRAIN, scale + trailing)
    low = (bits & np.uint64((1 << _LOW_BITS) - 1)).astype(np.float64)
    return [low, grain]


#: Multipliers of the row hash of integer leaves (odd, fixed: equal rows hash equally in every
#: sample), and its modulus (exact in float64).
_HASH_MOD = 1 << 52


def _structure_code(report: Any) -> float:
    """A number identifying the report's tree, leaf dtypes and per-holder shapes."""
    leaves, tree = jax.tree_util.tree_flatten(report)
    text = repr((tree, [(str(np.asarray(x).dtype), np.shape(x)[1:]) for x in leaves]))
    return float(int.from_bytes(hashlib.blake2b(text.encode(), digest_size=6).digest(), "big"))


def _row_hash(arr: np.ndarray[Any, Any]) -> FloatArray:
    """Equal integer rows get equal codes (collisions ``~ 2^-52`` per pair of distinct rows)."""
    rng = np.random.default_rng(0x6A09E667)
    mult = rng.integers(1, 1 << 31, arr.shape[1], dtype=np.int64) * 2 + 1
    values = (arr.astype(np.int64) % (1 << 20)) * mult[None, :]
    out: FloatArray = (values.sum(axis=1) % _HASH_MOD).astype(np.float64)
    return out


def _features(report: Any, n: int, exact_bits: bool = True) -> FloatArray:
    """Reports flattened to numbers, one row per holder; with ``exact_bits``, every float column
    is followed by its exact-bit statistics (:func:`_bit_columns`). The last column codes the
    report's structure (dtypes, shapes): a structure that depends on the record is a leak."""
    leaves = jax.tree_util.tree_leaves(report)
    if not leaves:
        raise ValueError("privatize returned no arrays")
    cols = []
    for leaf in leaves:
        arr = np.asarray(leaf).reshape(n, -1)
        cols.append(arr.astype(np.float64))
        if exact_bits and np.issubdtype(arr.dtype, np.floating):
            for k in range(arr.shape[1]):
                cols.extend(c[:, None] for c in _bit_columns(np.ascontiguousarray(arr[:, k])))
    cols.append(np.full((n, 1), _structure_code(report)))
    return np.concatenate(cols, axis=1)


def _joint_features(report: Any, n: int) -> FloatArray:
    """Joint statistics of each multi-coordinate leaf: its row code (integer leaves: the whole
    row as one discrete value) and its row sum; single-coordinate leaves as they are. A leak in
    the joint law of a leaf's coordinates (one shared uniform for every cell bit) is invisible
    to each coordinate alone and plain in these."""
    cols = []
    for leaf in jax.tree_util.tree_leaves(report):
        arr = np.asarray(leaf).reshape(n, -1)
        if arr.shape[1] == 1:
            cols.append(arr.astype(np.float64))
            continue
        if np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
            cols.append(_row_hash(arr)[:, None])
        cols.append(arr.astype(np.float64).sum(axis=1, keepdims=True))
    cols.append(np.full((n, 1), _structure_code(report)))
    return np.concatenate(cols, axis=1)


@attrs.frozen(eq=False)
class _Score:
    """Naive-Bayes log-likelihood ratio of ``x`` vs ``x'`` from per-column laws."""

    columns: tuple[int, ...]
    edges: tuple[FloatArray, ...]
    discrete: tuple[bool, ...]
    llr: tuple[FloatArray, ...]

    def __call__(self, feats: FloatArray) -> FloatArray:
        score = np.zeros(feats.shape[0])
        for col, edges, discrete, llr in zip(
            self.columns, self.edges, self.discrete, self.llr, strict=True
        ):
            values = feats[:, col]
            if discrete:
                idx = np.clip(np.searchsorted(edges, values), 0, edges.size - 1)
                score += np.where(edges[idx] == values, llr[idx], 0.0)
            else:
                score += llr[np.searchsorted(edges, values, side="right")]
        return score


def _fit_score(fx: FloatArray, fy: FloatArray) -> _Score:
    columns, all_edges, kinds, llrs = [], [], [], []
    for col in range(fx.shape[1]):
        pooled = np.concatenate([fx[:, col], fy[:, col]])
        uniques = np.unique(pooled)
        if uniques.size < 2:
            continue
        if uniques.size <= _MAX_DISCRETE:
            edges, discrete = uniques, True
            bx = np.searchsorted(edges, fx[:, col])
            by = np.searchsorted(edges, fy[:, col])
            n_bins = edges.size
        else:
            edges = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, _BINS + 1)[1:-1]))
            discrete = False
            bx = np.searchsorted(edges, fx[:, col], side="right")
            by = np.searchsorted(edges, fy[:, col], side="right")
            n_bins = edges.size + 1
        cx = np.bincount(bx, minlength=n_bins).astype(np.float64)
        cy = np.bincount(by, minlength=n_bins).astype(np.float64)
        table = np.stack([cx, cy])
        table = table[:, table.sum(axis=0) > 0]
        if table.shape[1] < 2:
            continue
        _, p_value, _, _ = stats.chi2_contingency(table, lambda_="log-likelihood")
        if p_value > 0.05:
            continue
        llr = np.log((cx + 0.5) / (cx.sum() + 0.5 * n_bins)) - np.log(
            (cy + 0.5) / (cy.sum() + 0.5 * n_bins)
        )
        columns.append(col)
        all_edges.append(edges)
        kinds.append(discrete)
        llrs.append(llr)
    return _Score(tuple(columns), tuple(all_edges), tuple(kinds), tuple(llrs))


def _epsilon_bound(k: int, n: int, k2: int, n2: int, a: float, delta: float) -> float:
    """``log((P_lo(E|x) - delta) / P_hi(E|x'))`` (``-inf`` when the numerator is not positive)."""
    lower = binomial_lower(k, n, a) - delta
    return -math.inf if lower <= 0.0 else math.log(lower / binomial_upper(k2, n2, a))


def _counts(sx: FloatArray, sy: FloatArray, t: Any, favours_x: bool) -> tuple[Any, ...]:
    """``(k, n, k', n')``: occurrences of the event in the favoured and the other record's
    samples (``t`` may be an array of thresholds); the event is ``{score >= t}`` when it favours
    ``x``, else ``{score <= t}``."""
    if favours_x:
        kx = sx.size - np.searchsorted(np.sort(sx), t, side="left")
        ky = sy.size - np.searchsorted(np.sort(sy), t, side="left")
        return kx, sx.size, ky, sy.size
    ky = np.searchsorted(np.sort(sy), t, side="right")
    kx = np.searchsorted(np.sort(sx), t, side="right")
    return ky, sy.size, kx, sx.size


def _choose(
    sx: FloatArray, sy: FloatArray, a: float, delta: float, favours_x: bool
) -> tuple[float, float]:
    """The threshold whose event gives the largest lower bound on this (selection) split, and
    that bound."""
    pooled = np.concatenate([sx, sy])
    candidates = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, _THRESHOLDS)))
    k, n, k2, n2 = _counts(sx, sy, candidates, favours_x)
    values = [
        _epsilon_bound(int(ki), n, int(k2i), n2, a, delta) for ki, k2i in zip(k, k2, strict=True)
    ]
    best = int(np.argmax(values))
    return float(candidates[best]), float(values[best])


#: Largest number of report coordinates (holders x cells) one audit call privatizes at once.
MAX_AUDIT_COORDINATES = 2**28


def _random_cell(key: Any, n_cells: int, taken: set[int]) -> int | None:
    """A uniform cell of ``range(n_cells)`` outside ``taken`` (``None`` when there is none), drawn
    by rejection from a generator seeded by ``key``: constant memory whatever ``n_cells``."""
    if n_cells <= len(taken):
        return None
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).tolist())
    while True:
        cell = int(rng.integers(n_cells))
        if cell not in taken:
            return cell


def audit_ldp(
    mechanism: Mechanism,
    *,
    n_cells: int,
    label_bound: Any = None,
    key: PRNGKey,
    n_samples: int = 200_000,
    confidence: float = 0.999,
    labels: Sequence[Any] | None = None,
    delta: float = 0.0,
    selection_fraction: float = 0.3,
    exact_bits: bool = True,
    holder_pairs: bool = True,
) -> AuditResult:
    """Black-box audit of ``mechanism``'s epsilon claim (module docstring).

    Records are the cells ``{0, 1, n_cells - 1}`` (``{0}`` when ``n_cells == 1``) times the labels:
    the ends of ``label_bound`` for real labels (pass a range wider than the mechanism's bound to
    test its clipping) or ``labels`` for class codes, plus a middle and a random cell with the
    first label. ``n_samples`` reports are split evenly between the first, second and last cells'
    records; the middle and random cells get as many each on top (the holder-pair comparisons
    privatize up to 12 times as many holders per record again, as pairs);
    ``selection_fraction`` of each comparison's reports choose the events, the rest evaluate them.
    ``delta`` audits an ``(epsilon, delta)`` claim instead of a pure one. ``exact_bits`` and
    ``holder_pairs`` switch the exact-bit columns and the holder-pair comparisons (module
    docstring); both are on by default.
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must implement the Mechanism protocol, got {type(mechanism)}")
    claim = check_real(mechanism.epsilon, "mechanism.epsilon")
    check_key(key, "key")
    n_cells = check_int(n_cells, "n_cells", minimum=1)
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    conf = check_real(confidence, "confidence")
    if not 0.0 < conf < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {conf}")
    delta = check_real(delta, "delta")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must lie in [0, 1), got {delta}")
    frac = check_real(selection_fraction, "selection_fraction")
    if not 0.0 < frac < 1.0:
        raise ValueError(f"selection_fraction must lie strictly between 0 and 1, got {frac}")
    if labels is not None:
        label_values: list[Any] = check_label_codes(labels, "labels")
        integer = True
    elif label_bound is not None:
        label_values = list(check_bounds(label_bound, "label_bound"))
        integer = False
    else:
        raise ValueError("pass label_bound=(lo, hi) for real labels or labels=[...] for classes")
    if not label_values:
        raise ValueError("labels must contain at least one label")
    cells = sorted({0, 1, n_cells - 1}) if n_cells >= 2 else [0]
    records = [(c, y) for c in cells for y in label_values]
    if len(records) < 2:
        raise ValueError("the audit needs at least two distinct records")
    # a middle and a random cell, each compared with the first record (a leak confined to one
    # cell that is neither the first nor the last)
    pick = _random_cell(key, n_cells, {*cells, n_cells // 2})
    extra = [
        (c, label_values[0])
        for c in dict.fromkeys([n_cells // 2, pick])
        if c is not None and c not in cells
    ]
    n_base = len(records)
    records = records + extra
    # holder pairs: holder h's record changes from records[0] to each of these, holder h + 1
    # keeps records[0]; both pairings of consecutive holders (first_holder 0 and 1)
    other_cell = [records[len(label_values)]] if len(cells) > 1 else []
    moved = list(dict.fromkeys(r for r in [*other_cell, records[1]] if r != records[0]))
    # the extra cells do not dilute the base records' samples: they are privatized on top
    per_record = n_samples // n_base
    n_select = int(per_record * frac)
    if n_select < 10 or per_record - n_select < 10:
        raise ValueError(
            f"n_samples={n_samples} gives {per_record} reports per record: too few to audit"
        )
    if 2 * per_record * n_cells > MAX_AUDIT_COORDINATES:
        raise ValueError(
            f"n_cells={n_cells} with n_samples={n_samples} would privatize "
            f"{2 * per_record} holders' reports of up to {n_cells} coordinates each in one call; "
            f"keep 2 * (n_samples / {n_base} records) * n_cells <= 2**28 (audit fewer "
            "cells: a cell release treats cells alike, so a few suffice, or fewer samples)"
        )
    dtype = np.int32 if integer else np.float32

    def run(index: int, cell_list: list[int], label_list: list[Any], first: int) -> Any:
        return mechanism.privatize(
            jax.random.fold_in(key, index),
            jnp.asarray(np.asarray(cell_list, dtype=np.int32)),
            jnp.asarray(np.asarray(label_list, dtype=dtype)),
            n_cells,
            first_holder=first,
        )

    feats, joints = [], []
    for index, (cell, label) in enumerate(records):
        report = run(index, [cell] * per_record, [label] * per_record, 0)
        feats.append(_features(report, per_record, exact_bits))
        joints.append(_joint_features(report, per_record))
    pairs = list(itertools.combinations(range(n_base), 2))
    pairs += [(0, j) for j in range(n_base, len(records))]
    comparisons: list[tuple[list[tuple[FloatArray, FloatArray]], Any, Any, str]] = [
        ([(feats[i], feats[j]), (joints[i], joints[j])], records[i], records[j], "one holder")
        for i, j in pairs
    ]
    fixed = records[0]
    index = len(records)
    for first in (0, 1) if holder_pairs else ():
        joint = []
        for cell, label in [fixed, *moved]:
            report = run(
                index,
                [cell, fixed[0]] * per_record,
                [label, fixed[1]] * per_record,
                first,
            )
            index += 1
            base = _features(report, 2 * per_record, exact_bits=False)
            bits = _features(report, 2 * per_record, exact_bits)
            own, nxt = base[0::2], base[1::2]
            joint.append(np.concatenate([bits[0::2], bits[1::2], own - nxt], axis=1))
        for k, record in enumerate(moved, start=1):
            where = f"joint reports of holders (h, h+1), h = {first} mod 2, holder h+1 at {fixed}"
            comparisons.append(([(joint[0], joint[k])], fixed, record, where))

    n_tests = 2 * len(comparisons)
    a = (1.0 - conf) / (2.0 * n_tests)
    best: tuple[float, Any, Any, str, tuple[int, int, int, int]] = (
        -math.inf,
        records[0],
        records[1],
        "none",
        (0, 0, 0, 0),
    )
    for candidates, name_x, name_y, where in comparisons:
        # every candidate score (per-column, joint) is fitted and thresholded on the selection
        # split; the one with the best selection bound is the event evaluated on the rest, so
        # the choice costs no extra test
        scored = []
        for kind, (fx, fy) in zip(("naive-Bayes", "joint naive-Bayes"), candidates, strict=False):
            n_sel = int(min(fx.shape[0], fy.shape[0]) * frac)
            score = _fit_score(fx[:n_sel], fy[:n_sel])
            scored.append(
                (kind, score(fx[:n_sel]), score(fy[:n_sel]), score(fx[n_sel:]), score(fy[n_sel:]))
            )
        for favours_x in (True, False):
            choices = [
                (_choose(sel_sx, sel_sy, a, delta, favours_x), kind, sx, sy)
                for kind, sel_sx, sel_sy, sx, sy in scored
            ]
            (t, _), kind, sx, sy = max(choices, key=lambda c: c[0][1])
            k, n, k2, n2 = _counts(sx, sy, t, favours_x)
            counts = (int(k), int(n), int(k2), int(n2))
            value = _epsilon_bound(*counts, a, delta)
            if value > best[0]:
                rec, oth = (name_x, name_y) if favours_x else (name_y, name_x)
                op = ">=" if favours_x else "<="
                best = (value, rec, oth, f"{{{kind} score {op} {t:.4g}}} ({where})", counts)
    lower = max(0.0, best[0])
    return AuditResult(
        epsilon_claimed=claim,
        epsilon_lower=lower,
        refuted=lower > claim,
        confidence=conf,
        n_samples=per_record * len(records),
        n_tests=n_tests,
        record=best[1],
        other=best[2],
        event=best[3],
        counts=best[4],
    )
