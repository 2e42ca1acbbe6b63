"""LPCT-prune: data-driven depth and lambda per leaf (LPCT paper §5, Algorithm 2).

One release on a deep partition (depth ``p_max``), then, for every leaf, a Lepski-type walk up its
ancestors: stop at the deepest node whose estimate is confidently on one side of 1/2, with
``lambda`` chosen per node to maximise that confidence. Binary labels only (the statistic is
``|eta - 1/2|``).

Node aggregates are sums over the node's leaves: ``U_P, V_P`` (private estimates of
the count and class-1 count), ``U_Q, V_Q`` (public counts), ``s_P = V_P/U_P - 1/2``,
``s_Q = V_Q/U_Q - 1/2``. For a node at depth ``k`` with ``a = p_max - k`` (ours: absolute
depths, not the reference's leaf-relative ``a``):

    c2 = ln(n_P + n_Q) + k + 1,   c2Q = ln(n_Q) + k + 1,
    c1 = 2^{a+1} (2 ln(2 n_P) + eps 2^{-k/2} sqrt(c2))^2,   u = (c1 / c2) n_P / eps^2

(the reference's hard-coded constants; ``u`` is a proxy for the privacy-noise variance of the
node's sums). For ``lambda >= 0`` the confidence statistic is

    T(lambda) = |U_P s_P + lambda U_Q s_Q| / (C sqrt(c2) sqrt(v + lambda^2 U_Q)),

maximised in closed form (paper App. A.2, Cauchy-Schwarz) at ``lambda* = (v / U_P)(s_Q / s_P)``
when the signals agree, with ``max sqrt(U_P^2 s_P^2 / v + U_Q s_Q^2) / (C sqrt(c2))``, and at one
end (private only / public only) otherwise; the public-only end uses ``c2Q``:
``T_Q = |s_Q| sqrt(U_Q) / (C sqrt(c2Q))``. ``C`` is the paper's constant of the confidence radius
(eq. (13)); the code has none (``C = 1``); it only moves the stopping threshold ``T >= 1``.

Two rules for the private side (``prune_rule``):

* ``"reference"`` (the code, without its statefulness): in this order,
  ``U_Q = 0 -> eta = 1/2, T = 0``; ``U_P <= 0`` or ``V_P <= 0`` -> public only; ``V_P > U_P`` ->
  ``s_P := 1/2``, ``V_P := U_P`` (ratio truncated at 1, ``v = u``); otherwise ``u > U_P`` -> public
  only, else ``v = U_P``; then the closed form, replaced by public only when ``T_Q`` is larger.
  With these constants ``u > U_P`` at almost every node for ``eps <= 8``, so private data enters
  only through the asymmetric ``V_P > U_P`` branch.
* ``"corrected"`` (ours, the default): private data are never discarded for being
  noisy; they are weighted. ``v = u_m + U_P``: the privacy proxy with ``2^a`` replaced by the
  number ``m`` of leaves below the node (equal for full trees; the node's sums carry ``m n_P``
  Laplace draws) plus the sampling-variance proxy ``U_P`` (the same proxy the reference uses for
  public counts, ``U_Q``). The private ratio is clipped into ``[0, 1]`` symmetrically. ``U_P <= 0``
  -> public only; ``U_Q = 0`` -> private only; otherwise the best of the closed form, private only
  and public only.

Walk (LPCT v1 ``7f81694`` semantics: one release at the full ``eps``, no refit): from
each leaf up to depth ``min_depth``, the first node with ``T >= 1`` gives the leaf's estimate; if
none does, the visited node with the largest ``T`` (the deepest on ties). Every node's statistic is
a pure function of its subtree's original leaf sums (no double counting, no state).

All of it is array code (:mod:`ldptree._xp`): NumPy float64 on concrete inputs, ``jax.numpy``
under ``jax.jit``/``jax.vmap`` (the report and public row counts, ``n_private``/``n_public``, stay
Python integers: they are public and fix constants).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import jax
import numpy as np

from ldptree._typing import FloatArray, IntArray
from ldptree._validation import check_choice
from ldptree._xp import as_float, is_traced, namespace
from ldptree.estimators._lpct_readout import private_class_counts
from ldptree.partitions._ancestry import leaf_ancestors, node_depths, subtree_sums
from ldptree.partitions._partition import Partition
from ldptree.protocols import CellEstimates

PRUNE_RULES = ("corrected", "reference")


@attrs.frozen(eq=False)
class NodeStats:
    """Per-node aggregates (all ``float[n_nodes]``) and the constants of the statistic."""

    u_p: FloatArray
    v_p: FloatArray
    u_q: FloatArray
    v_q: FloatArray
    depth: IntArray
    n_leaves_below: FloatArray
    n_private: int
    n_public: int
    epsilon: float
    max_depth: int


@attrs.frozen(eq=False)
class PruneResult:
    """``eta`` (class-1 estimate), statistic ``T`` and ``lam`` per node, and each leaf's choice."""

    eta: FloatArray
    statistic: FloatArray
    lam: FloatArray
    leaf_node: IntArray

    @property
    def leaf_eta(self) -> FloatArray:
        out: FloatArray = self.eta[self.leaf_node]
        return out


