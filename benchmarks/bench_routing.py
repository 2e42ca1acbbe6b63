"""Cost of exact float64 routing against the float32 routing it replaced, in one process.

``Partition.cells`` compares concrete rows with the float64 thresholds exactly: in NumPy
float64 up to ``HOST_ROUTING_ROWS`` rows, above that in the compiled walk on two uint32 order
keys per value (``ldptree.partitions._partition``). Before, rows were rounded to float32 and
compared with float32 thresholds (NumPy float32, or the compiled float32 walk ``_route``). This
script times both on the same partition and rows: ``X ~ U[0, 1]^10``, a max-edge tree of depth
8 (256 cells) grown on 2,000 public rows. Each cell of the first table is the minimum over
``--repeats`` warm calls (after one call that compiles), the two routings interleaved; the last
column says whether the cells differ (they may, by design, for rows within a float32 ulp of a
threshold). The second table times whole warm ``LPDTRegressor`` fits (depth 8, the papers'
mechanism, ``y = sin(16 x_1) + N(0, 1)``) with ``Partition.cells`` as it is and with the float32
routing patched in, interleaved, minimum over ``--repeats``.

    .venv/bin/python benchmarks/bench_routing.py --sizes 1e3,1e4,1e5,1e6 --fit-sizes 1e5,1e6
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np

from ldptree._buckets import MIN_ROWS, bucket
from ldptree.partitions import MaxEdgePartitioner
from ldptree.partitions._partition import HOST_ROUTING_ROWS, Partition, _extend, _route


def float32_cells(p: Partition, X: np.ndarray) -> np.ndarray:
    """The routing before float64: rows and thresholds rounded to float32 (NumPy walk for small
    inputs, the compiled float32 walk above ``HOST_ROUTING_ROWS``), as ``cells`` did."""
    X = np.asarray(X).astype(np.float32)
    n, d = X.shape
    if n <= HOST_ROUTING_ROWS:
        is_leaf = p.left < 0
        ids = np.arange(p.n_nodes, dtype=np.int32)
        go_left, go_right = np.where(is_leaf, ids, p.left), np.where(is_leaf, ids, p.right)
        feature = np.where(is_leaf, 0, p.feature)
        threshold = np.where(is_leaf, np.inf, p.threshold).astype(np.float32)
        rows, node = np.arange(n), np.zeros(n, dtype=np.int32)
        for _ in range(p.depth):
            node = np.where(X[rows, feature[node]] < threshold[node], go_left[node], go_right[node])
        return np.asarray(p.leaf_id[node])
    rows, nodes, width = bucket(n, MIN_ROWS), bucket(p.n_nodes), bucket(d)
    pad = nodes - p.n_nodes
    arrays = (
        _extend(p.feature, pad, 0),
        _extend(p.threshold, pad, 0.0),
        _extend(p.left, pad, -1),
        _extend(p.right, pad, -1),
        _extend(p.leaf_id, pad, 0),
    )
    padded = np.zeros((rows, width), dtype=np.float32)
    padded[:n, :d] = X
    return np.asarray(_route(*arrays, np.int32(p.depth), padded))[:n]


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.asarray(fn())
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e3,1e4,1e5,1e6")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--fit-sizes", default="1e5,1e6", help="'' to skip the fit table")
    parser.add_argument("--smoke", action="store_true", help="toy sizes, seconds")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.fit_sizes, args.repeats, args.depth = "1e3,1e4", "2e3", 2, 4
    rng = np.random.default_rng(0)
    Xq = rng.uniform(size=(2000, 10))
    yq = np.sin(16 * Xq[:, 0]) + rng.normal(size=2000)
    p = MaxEdgePartitioner(max_depth=args.depth, min_samples_leaf=2).fit(
        Xq, yq, key=jax.random.key(0)
    )
    print(f"load average before: {os.getloadavg()[0]:.1f}; {p.n_leaves} cells, depth {p.depth}")
    print("| rows | float32 (before) s | float64 (now) s | ratio | cells differ |")
    print("|---|---|---|---|---|")
    for size in (int(float(s)) for s in args.sizes.split(",")):
        X = rng.uniform(size=(size, 10))
        np.asarray(p.cells(X)), float32_cells(p, X)  # compile both
        old = new = float("inf")
        for _ in range(args.repeats):  # interleaved, so load changes hit both alike
            old = min(old, _best(lambda X=X: float32_cells(p, X), 1))
            new = min(new, _best(lambda X=X: p.cells(X), 1))
        differ = int(np.sum(np.asarray(p.cells(X)) != float32_cells(p, X)))
        print(f"| {size:,} | {old:.4g} | {new:.4g} | {new / old:.2f} | {differ} |")
    if args.fit_sizes:
        _fits([int(float(s)) for s in args.fit_sizes.split(",")], args.repeats, args.depth, rng)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def _fits(sizes: list[int], repeats: int, depth: int, rng: np.random.Generator) -> None:
    from ldptree import LPDTRegressor

    exact = Partition.cells

    def rounded(self: Partition, X: object) -> object:
        return jax.device_put(float32_cells(self, np.asarray(X)))

    print()
    print(
        "| private rows | fit, float32 routing (before) s | fit, float64 routing (now) s | ratio |"
    )
    print("|---|---|---|---|")
    for n in sizes:
        X = rng.uniform(size=(n + 2000, 10))
        y = np.sin(16 * X[:, 0]) + rng.normal(size=n + 2000)
        best = {"float32": float("inf"), "float64": float("inf")}
        try:
            for i in range(repeats + 1):  # the first round compiles
                for name, cells in (("float32", rounded), ("float64", exact)):
                    Partition.cells = cells  # type: ignore[method-assign]
                    model = LPDTRegressor(
                        4.0, depth, 2, mechanism="paper", readout="ratio", random_state=0
                    )
                    start = time.perf_counter()
                    model.fit(X[:n], y[:n], X_public=X[n:], y_public=y[n:])
                    if i:
                        best[name] = min(best[name], time.perf_counter() - start)
        finally:
            Partition.cells = exact  # type: ignore[method-assign]
        old, new = best["float32"], best["float64"]
        print(f"| {n:,} | {old:.3g} | {new:.3g} | {new / old:.2f} |")


if __name__ == "__main__":
    main()
