"""``max_depth="auto"``: a parameter-free LPDT depth from ``n``, ``d``, epsilon and the label bound.

The LPDT paper's convergence theorem (its Theorem 3.4 and proof) bounds the excess risk of a
depth-``s`` tree by a noise term growing like ``4^s / (n eps^2)`` (every one of the ``2^s`` cells
holds about ``n / 2^s`` holders, and the ratio's variance is ``n V / c_j^2``) plus an approximation
term ``2^{-2 alpha s / d}`` (cells of a max-edge tree shrink like ``2^{-s/d}`` per side), and
balances them at ``2^s ~ (n eps^2 / log n)^{d / (2 alpha + 2 d)}``. We make the constants explicit
in label units, for a Lipschitz target (``alpha = 1``) that moves across the label range's
half-width ``h`` over the unit cube:

    risk(s) ~ 4^s V / n + h^2 2^{-2 s / d},

with ``V`` the variance one holder adds to a centred label sum (the mechanism's, from
:func:`~ldptree.estimators._readout.shrinkage_strength`: ``a = n V / h^2``). Setting the
derivative in ``t = 2^s`` to zero gives

    t* = (n h^2 / (d V))^{d / (2 d + 2)},        s_auto = max(1, round(log2 t*)),

the theorem's rate without its ``log n`` (which only serves the high-probability bound). Only
``n``, ``d``, the mechanism's variance (epsilon, budget split) and the public label bound enter,
so the depth is fixed before any report is seen.
"""

from __future__ import annotations

import math

from ldptree._validation import check_int, check_positive


def auto_depth(n: int, n_features: int, relative_variance: float) -> int:
    """``s_auto`` (module docstring) for ``n`` holders, ``d = n_features`` and
    ``relative_variance = V / h^2`` (the shrinkage strength ``a`` divided by ``n``)."""
    n = check_int(n, "n", minimum=1)
    d = check_int(n_features, "n_features", minimum=1)
    rel = check_positive(relative_variance, "relative_variance")
    t = (n / (d * rel)) ** (d / (2.0 * d + 2.0))
    return max(1, round(math.log2(t)))