jax.tree_util.register_pytree_node(  # so a traced prune can be returned from jax.jit
    PruneResult,
    lambda r: ((r.eta, r.statistic, r.lam, r.leaf_node), None),
    lambda _, c: PruneResult(eta=c[0], statistic=c[1], lam=c[2], leaf_node=c[3]),
)


def node_stats(
    partition: Partition,
    private_count: FloatArray,
    private_ones: FloatArray,
    public_count: FloatArray,
    public_ones: FloatArray,
    *,
    n_private: int,
    epsilon: float,
    max_depth: int,
    n_public: int | None = None,
) -> NodeStats:
    """Subtree sums of the leaf statistics and the node constants (``n_Q`` = public rows, by
    default the sum of ``public_count``, which must then be concrete)."""
    xp = namespace(partition, private_count, private_ones, public_count, public_ones)
    columns = [as_float(c, xp) for c in (private_count, private_ones, public_count, public_ones)]
    leaf = xp.stack([*columns, xp.ones_like(columns[0])], axis=1)
    if n_public is None:
        if is_traced(public_count):
            raise ValueError("public_count is traced: pass n_public (the number of public rows)")
        n_public = round(float(np.sum(public_count)))
    sums = subtree_sums(partition, leaf)
    return NodeStats(
        u_p=sums[:, 0],
        v_p=sums[:, 1],
        u_q=sums[:, 2],
        v_q=sums[:, 3],
        depth=node_depths(partition),
        n_leaves_below=sums[:, 4],
        n_private=int(n_private),
        n_public=int(n_public),
        epsilon=epsilon if is_traced(epsilon) else float(epsilon),
        max_depth=max(int(max_depth), partition.depth),
    )


def _arrays(stats: NodeStats) -> tuple[Any, ...]:
    """The arrays of ``stats`` that decide its namespace (traced or not)."""
    return stats.u_p, stats.v_p, stats.u_q, stats.v_q, stats.depth, stats.epsilon


