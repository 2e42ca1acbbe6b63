"""A/B benchmark of the per-holder LPDT fit between two revisions of ldptree, in one run.

Each repeat starts a *fresh* Python process per revision, alternating A, B, A, B, ... (so load
changes hit both alike), and times inside that process:

* ``cold``: the first ``fit`` (includes JAX compilation of every kernel shape);
* ``warm``: the best of ``--warm`` further fits on the same data (compiled programs reused);

with CPU time (``time.process_time``) beside wall time. The revision under test is the working
tree; the baseline is unpacked with ``git archive`` into a temporary folder. The script prints
min and median per revision and the ratio of medians, with the 1-minute load average before and
after. Data: ``X`` uniform on ``[0, 1]^10``, ``y = sin(16 x_1) + N(0, 1)``, 2,000 public rows,
epsilon 4, rho 1/2, max-edge depth 8 (256 cells).

    .venv/bin/python benchmarks/bench_ab.py --baseline e9675eb --n 1000000 --repeats 5

``--smoke`` (toy sizes, one repeat, baseline ``HEAD`` unless given) runs in seconds; the test
suite runs it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from _revisions import ROOT, export, run_json_child

CHILD = r"""
import inspect, json, sys, time
import numpy as np
from ldptree import LPDTRegressor

n, depth, warm = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
X = rng.uniform(size=(n + 2000, 10))
y = np.sin(16 * X[:, 0]) + rng.normal(size=n + 2000)
Xp, yp, Xq, yq = X[:n], y[:n], X[n:], y[n:]

def fit():
    # the papers' configuration where the revision has the variance-aware default
    named = ({"mechanism": "paper", "readout": "ratio"}
             if "readout" in inspect.signature(LPDTRegressor).parameters else {})
    model = LPDTRegressor(epsilon=4.0, max_depth=depth, min_samples_split=5, min_samples_leaf=2,
                          random_state=0, **named)
    w, c = time.perf_counter(), time.process_time()
    model.fit(Xp, yp, X_public=Xq, y_public=yq)
    return time.perf_counter() - w, time.process_time() - c

cold = fit()
warms = [fit() for _ in range(warm)]
best = min(warms)
print(json.dumps({"cold_wall": cold[0], "cold_cpu": cold[1], "warm_wall": best[0],
                  "warm_cpu": best[1]}))
"""


def run(tree: Path, n: int, depth: int, warm: int) -> dict[str, float]:
    return run_json_child(tree, CHILD, n, depth, warm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="git revision to compare against (required)")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.baseline = args.baseline or "HEAD"
        args.n, args.depth, args.repeats, args.warm = 2_000, 3, 1, 1
    if not args.baseline:
        parser.error("--baseline is required")
    with tempfile.TemporaryDirectory() as tmp:
        base = export(args.baseline, Path(tmp))
        load_before = os.getloadavg()[0]
        results: dict[str, list[dict[str, float]]] = {"baseline": [], "current": []}
        for _ in range(args.repeats):
            results["baseline"].append(run(base, args.n, args.depth, args.warm))
            results["current"].append(run(ROOT, args.n, args.depth, args.warm))
        load_after = os.getloadavg()[0]
    print(f"n={args.n} depth={args.depth} repeats={args.repeats} warm fits={args.warm}")
    print(f"baseline={args.baseline}; load average {load_before:.2f} -> {load_after:.2f}")
    for field in ("cold_wall", "cold_cpu", "warm_wall", "warm_cpu"):
        row = []
        medians = {}
        for name, runs in results.items():
            values = [r[field] for r in runs]
            medians[name] = statistics.median(values)
            row.append(f"{name} min {min(values):.3f} s median {medians[name]:.3f} s")
        ratio = medians["current"] / medians["baseline"]
        print(f"{field:10s} " + " | ".join(row) + f" | current/baseline {ratio:.3f}")


if __name__ == "__main__":
    main()
