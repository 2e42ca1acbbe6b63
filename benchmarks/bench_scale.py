"""The `make bench` table: LPDT and LPCT fits from n = 10^4 to 10^8, each in fresh processes.

Every measurement runs in a *fresh* Python process (``_revisions.run_json_child``), and the
configurations are interleaved (repeat 1 of every configuration, then repeat 2, ...), so a change
of load hits all of them alike. Each process times:

* ``cold``: its first ``fit`` with JAX's persistent compilation cache off (everything compiles);
* ``cached``: (separate processes, ``n <= --cached-max-n``) its first ``fit`` with a persistent
  cache that an earlier process filled: what a user's second script run costs;
* ``warm``: the best of ``--warm`` further fits in the same process (``n <= --warm-max-n``);

with CPU seconds (``time.process_time``, all threads) beside wall seconds, the peak resident
memory (``VmHWM``) of the process and the 1-minute load average before and after. The table
gives the minimum and the median over ``--repeats`` processes.

Configurations (``--only`` picks some):

* ``lpdt``: ``LPDTRegressor`` (epsilon 4, rho 1/2, max-edge depth ``--depth``), per holder, on a
  memory-mapped ``float32`` private set (``X ~ U[0,1]^4``, ``y = sin(16 x_1) + N(0, 1)``);
* ``lpdt-cores``: the same after ``ldptree.use_host_cores()`` (one JAX CPU device per core);
* ``lpct``: ``LPCTClassifier`` (epsilon 2, depth ``--depth``), per holder, labels
  ``1{y > 0}`` (``n <= --lpct-max-n``);
* ``lpct-agg``: the same with ``simulation="aggregate"`` at depth ``--agg-depth`` (about 2^depth
  cells; not the protocol: per-cell sums drawn in law, for experiments at any ``n``);
* ``ref``: the authors' reference ``lpdt`` 0.0.2 (``LPDT.LPDTreeRegressor``, same settings as
  ``bench_lpdt.py``; in-memory ``float64`` copy of the data; ``n <= --ref-max-n``), skipped when
  the package is not importable (an optional peer, never a dependency);
* ``ref-one-noise``: the reference with a patched copy of its attribution loop in which every
  holder draws *one* Laplace label noise, shared by all leaves (the reference redraws it in every
  leaf: ``L`` noisy copies of each label). Its randomized response on the leaf indicator is
  unchanged (one flip per holder and leaf, as the mechanism needs). It shows how much of the
  reference's time is the repeated label noise; it is not the reference's algorithm.

Data are written once as ``.npy`` files (21 bytes per row: 2.1 GB at 10^8) into ``--tmp``
and deleted at the end. Prints a markdown table and writes it (and a CSV) to
``benchmarks/results/bench_scale.{md,csv}`` (git-ignored).

    .venv/bin/python benchmarks/bench_scale.py                       # the full table
    .venv/bin/python benchmarks/bench_scale.py --sizes 1e4,1e5 --repeats 1 --warm 1   # a short run
    .venv/bin/python benchmarks/bench_scale.py --smoke     # seconds, writes no files (tested)
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _revisions import ROOT, run_json_child

RESULTS_DIR = Path(__file__).resolve().parent / "results"
CONFIGS = ("lpdt", "lpdt-cores", "lpct", "lpct-agg", "ref", "ref-one-noise")

CHILD = r"""
import json, os, sys, time
import numpy as np

impl, folder = sys.argv[1], sys.argv[4]
n, depth, warm = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
n_public = int(sys.argv[6])
load_before = os.getloadavg()[0]
if impl == "lpdt-cores":
    import ldptree
    ldptree.use_host_cores()
X = np.load(f"{folder}/X.npy", mmap_mode="r")[:n]
y = np.load(f"{folder}/y.npy", mmap_mode="r")[:n]
rng = np.random.default_rng(1)
Xq = rng.uniform(size=(n_public, X.shape[1]))
yq = np.sin(16 * Xq[:, 0]) + rng.normal(size=n_public)

