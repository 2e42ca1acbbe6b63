"""Before/after timing of public-tree growth (the partition rules' ``fit``), in one run.

Grows depth-``--depth`` trees with the max-edge, CART (quantile thresholds) and random max-edge
rules on ``n`` public rows, ``X ~ U[0, 1]^d``, ``y = sin(4 x_1) + x_2 + N(0, 0.1^2)``, for a
baseline revision and the working tree. Each side runs in its own long-lived worker process
(``git archive <rev>`` unpacked into a temporary folder for the baseline), and the timed fits are
interleaved: for every repeat, size and rule, baseline then current. It prints a Markdown table
with the minimum and median wall time of each side, the speed-up of the minima, whether the two
partitions are identical (their exact JSON), and the 1-minute load average before and after the
run (the machine is shared: contention only ever adds time, hence the minimum). No assertions.

Usage::

    .venv/bin/python benchmarks/bench_trees.py [--baseline REV] [--sizes 2000 20000 200000]
        [--depth 8] [--features 10] [--repeats 5]

``--smoke`` (200 rows, depth 3, one repeat, baseline ``HEAD`` unless given) runs in seconds; the
test suite runs it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _revisions import ROOT, export

#: The last commit before the faster public-tree growth.
DEFAULT_BASELINE = "f3ad450"
RULES = ("MaxEdgePartitioner", "CartPartitioner", "RandomMaxEdgePartitioner")

# The worker: reads one JSON request per line, answers with the wall time of one fit and a digest
# of the partition. Data are drawn once per size, with a fixed seed, identically on both sides.
_WORKER = """
import hashlib, json, sys, time
import jax, numpy as np
import ldptree.partitions as partitions
data = {}
for line in sys.stdin:
    req = json.loads(line)
    n, d = req["n"], req["d"]
    if (n, d) not in data:
        rng = np.random.default_rng(0)
        X = rng.uniform(size=(n, d))
        data[n, d] = X, np.sin(4 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=n)
    X, y = data[n, d]
    rule = getattr(partitions, req["rule"])(max_depth=req["depth"])
    key = jax.random.key(0)
    start = time.perf_counter()
    partition = rule.fit(X, y, key=key)
    wall = time.perf_counter() - start
    digest = hashlib.sha256(partition.to_json().encode()).hexdigest()
    print(json.dumps({"wall": wall, "digest": digest, "leaves": partition.n_leaves}), flush=True)
"""


class _Worker:
    def __init__(self, source: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(source), LDPTREE_JAX_CACHE="off")
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WORKER],
            env=env,
            cwd=source,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def fit(self, **request: object) -> dict[str, object]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer: dict[str, object] = json.loads(self.process.stdout.readline())
        return answer

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=None, help=f"default {DEFAULT_BASELINE}")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 200000])
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.baseline = args.baseline or "HEAD"
        args.sizes, args.depth, args.features, args.repeats = [200], 3, 4, 1
    args.baseline = args.baseline or DEFAULT_BASELINE

    with tempfile.TemporaryDirectory() as tmp:
        sides = {"before": _Worker(export(args.baseline, Path(tmp))), "after": _Worker(ROOT)}
        common = {"d": args.features, "depth": args.depth}
        for n in args.sizes:  # warm-up: imports, the first JAX dispatches, the data draws
            for rule in RULES:
                for worker in sides.values():
                    worker.fit(n=n, rule=rule, **common)
        load_before = _uptime()
        times: dict[tuple[str, int, str], list[float]] = {}
        digests: dict[tuple[str, int, str], set[object]] = {}
        for _ in range(args.repeats):
            for n in args.sizes:
                for rule in RULES:
                    for side, worker in sides.items():
                        answer = worker.fit(n=n, rule=rule, **common)
                        times.setdefault((side, n, rule), []).append(float(answer["wall"]))
                        digests.setdefault((side, n, rule), set()).add(answer["digest"])
        load_after = _uptime()
        for worker in sides.values():
            worker.close()

    print(
        f"Public-tree growth, depth {args.depth}, d = {args.features}, {args.repeats} interleaved"
        f" repeats; baseline {args.baseline} vs the working tree\n"
    )
    print(
        "| rows | rule | before min (s) | before median | after min (s) | after median "
        "| speed-up (min) | same partition |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|:---:|")
    for n in args.sizes:
        for rule in RULES:
            before, after = times["before", n, rule], times["after", n, rule]
            same = digests["before", n, rule] == digests["after", n, rule]
            print(
                f"| {n:,} | {rule.removesuffix('Partitioner')} | {min(before):.3f} "
                f"| {statistics.median(before):.3f} | {min(after):.3f} "
                f"| {statistics.median(after):.3f} | {min(before) / min(after):.1f}x "
                f"| {'yes' if same else 'NO'} |"
            )
    print(f"\nload before: {load_before}\nload after:  {load_after}")


if __name__ == "__main__":
    main()
