"""LPCT read-out: the lambda-weighted combination of private and public cell counts.

For cell ``A_j`` and class ``k``, with private estimates ``U^_j`` (count) and ``V^_jk`` (class-k
count) and public counts ``U^Q_j``, ``V^Q_jk``,

    eta^_lambda,k(x) = (V^_jk + lambda V^Q_jk) / (U^_j + lambda U^Q_j),   x in A_j,

(LPCT paper eq. (8); the paper and the reference code are binary, where ``eta`` is the class-1
ratio and the classifier is ``1{eta > 1/2}``; the per-class form and ``argmax_k`` are ours and
reduce to it for ``K = 2``, since then ``eta_0 = 1 - eta_1``). Special values of ``lambda``:

* ``lambda = 0``: **LPCT-P**, private data only (the reference's ``separate_predict`` P part and
  the "LPDT" column of the LPCT paper);
* ``lambda = inf``: **LPCT-Q**, public data only, ``V^Q_jk / U^Q_j`` on the same partition.

Denominators (``fallback``):

* ``"none"`` (paper and code): ``0/0 = 0`` (the paper's convention; the code's public-only ``NaN``
  also predicts class 0), and a negative denominator, possible whenever ``U^_j < -lambda U^Q_j``,
  is kept, so the ratio's sign flips with it (the reference has no guard).
* ``"prior"`` (ours): cells whose denominator is ``<= 0`` use the public class frequencies over
  all public rows (uniform without public labels). This uses public data even for LPCT-P.

Probabilities (ours): ``eta`` need not lie in the simplex (noise, negative counts). The predicted
class is ``argmax_k eta_k`` and ``predict_proba`` is the Euclidean projection of ``eta`` onto the
simplex, which preserves the arg-max.

Every function here is pure array code (:mod:`ldptree._xp`): NumPy float64 on concrete inputs,
``jax.numpy`` under ``jax.jit``/``jax.vmap`` (``lam`` and ``fallback`` stay Python values).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ldptree._typing import BoolArray, FloatArray, IntArray
from ldptree._validation import check_choice
from ldptree._xp import as_float, bincount, float_dtype, namespace
from ldptree.protocols import CellEstimates, LeafFit

FALLBACKS = ("none", "prior")


def check_lam(value: Any, name: str = "lam") -> float:
    """``lambda in [0, inf]`` (``inf`` = public only)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{name} must be a real number >= 0 (or inf), got {type(value).__name__}")
    out = float(value)
    if math.isnan(out) or out < 0:
        raise ValueError(f"{name} must be >= 0 (0 = private only, inf = public only), got {out}")
    return out


def private_class_counts(estimates: CellEstimates, n_classes: int) -> FloatArray:
    """``V^`` as ``float[L, K]``: the binary form's class-1 count gives ``(U^ - V^, V^)``."""
    xp = namespace(estimates)
    label_sum = as_float(estimates.label_sum, xp)
    if label_sum.ndim == 1:
        if n_classes != 2:
            raise ValueError(
                f"the mechanism released a scalar label per cell, which only encodes 2 classes, "
                f"but there are {n_classes}"
            )
        binary: FloatArray = xp.stack([estimates.count - label_sum, label_sum], axis=1)
        return binary
    if label_sum.shape[1] != n_classes:
        raise ValueError(
            f"the mechanism released {label_sum.shape[1]} classes per cell, expected {n_classes}"
        )
    per_class: FloatArray = label_sum
    return per_class


def public_class_counts(
    cells: IntArray, codes: IntArray, n_cells: int, n_classes: int
) -> FloatArray:
    """``V^Q`` as ``float[L, K]``: public rows per (cell, class); ``U^Q`` is its row sum."""
    xp = namespace(cells, codes)
    flat = bincount(xp, cells * n_classes + codes, n_cells * n_classes)
    counts: FloatArray = flat.reshape(n_cells, n_classes).astype(float_dtype(xp))
    return counts


def weighted_eta(
    private_count: FloatArray,
    private_classes: FloatArray,
    public_classes: FloatArray,
    lam: float,
    *,
    fallback: str,
    prior: FloatArray,
) -> tuple[FloatArray, BoolArray]:
    """``(eta float[L, K], fell_back bool[L])`` for one ``lambda`` (module docstring)."""
    xp = namespace(private_count, private_classes, public_classes, prior)
    public_count = public_classes.sum(axis=1)
    if math.isinf(lam):
        numerator, denominator = public_classes, public_count
    else:
        numerator = private_classes + lam * public_classes
        denominator = private_count + lam * public_count
    if fallback == "prior":
        bad = denominator <= 0
        safe = xp.where(bad, 1.0, denominator)
        eta = xp.where(bad[:, None], prior[None, :], numerator / safe[:, None])
        return eta, bad
    zero = denominator == 0
    safe = xp.where(zero, 1.0, denominator)
    eta = xp.where(zero[:, None], 0.0, numerator / safe[:, None])
    return eta, zero


def class_prior(public_classes: FloatArray) -> FloatArray:
    """Public class frequencies over all public rows (uniform if there are none)."""
    xp = namespace(public_classes)
    totals = public_classes.sum(axis=0)
    total = totals.sum()
    positive = total > 0
    prior: FloatArray = xp.where(
        positive, totals / xp.where(positive, total, 1.0), 1.0 / public_classes.shape[1]
    )
    return prior


def simplex_projection(eta: FloatArray) -> FloatArray:
    """Euclidean projection of every row onto the probability simplex (order preserving)."""
    xp = namespace(eta)
    k = eta.shape[-1]
    ordered = -xp.sort(-eta, axis=-1)
    cumulative = xp.cumsum(ordered, axis=-1) - 1.0
    ranks = xp.arange(1, k + 1)
    support = ordered - cumulative / ranks > 0
    rho = k - xp.argmax(support[..., ::-1], axis=-1)
    tau = xp.take_along_axis(cumulative, (rho - 1)[..., None], axis=-1) / rho[..., None]
    projected: FloatArray = xp.maximum(eta - tau, 0.0)
    return projected


def lpct_leaves(
    estimates: CellEstimates | None, public_classes: Any, *, lam: float, fallback: str
) -> LeafFit:
    """LPCT's read-out: ``eta`` (``float[L, K]``) for one ``lam`` from the private estimates and
    the public per-(cell, class) counts ``public_classes``; ``estimates=None`` (nothing private
    collected) only with ``lam = inf``."""
    lam = check_lam(lam)
    check_choice(fallback, "fallback", FALLBACKS)
    n_cells, n_classes = public_classes.shape
    xp = namespace(estimates, public_classes)
    if estimates is None:
        if not math.isinf(lam):
            raise ValueError(
                "no private estimates were collected (lam=inf, public only); a finite lam "
                "needs them"
            )
        dtype = float_dtype(xp)
        count, classes = xp.zeros(n_cells, dtype), xp.zeros((n_cells, n_classes), dtype)
    else:
        count, classes = estimates.count, private_class_counts(estimates, n_classes)
    eta, fell_back = weighted_eta(
        count,
        classes,
        public_classes,
        lam,
        fallback=fallback,
        prior=class_prior(public_classes),
    )
    return LeafFit(values=eta, used_fallback=fell_back, estimates=estimates)