def _noise_proxy(stats: NodeStats, multiplicity: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(u, c2)`` with ``c1 = 2 multiplicity (2 ln(2 n_P) + eps 2^{-k/2} sqrt(c2))^2``."""
    xp = namespace(stats.depth, multiplicity, stats.epsilon)
    k = as_float(stats.depth, xp)
    n_p, eps = float(max(stats.n_private, 1)), stats.epsilon
    c2 = math.log(n_p + stats.n_public) + k + 1.0
    c1 = (
        2.0
        * multiplicity
        * (2.0 * math.log(2.0 * n_p) + eps * 2.0 ** (-k / 2.0) * xp.sqrt(c2)) ** 2
    )
    return c1 / c2 * n_p / eps**2, c2


def _public_only(stats: NodeStats, c: float) -> tuple[FloatArray, FloatArray]:
    """``(eta, T)`` of the public-only estimate ``V_Q / U_Q``."""
    xp = namespace(stats.depth, stats.u_q, stats.v_q)
    k = as_float(stats.depth, xp)
    c2q = math.log(max(stats.n_public, 1)) + k + 1.0
    safe = xp.where(stats.u_q > 0, stats.u_q, 1.0)
    eta = xp.where(stats.u_q > 0, stats.v_q / safe, 0.5)
    t = xp.where(stats.u_q > 0, xp.abs(eta - 0.5) * xp.sqrt(safe) / (c * xp.sqrt(c2q)), 0.0)
    return eta, t


def _combined(
    u_p: FloatArray,
    v_p: FloatArray,
    stats: NodeStats,
    variance: FloatArray,
    c2: FloatArray,
    c: float,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``(eta*, T*, lam*, T_P)``: the closed-form optimum over ``lam >= 0`` and the private end.

    Only meaningful where ``u_p > 0`` and ``u_q > 0``; ``lam* = 0`` (private only) where the
    signals disagree or vanish.
    """
    xp = namespace(u_p, v_p, stats.u_q, stats.v_q, variance, c2)
    safe_p = xp.where(u_p > 0, u_p, 1.0)
    safe_q = xp.where(stats.u_q > 0, stats.u_q, 1.0)
    variance = xp.where(variance > 0, variance, 1.0)  # masked out by the callers where <= 0
    s_p = v_p / safe_p - 0.5
    s_q = stats.v_q / safe_q - 0.5
    agree = s_p * s_q > 0
    lam = xp.where(agree, variance / safe_p * s_q / xp.where(agree, s_p, 1.0), 0.0)
    denominator = u_p + lam * stats.u_q
    safe_d = xp.where(denominator > 0, denominator, 1.0)
    eta = (v_p + lam * stats.v_q) / safe_d
    radius = c * xp.sqrt(c2) * xp.sqrt(variance + lam**2 * stats.u_q) / safe_d
    t = xp.abs(eta - 0.5) / radius
    t_private = xp.abs(s_p) * u_p / (c * xp.sqrt(c2) * xp.sqrt(variance))
    return eta, t, lam, t_private


def prune_statistics(
    stats: NodeStats, *, rule: str, c: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(eta, T, lam)`` for every node under ``rule`` (module docstring); ``lam = inf`` marks
    public only, ``0`` private only."""
    xp = namespace(*_arrays(stats))
    a = as_float(stats.max_depth - stats.depth, xp)
    eta_q, t_q = _public_only(stats, c)
    if rule == "reference":
        u, c2 = _noise_proxy(stats, 2.0**a)
        usable = (stats.u_q > 0) & (stats.u_p > 0) & (stats.v_p > 0)
        above_one = stats.v_p > stats.u_p
        v_p = xp.where(above_one, stats.u_p, stats.v_p)
        usable &= above_one | (u <= stats.u_p)
        variance = xp.where(above_one, u, stats.u_p)
        eta_c, t_c, lam_c, t_p = _combined(stats.u_p, v_p, stats, variance, c2, c)
        # step 4 (signals agree): the combined optimum; step 5 (they disagree, lam* = 0): the
        # private end; either way public only wins when T_Q is larger
        eta_c = xp.where(lam_c > 0, eta_c, v_p / xp.where(stats.u_p > 0, stats.u_p, 1.0))
        t_c = xp.where(lam_c > 0, t_c, t_p)
        use_public = ~usable | (t_c < t_q)
        eta = xp.where(stats.u_q > 0, xp.where(use_public, eta_q, eta_c), 0.5)
        t = xp.where(stats.u_q > 0, xp.where(use_public, t_q, t_c), 0.0)
        lam = xp.where(use_public, xp.inf, lam_c)
        return eta, t, lam
    u, c2 = _noise_proxy(stats, stats.n_leaves_below)
    variance = u + xp.maximum(stats.u_p, 0.0)
    v_p = xp.clip(stats.v_p, 0.0, xp.maximum(stats.u_p, 0.0))
    eta_c, t_c, lam_c, t_p = _combined(stats.u_p, v_p, stats, variance, c2, c)
    private_ratio = v_p / xp.where(stats.u_p > 0, stats.u_p, 1.0)
    # where the signals disagree the optimum is an end; lam* = 0 already gives the private end
    use_private = (stats.u_p > 0) & ((stats.u_q <= 0) | (t_c >= t_q))
    eta = xp.where(use_private, xp.where(stats.u_q > 0, eta_c, private_ratio), eta_q)
    t = xp.where(use_private, xp.where(stats.u_q > 0, t_c, t_p), t_q)
    lam = xp.where(use_private, xp.where(stats.u_q > 0, lam_c, 0.0), xp.inf)
    return eta, t, lam


def prune(
    partition: Partition, stats: NodeStats, *, min_depth: int, rule: str, c: float
) -> PruneResult:
    """Each leaf's node: the first ancestor (from the leaf up to depth ``min_depth``) with
    ``T >= 1``, else the visited node of largest ``T`` (deepest on ties)."""
    xp = namespace(partition, *_arrays(stats))
    eta, t, lam = prune_statistics(stats, rule=rule, c=c)
    table = leaf_ancestors(partition)
    depth_ok = xp.where(table >= 0, stats.depth[xp.maximum(table, 0)] >= min_depth, False)
    own = xp.arange(table.shape[1]) == 0  # a leaf shallower than min_depth keeps its own estimate
    depth_ok = depth_ok | own[None, :]
    t_table = xp.where(depth_ok, t[xp.maximum(table, 0)], -xp.inf)
    confident = t_table >= 1.0
    first = xp.argmax(confident, axis=1)
    best = xp.argmax(t_table, axis=1)
    level = xp.where(confident.any(axis=1), first, best)
    leaf_node = xp.take_along_axis(table, level[:, None], axis=1)[:, 0]
    return PruneResult(eta=eta, statistic=t, lam=lam, leaf_node=leaf_node)


def lpct_pruned_leaves(
    partition: Partition,
    estimates: CellEstimates,
    public_classes: Any,
    *,
    epsilon: float,
    max_depth: int,
    min_depth: int,
    rule: str = "corrected",
    c: float = 1.0,
    n_public: int | None = None,
) -> PruneResult:
    """LPCT-prune's read-out (binary): node statistics over the partition and each leaf's walk
    up its ancestors. ``n_public`` (public rows) defaults to the sum of ``public_classes``, which
    must then be concrete (it fixes constants of the statistic)."""
    check_choice(rule, "rule", PRUNE_RULES)
    counts = private_class_counts(estimates, 2)
    stats = node_stats(
        partition,
        estimates.count,
        counts[:, 1],
        public_classes.sum(axis=1),
        public_classes[:, 1],
        n_private=estimates.n,
        epsilon=epsilon,
        max_depth=max_depth,
        n_public=n_public,
    )
    return prune(partition, stats, min_depth=min_depth, rule=rule, c=c)