if impl.startswith("ref"):
    import LPDT
    from scipy.stats import laplace
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)

    def one_noise_attribution(self, X, Y):
        # the reference's attribute_data and RegressionRandomPermutationEstimator.get_data, with
        # the label noise drawn once per holder instead of once per holder and leaf
        test_idx = self.apply(X)
        leaves = list(self.get_all_node_idx())
        scale = self.tree_.leafnode_fun[leaves[0]].noise_level_Y
        noise_Y = laplace.rvs(size=Y.shape[0], scale=scale)
        for node_idx in leaves:
            est = self.tree_.leafnode_fun[node_idx]
            in_idx = test_idx == node_idx
            privatized = in_idx.copy()
            p = est.rev_prob
            flip = np.random.choice(2, in_idx.shape[0], p=[p, 1 - p]).astype(bool)
            privatized[flip] = 1 - privatized[flip]
            V = (Y.ravel() + noise_Y) * (privatized.ravel() + p - 1)
            U = privatized + p - 1
            est.U_sum = U.sum() / (2 * p - 1)
            est.V_sum = V.sum() / (2 * p - 1)
            ratio_ok = U.sum() / (2 * p - 1) >= Y.shape[0] * est.min_ratio_pri_est
            est.y_hat = V.sum() / U.sum() if len(U) and ratio_ok else est.public_Y_mean

    if impl == "ref-one-noise":
        LPDT.tree.LPDTreeRegressor.attribute_data = one_noise_attribution

    def make():
        return LPDT.LPDTreeRegressor(
            splitter="msemaxedge", estimator="random_permutation", epsilon=4.0, public_X=Xq,
            public_Y=yq, min_samples_split=5, min_samples_leaf=2, max_depth=depth,
            proportion_budget=0.5, range_x="unit", min_ratio_pri_est=0)

    def fit():
        model = make()
        model.fit(X, y)
        return len(model.tree_.leaf_ids)
    make().fit(X[:1000], y[:1000])  # compiles the reference's numba criterion (not timed)
else:
    from ldptree import LPCTClassifier, LPDTRegressor

    def fit():
        if impl.startswith("lpdt"):
            # the papers' mechanism and read-out: what the reference computes
            model = LPDTRegressor(
                epsilon=4.0, max_depth=depth, mechanism="paper", readout="ratio", random_state=0
            )
            model.fit(X, y, X_public=Xq, y_public=yq)
        else:
            sim = "aggregate" if impl == "lpct-agg" else "per_holder"
            model = LPCTClassifier(
                epsilon=2.0, max_depth=depth, mechanism="paper", simulation=sim, random_state=0
            )
            labels = np.load(f"{folder}/c.npy", mmap_mode="r")[:n]
            model.fit(X, labels, X_public=Xq, y_public=(yq > 0).astype(np.int8))
        return model.partition_.n_leaves

def timed():
    w, c = time.perf_counter(), time.process_time()
    leaves = fit()
    return time.perf_counter() - w, time.process_time() - c, leaves

