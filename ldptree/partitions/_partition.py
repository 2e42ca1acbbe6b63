"""The fitted partition: an immutable JAX pytree of flat node arrays.

A partition of the unit cube ``[0, 1]^d`` is a binary tree. Node ``i`` with ``left[i] >= 0`` splits
on feature ``feature[i]`` at ``threshold[i]``: rows with ``x[feature] < threshold`` go to
``left[i]``, the others to ``right[i]`` (the reference code's convention). Leaves carry
``leaf_id[i] in 0..L-1``; internal nodes carry ``-1``. ``lower``/``upper`` hold each node's box.

``cells(X)`` walks all rows down the tree together, one gather per level, so its cost is
``O(n * depth)`` array work with no Python loop over rows. A point outside ``[0, 1]^d`` is routed by
the same threshold comparisons, which is the same as clamping it into the cube first.

**Float64 routing.** Thresholds are float64 and the partitioners grow the tree with float64
comparisons, so concrete rows are routed with the exact float64 comparison ``x < t`` too: a
point one float64 ulp below a threshold goes left, as in the tree's growth and in a float64
reference implementation. The compiled walk runs inside ``jax.enable_x64(True)``, a setting of
the calling thread only (no process-wide JAX option changes), and compares *order keys*: the bits
of a float64 read as an int64 ``b`` are the value's sign and magnitude, and the key is the signed
magnitude, ``b`` for ``b >= 0`` and ``-(b AND (2^63 - 1))`` otherwise. It is strictly increasing
in the value and equal for ``-0.0`` and ``+0.0``, so ``x < t`` exactly when ``key(x) < key(t)``
(NaN excepted). Integer comparisons are exact where XLA's float64 ones flush subnormal values to
zero. Traced rows (inside the caller's ``jax.jit``) are compared in
the wider of their dtype and the thresholds': exactly under ``jax_enable_x64``, in float32
otherwise.

The partition is what a curator publishes to data holders; ``to_json``/``from_json`` round-trip it
exactly (floats are written as ``float.hex`` strings) and ``from_json`` re-validates the structure,
so a holder never routes its record through a malformed tree.
"""

from __future__ import annotations

import json
from typing import Any, cast

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._buckets import MIN_ROWS, bucket
from ldptree._jax_cache import kernel
from ldptree._typing import FloatArray, Int32Array
from ldptree._xp import is_traced, namespace

_FORMAT = "ldptree.partition/1"
#: Concrete inputs up to this many rows are routed in NumPy (see ``Partition._route_host``);
#: above it the compiled walk is several times faster (about 8x at 65,536 rows, depth 6).
HOST_ROUTING_ROWS = 4096


def _int32(a: Any) -> Int32Array:
    return np.ascontiguousarray(np.asarray(a, dtype=np.int32))


def _float64(a: Any) -> FloatArray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64))