first = timed()
warms = [timed() for _ in range(warm)]
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(json.dumps({
    "first_wall": first[0], "first_cpu": first[1], "leaves": first[2],
    "warm_wall": min(w[0] for w in warms) if warms else None,
    "warm_cpu": min(w[1] for w in warms) if warms else None,
    "rss_mib": int(status["VmHWM"].split()[0]) / 1024,
    "load_before": load_before, "load_after": os.getloadavg()[0],
}))
"""


def _size(text: str) -> int:
    return int(float(text))


def write_data(folder: Path, n: int, d: int = 4, chunk: int = 1 << 20) -> None:
    """``X`` (float32), ``y`` (float32) and the class labels ``c = 1{y > 0}`` (int8) as ``.npy``
    files, written chunk by chunk (never whole in memory)."""
    rng = np.random.default_rng(0)
    X = np.lib.format.open_memmap(folder / "X.npy", mode="w+", dtype=np.float32, shape=(n, d))
    y = np.lib.format.open_memmap(folder / "y.npy", mode="w+", dtype=np.float32, shape=(n,))
    c = np.lib.format.open_memmap(folder / "c.npy", mode="w+", dtype=np.int8, shape=(n,))
    for s in range(0, n, chunk):
        block = rng.uniform(size=(min(chunk, n - s), d)).astype(np.float32)
        m = block.shape[0]
        X[s : s + m] = block
        y[s : s + m] = np.sin(16 * block[:, 0]) + rng.normal(size=m)
        c[s : s + m] = y[s : s + m] > 0
    for arr in (X, y, c):
        arr.flush()
    del X, y, c


def plan(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """``(configuration, n, depth)`` triples in table order."""
    has_ref = importlib.util.find_spec("LPDT") is not None
    if not has_ref:
        print("reference package `lpdt` not importable: its rows are skipped", file=sys.stderr)
    runs = []
    for impl in args.only:
        for n in args.sizes:
            if impl == "lpct" and n > args.lpct_max_n:
                continue
            if impl.startswith("ref") and (not has_ref or n > args.ref_max_n):
                continue
            runs.append((impl, n, args.agg_depth if impl == "lpct-agg" else args.depth))
    return runs


def child(
    folder: Path, impl: str, n: int, depth: int, warm: int, cache: str, public: int
) -> dict[str, Any]:
    """One fresh process; ``cache`` is its ``LDPTREE_JAX_CACHE`` (``"off"`` or a folder)."""
    return run_json_child(ROOT, CHILD, impl, n, depth, folder, warm, public, cache=cache)


def _stats(values: list[float | None]) -> tuple[float, float] | None:
    kept = [v for v in values if v is not None]
    return (min(kept), statistics.median(kept)) if kept else None


def _cell(pair: tuple[float, float] | None, spec: str = ".2f") -> str:
    return "-" if pair is None else f"{pair[0]:{spec}} / {pair[1]:{spec}}"


HEADER = (
    "| config | n | depth | leaves | cold wall s | cold CPU s | cached wall s | warm wall s "
    "| warm CPU s | peak RSS MiB | load |"
)


def table(results: dict[tuple[str, int, int], dict[str, list[Any]]]) -> list[str]:
    lines = [HEADER, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (impl, n, depth), runs in results.items():
        cold = runs["cold"]
        cached = runs["cached"]
        loads = [r["load_before"] for r in cold] + [r["load_after"] for r in cold]
        lines.append(
            f"| {impl} | {n:.0e} | {depth} | {cold[0]['leaves']} "
            f"| {_cell(_stats([r['first_wall'] for r in cold]))} "
            f"| {_cell(_stats([r['first_cpu'] for r in cold]))} "
            f"| {_cell(_stats([r['first_wall'] for r in cached]))} "
            f"| {_cell(_stats([r['warm_wall'] for r in cold]))} "
            f"| {_cell(_stats([r['warm_cpu'] for r in cold]))} "
            f"| {max(r['rss_mib'] for r in cold):.0f} "
            f"| {min(loads):.1f}-{max(loads):.1f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda s: [_size(v) for v in s.split(",")],
        default=[10**4, 10**5, 10**6, 10**7, 10**8],
    )
    parser.add_argument("--only", type=lambda s: s.split(","), default=list(CONFIGS))
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--public", type=int, default=2000, help="public rows")
    parser.add_argument("--agg-depth", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warm", type=int, default=2)
    parser.add_argument("--warm-max-n", type=_size, default=10**7)
    parser.add_argument("--cached-max-n", type=_size, default=10**6)
    parser.add_argument("--lpct-max-n", type=_size, default=10**6)
    parser.add_argument("--ref-max-n", type=_size, default=10**6)
    parser.add_argument("--tmp", default=None, help="folder for the data files")
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    if args.smoke:  # every kind of run once (cold, cached, warm) at toy sizes, no reference
        args.sizes, args.only, args.depth, args.agg_depth = [2_000], ["lpdt", "lpct-agg"], 3, 4
        args.public, args.repeats, args.warm = 200, 1, 1
    unknown = set(args.only) - set(CONFIGS)
    if unknown:
        parser.error(f"unknown configurations {sorted(unknown)}; choose from {CONFIGS}")
    runs = plan(args)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        folder = Path(tmp)
        write_data(folder, max(args.sizes))
        cache = folder / "jax-cache"
        results: dict[tuple[str, int, int], dict[str, list[Any]]] = {
            r: {"cold": [], "cached": []} for r in runs
        }
        for impl, n, depth in runs:  # fill the persistent cache (not timed)
            if not impl.startswith("ref") and n <= args.cached_max_n:
                child(folder, impl, n, depth, 0, str(cache), args.public)
        for repeat in range(args.repeats):
            for impl, n, depth in runs:
                warm = args.warm if n <= args.warm_max_n else 0
                out = child(folder, impl, n, depth, warm, "off", args.public)
                results[(impl, n, depth)]["cold"].append(out)
                if not impl.startswith("ref") and n <= args.cached_max_n:
                    cached = child(folder, impl, n, depth, 0, str(cache), args.public)
                    results[(impl, n, depth)]["cached"].append(cached)
                print(
                    f"repeat {repeat + 1}: {impl} n={n:.0e} cold {out['first_wall']:.2f} s",
                    file=sys.stderr,
                    flush=True,
                )
    elapsed = time.perf_counter() - started
    lines = [
        f"`bench_scale.py` on {os.cpu_count()} cores, {args.public} public rows, "
        f"{args.repeats} interleaved repeats "
        f"(fresh processes), {elapsed / 60:.1f} min in all; cells are min / median.",
        "",
        *table(results),
    ]
    print("\n".join(lines))
    if args.smoke:
        return
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "bench_scale.md").write_text("\n".join(lines) + "\n")
    with (RESULTS_DIR / "bench_scale.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            [
                "config",
                "n",
                "depth",
                "mode",
                "repeat",
                "first_wall",
                "first_cpu",
                "warm_wall",
                "warm_cpu",
                "rss_mib",
                "leaves",
                "load_before",
                "load_after",
            ]
        )
        for (impl, n, depth), modes in results.items():
            for mode, outs in modes.items():
                for i, r in enumerate(outs):
                    writer.writerow(
                        [
                            impl,
                            n,
                            depth,
                            mode,
                            i,
                            r["first_wall"],
                            r["first_cpu"],
                            r["warm_wall"],
                            r["warm_cpu"],
                            r["rss_mib"],
                            r["leaves"],
                            r["load_before"],
                            r["load_after"],
                        ]
                    )


if __name__ == "__main__":
    main()