@attrs.frozen(eq=False)
class Partition:
    """A fitted partition of ``[0, 1]^d`` into ``n_leaves`` cells (see module docstring).

    Build one with :meth:`from_arrays` (which validates and derives ``depth``/``n_leaves``) or
    :meth:`from_json`; partitioners return them from ``fit``.
    """

    feature: Int32Array
    threshold: FloatArray
    left: Int32Array
    right: Int32Array
    leaf_id: Int32Array
    lower: FloatArray
    upper: FloatArray
    depth: int
    n_leaves: int

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        *,
        feature: Any,
        threshold: Any,
        left: Any,
        right: Any,
        lower: Any,
        upper: Any,
    ) -> Partition:
        """Validate node arrays (root is node 0) and number the leaves in node order."""
        feature_a, left_a, right_a = _int32(feature), _int32(left), _int32(right)
        threshold_a, lower_a, upper_a = _float64(threshold), _float64(lower), _float64(upper)
        n_nodes = feature_a.shape[0]
        if n_nodes == 0:
            raise ValueError("a partition needs at least one node (the root)")
        for name, arr in (("threshold", threshold_a), ("left", left_a), ("right", right_a)):
            if arr.shape != (n_nodes,):
                raise ValueError(f"{name} must have shape ({n_nodes},), got {arr.shape}")
        if lower_a.ndim != 2 or lower_a.shape[0] != n_nodes or lower_a.shape != upper_a.shape:
            raise ValueError(
                f"lower/upper must both have shape ({n_nodes}, n_features), "
                f"got {lower_a.shape} and {upper_a.shape}"
            )
        d = lower_a.shape[1]
        is_leaf = left_a < 0
        if np.any(is_leaf != (right_a < 0)):
            raise ValueError("left and right must both be -1 at leaves and both >= 0 elsewhere")
        internal = ~is_leaf
        if np.any(left_a[internal] >= n_nodes) or np.any(right_a[internal] >= n_nodes):
            raise ValueError("child indices must be < the number of nodes")
        if np.any((feature_a[internal] < 0) | (feature_a[internal] >= d)):
            raise ValueError(f"split features must lie in [0, {d}) at internal nodes")
        if not np.all(np.isfinite(threshold_a[internal])):
            raise ValueError("split thresholds must be finite at internal nodes")
        # every node except the root must be the child of exactly one node, reached once
        children = np.concatenate([left_a[internal], right_a[internal]])
        counts = np.bincount(children, minlength=n_nodes)
        if counts[0] != 0 or np.any(counts[1:] != 1):
            raise ValueError("node arrays must form a single tree rooted at node 0")
        depth_of = np.zeros(n_nodes, dtype=np.int64)
        order = [0]
        for node in order:  # breadth-first, over nodes (public, tiny), never over rows
            if internal[node]:
                for child in (int(left_a[node]), int(right_a[node])):
                    depth_of[child] = depth_of[node] + 1
                    order.append(child)
        if len(order) != n_nodes:
            raise ValueError("node arrays contain nodes unreachable from the root")
        leaf_id = np.full(n_nodes, -1, dtype=np.int32)
        leaf_id[is_leaf] = np.arange(int(is_leaf.sum()), dtype=np.int32)
        return cls(
            feature=np.where(is_leaf, -1, feature_a).astype(np.int32),
            threshold=np.where(is_leaf, np.nan, threshold_a),
            left=left_a,
            right=right_a,
            leaf_id=leaf_id,
            lower=lower_a,
            upper=upper_a,
            depth=int(depth_of.max()),
            n_leaves=int(is_leaf.sum()),
        )

    @classmethod
    def trivial(cls, n_features: int) -> Partition:
        """The one-cell partition of ``[0, 1]^d``."""
        return cls.from_arrays(
            feature=[-1],
            threshold=[np.nan],
            left=[-1],
            right=[-1],
            lower=np.zeros((1, n_features)),
            upper=np.ones((1, n_features)),
        )

    # -- properties ---------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.lower.shape[1])

    @property
    def leaf_nodes(self) -> Int32Array:
        """Node index of each leaf, ordered by leaf id: ``int32[L]`` (traceable)."""
        if is_traced(self):
            traced = jnp.flatnonzero(self.left < 0, size=self.n_leaves).astype(jnp.int32)
            return cast(Int32Array, traced)  # a traced int32[L]
        return np.flatnonzero(self.left < 0).astype(np.int32)

    @property
    def leaf_lower(self) -> FloatArray:
        """Lower corners of the cells, ordered by leaf id: ``float[L, d]``."""
        return self.lower[self.leaf_nodes]

    @property
    def leaf_upper(self) -> FloatArray:
        """Upper corners of the cells, ordered by leaf id: ``float[L, d]``."""
        return self.upper[self.leaf_nodes]

    # -- routing ------------------------------------------------------------------------------
    def cells(self, X: Any) -> jax.Array:
        """Cell index of every row: ``float[n, d] -> int32[n]`` (jitted, ``O(depth)`` per row).

        Concrete rows are compared in float64, exactly (float32 rows are widened, never the
        thresholds narrowed). Traced rows are compared exactly under
        ``jax_enable_x64`` and in float32 otherwise, where a point within one float32 ulp of a
        data-dependent threshold can fall on the other side (a change of partition, not of
        privacy: any partition is allowed).

        Works under ``jax.jit``/``jax.vmap`` with ``X`` and/or the partition itself traced (the
        partition is a pytree whose arrays are its leaves; ``depth`` and ``n_leaves`` are static).
        """
        traced = is_traced(X, self)
        # Concrete input is converted and padded on the host (one transfer, no per-op dispatch:
        # routing is called three times per fit, and on small data dispatch is what it costs).
        if traced:
            X = jnp.asarray(X)
        else:  # float32 rows stay float32 until the one padded copy below (widening is exact)
            X = np.asarray(X)
            if X.dtype not in (np.float32, np.float64):
                X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(
                f"X must have shape (n_samples, {self.n_features}) to be routed through this "
                f"partition, got {tuple(X.shape)}"
            )
        n, d = int(X.shape[0]), int(X.shape[1])
        if not traced and n <= HOST_ROUTING_ROWS:
            host: jax.Array = jax.device_put(self._route_host(X))  # a transfer, no jitted program
            return host
        # Rows, nodes and (traced) features are padded to powers of two, so one compiled program
        # serves every dataset and tree of the same padded size. Padding nodes are unreachable
        # leaves, padding features are never split on, padding rows are routed and dropped.
        # Concrete rows keep their d features: a full chunk of float64 rows is then routed
        # without a host copy.
        rows, width = bucket(n, MIN_ROWS), bucket(d)
        if traced:
            routed: jax.Array = _route(
                *self._padded_nodes(),
                np.int32(self.depth),
                jnp.pad(X, ((0, rows - n), (0, width - d))),
            )
            return routed[:n]
        if n == rows and X.dtype == np.float64 and X.flags.c_contiguous:
            padded = X  # a full chunk of float64 rows: no copy (features are not padded here)
        else:
            padded = np.zeros((rows, d), dtype=np.float64)
            padded[:n] = X
        with jax.enable_x64(True):  # this thread only: 64-bit integers on the device
            routed = _route_keys(self.key_walk(), padded.view(np.int64))
        # slicing on the host and transferring back is cheaper than a device slice dispatch (and
        # a plain transfer, unlike jnp.asarray, runs no jitted program to trace in a new process)
        out: jax.Array = jax.device_put(np.asarray(routed)[:n])
        return out

    def _padded_nodes(self) -> tuple[Any, ...]:
        # nodes padded to a power of two (unreachable leaves): one compiled walk per tree size
        pad = bucket(self.n_nodes) - self.n_nodes
        return (
            _extend(self.feature, pad, 0),
            _extend(self.threshold, pad, 0.0),
            _extend(self.left, pad, -1),
            _extend(self.right, pad, -1),
            _extend(self.leaf_id, pad, 0),
        )

    def key_walk(self) -> tuple[Any, ...]:
        """The inputs of :func:`walk_keys` before the rows' keys: ``(feature, threshold keys,
        left, right, leaf_id, depth)``, nodes padded to a power of two, each leaf's threshold
        ``+inf`` (host arrays; the keys are int64)."""
        feature, threshold, left, right, leaf_id = self._padded_nodes()
        t_key = order_keys(np.where(left < 0, np.inf, threshold))
        return feature, t_key, left, right, leaf_id, np.int32(self.depth)

    def _route_host(self, X: np.ndarray[Any, Any]) -> Int32Array:
        # The same level-wise walk as `_route`, in NumPy float64: for a few thousand rows
        # the jitted program's dispatch and synchronisation cost more than the walk itself, and
        # routing runs three times per fit. Both compare exactly in float64, so the cells are
        # identical (a test compares the two).
        is_leaf = self.left < 0
        ids = np.arange(self.n_nodes, dtype=np.int32)
        go_left = np.where(is_leaf, ids, self.left).astype(np.int32)
        go_right = np.where(is_leaf, ids, self.right).astype(np.int32)
        feature = np.where(is_leaf, 0, self.feature)
        threshold = np.where(is_leaf, np.inf, self.threshold)
        rows = np.arange(X.shape[0])
        node = np.zeros(X.shape[0], dtype=np.int32)
        for _ in range(self.depth):
            node = np.where(X[rows, feature[node]] < threshold[node], go_left[node], go_right[node])
        cells: Int32Array = self.leaf_id[node].astype(np.int32)
        return cells

    # -- serialisation ------------------------------------------------------------------------
    def to_json(self) -> str:
        """Exact JSON encoding (floats as ``float.hex``) of what a curator publishes."""

        def hexes(a: FloatArray) -> Any:
            return [float(v).hex() for v in a] if a.ndim == 1 else [hexes(r) for r in a]

        payload = {
            "format": _FORMAT,
            "n_features": self.n_features,
            "feature": self.feature.tolist(),
            "threshold": hexes(self.threshold),
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "lower": hexes(self.lower),
            "upper": hexes(self.upper),
        }
        return json.dumps(payload, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Partition:
        """Inverse of :meth:`to_json`; validates every field and the tree before returning it.

        Malformed input raises ``ValueError`` (``TypeError`` when ``text`` is not a string)
        naming the field at fault: ``n_features`` an integer in ``[1, 2^20]``, ``feature``,
        ``left`` and ``right`` lists of integers in ``[-1, 2^31)``, ``threshold`` a list of
        ``float.hex`` strings, ``lower`` and ``upper`` lists of such lists of length
        ``n_features``. Nesting too deep for the JSON parser is reported as invalid JSON."""
        if not isinstance(text, str | bytes | bytearray):
            raise TypeError(f"text must be a JSON string, got {type(text).__name__}")
        try:
            payload = json.loads(text)
        except (ValueError, RecursionError) as err:  # JSONDecodeError is a ValueError
            raise ValueError(f"text is not valid JSON (or nests too deeply): {err}") from None
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            raise ValueError(f"text is not an ldptree partition (expected format {_FORMAT!r})")
        d = payload.get("n_features")
        if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= _JSON_MAX_FEATURES:
            raise ValueError(
                f"partition JSON field 'n_features' must be an integer in [1, 2**20], got {d!r}"
            )
        return cls.from_arrays(
            feature=_json_ints(payload, "feature"),
            threshold=_json_hexes(payload, "threshold"),
            left=_json_ints(payload, "left"),
            right=_json_ints(payload, "right"),
            lower=_json_rows(payload, "lower", d),
            upper=_json_rows(payload, "upper", d),
        )

    def equals(self, other: object) -> bool:
        """Exact structural equality (NaN thresholds at leaves compare equal)."""
        if not isinstance(other, Partition):
            return False
        pairs: list[tuple[Int32Array | FloatArray, Int32Array | FloatArray]] = [
            (self.feature, other.feature),
            (self.left, other.left),
            (self.right, other.right),
            (self.leaf_id, other.leaf_id),
            (self.lower, other.lower),
            (self.upper, other.upper),
        ]
        same_shape = all(a.shape == b.shape for a, b in pairs) and (
            self.threshold.shape == other.threshold.shape
        )
        return (
            same_shape
            and all(np.array_equal(a, b) for a, b in pairs)
            and np.array_equal(self.threshold, other.threshold, equal_nan=True)
        )


#: Largest ``n_features`` a partition JSON may declare.
_JSON_MAX_FEATURES = 2**20


def _json_list(payload: dict[str, Any], name: str) -> list[Any]:
    value = payload.get(name)
    if not isinstance(value, list):
        raise ValueError(
            f"partition JSON field {name!r} must be a list, got {type(value).__name__}"
        )
    return value


def _json_ints(payload: dict[str, Any], name: str) -> Int32Array:
    """A list of node indices or features: integers in ``[-1, 2^31)``."""
    values = _json_list(payload, name)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or not -1 <= v < 2**31:
            raise ValueError(
                f"partition JSON field {name!r} must hold integers in [-1, 2**31), got {v!r}"
            )
    return np.asarray(values, dtype=np.int32)


def _hex(value: Any, name: str) -> float:
    if isinstance(value, str):
        try:
            return float.fromhex(value)
        except (ValueError, OverflowError):
            pass
    raise ValueError(
        f"partition JSON field {name!r} must hold float.hex strings such as '0x1.8p-1', "
        f"got {value!r}"
    )


def _json_hexes(payload: dict[str, Any], name: str) -> FloatArray:
    return np.asarray([_hex(v, name) for v in _json_list(payload, name)], dtype=np.float64)


def _json_rows(payload: dict[str, Any], name: str, d: int) -> FloatArray:
    rows = _json_list(payload, name)
    for row in rows:
        if not isinstance(row, list) or len(row) != d:
            raise ValueError(
                f"partition JSON field {name!r} must be a list of rows of n_features={d} "
                f"float.hex strings, got a row {str(row)[:60]}"
            )
    out = np.asarray([[_hex(v, name) for v in row] for row in rows], dtype=np.float64)
    return out.reshape(len(rows), d)


def _extend(a: Any, pad: int, value: float) -> Any:
    """``a`` followed by ``pad`` copies of ``value`` (``np.pad`` costs ~50 us per call)."""
    xp = namespace(a)
    return xp.concatenate([a, xp.full(pad, value, dtype=a.dtype)]) if pad else a


def _flatten(p: Partition) -> tuple[tuple[Any, ...], tuple[int, int]]:
    children = (p.feature, p.threshold, p.left, p.right, p.leaf_id, p.lower, p.upper)
    return children, (p.depth, p.n_leaves)


def _unflatten(aux: tuple[int, int], children: Any) -> Partition:
    feature, threshold, left, right, leaf_id, lower, upper = children
    return Partition(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        leaf_id=leaf_id,
        lower=lower,
        upper=upper,
        depth=aux[0],
        n_leaves=aux[1],
    )


jax.tree_util.register_pytree_node(Partition, _flatten, _unflatten)


@kernel
def _route(
    feature: jax.Array,
    threshold: jax.Array,
    left: jax.Array,
    right: jax.Array,
    leaf_id: jax.Array,
    depth: jax.Array,
    X: jax.Array,
) -> jax.Array:
    # Leaves loop to themselves, so `depth` gathers take every row to its leaf with no masking;
    # the trip count is traced, so one program serves every tree of the same padded size.
    node_ids = jnp.arange(feature.shape[0], dtype=jnp.int32)
    is_leaf = left < 0
    go_left = jnp.where(is_leaf, node_ids, left)
    go_right = jnp.where(is_leaf, node_ids, right)
    feature = jnp.where(is_leaf, 0, feature)
    # both sides in the wider of the two dtypes: exact for float32 rows under x64
    dtype = jnp.promote_types(X.dtype, threshold.dtype)
    threshold = jnp.where(is_leaf, jnp.inf, threshold).astype(dtype)
    X = X.astype(dtype)
    rows = jnp.arange(X.shape[0])

    def level(_: jax.Array, node: jax.Array) -> jax.Array:
        x = X[rows, feature[node]]
        return jnp.where(x < threshold[node], go_left[node], go_right[node])

    node = jax.lax.fori_loop(0, depth, level, jnp.zeros(X.shape[0], dtype=jnp.int32))
    leaf: jax.Array = leaf_id[node]
    return leaf


def order_keys(values: Any) -> np.ndarray[Any, Any]:
    """The int64 order key of each float64 (module docstring): for non-NaN ``a``, ``b``,
    ``a < b`` exactly when ``key(a) < key(b)``, and ``a == b`` when the keys are equal."""
    return np.asarray(order_key(np.asarray(values, dtype=np.float64).view(np.int64)))


def order_key(bits: Any) -> Any:
    """The order key of float64 values from their bits read as int64 (NumPy or traced JAX
    arrays, the latter under 64-bit mode): the sign and magnitude become a signed magnitude, so
    -0.0 (magnitude 0) keys as +0.0 does."""
    xp = namespace(bits)
    return xp.where(bits < 0, -(bits & xp.int64(0x7FFF_FFFF_FFFF_FFFF)), bits)


@kernel
def _route_keys(walk: tuple[jax.Array, ...], bits: jax.Array) -> jax.Array:
    # `_route` with the float64 comparison x < t done on int64 order keys (under 64-bit mode):
    # integer comparisons are exact where XLA's float comparisons flush subnormals to zero
    return walk_keys(walk, order_key(bits))


def walk_keys(walk: tuple[jax.Array, ...], x_key: jax.Array) -> jax.Array:
    """The cell of each row from its features' int64 order keys ``x_key[rows, d]`` (traced,
    under 64-bit mode): ``depth`` gathers down the tree ``walk`` of
    :meth:`Partition.key_walk`."""
    feature, t_key, left, right, leaf_id, depth = walk
    node_ids = jnp.arange(feature.shape[0], dtype=jnp.int32)
    is_leaf = left < 0
    go_left = jnp.where(is_leaf, node_ids, left)
    go_right = jnp.where(is_leaf, node_ids, right)
    feature = jnp.where(is_leaf, 0, feature)
    rows = jnp.arange(x_key.shape[0])

    def level(_: jax.Array, node: jax.Array) -> jax.Array:
        below = x_key[rows, feature[node]] < t_key[node]
        return jnp.where(below, go_left[node], go_right[node])

    node = jax.lax.fori_loop(0, depth, level, jnp.zeros(x_key.shape[0], dtype=jnp.int32))
    leaf: jax.Array = leaf_id[node]
    return leaf
