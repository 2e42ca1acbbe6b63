"""Wall time and peak memory of a per-holder LPDT fit on a memory-mapped private set, A/B.

Writes ``X`` (``float32[n, d]``, uniform on ``[0, 1]^d``) and ``y = sin(16 x_1) + N(0, 1)``
(float32) as ``.npy`` files into a temporary folder (``--tmp``, default the system's), then fits
``LPDTRegressor(epsilon=4, max_depth=depth)`` on ``np.load(path, mmap_mode="r")`` with 2,000
public rows (after ``ldptree.use_host_cores()`` with ``--cores``), once per fresh process,
baseline (a git revision, unpacked with ``git archive``) and then the working tree. Each process
prints its wall time, CPU time, peak resident memory
(``VmHWM`` of ``/proc/self/status``: anonymous memory plus the resident pages of the memory maps
and libraries; ``ru_maxrss`` is not used, as Linux carries the parent's peak into it across the
exec) and a digest of the estimates, so the table shows that both revisions computed the same
fit. The files are deleted at the end (Linux only).

    .venv/bin/python benchmarks/bench_stream.py --baseline cab1e00 --n 10000000 --depth 6

``--smoke`` (5,000 rows, depth 3, baseline ``HEAD`` unless given) runs in seconds; the test suite
runs it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
from _revisions import ROOT, export, run_json_child

CHILD = r"""
import hashlib, inspect, json, sys, time
import numpy as np
from ldptree import LPDTRegressor

folder, depth = sys.argv[1], int(sys.argv[2])
import ldptree
if sys.argv[3] == "cores" and hasattr(ldptree, "use_host_cores"):  # absent before this option
    ldptree.use_host_cores()
X = np.load(f"{folder}/X.npy", mmap_mode="r")
y = np.load(f"{folder}/y.npy", mmap_mode="r")
rng = np.random.default_rng(1)
Xq = rng.uniform(size=(2000, X.shape[1]))
yq = np.sin(16 * Xq[:, 0]) + rng.normal(size=2000)
# the papers' configuration where the revision has the variance-aware default
named = ({"mechanism": "paper", "readout": "ratio"}
         if "readout" in inspect.signature(LPDTRegressor).parameters else {})
model = LPDTRegressor(epsilon=4.0, max_depth=depth, random_state=0, **named)
w, c = time.perf_counter(), time.process_time()
model.fit(X, y, X_public=Xq, y_public=yq)
wall, cpu = time.perf_counter() - w, time.process_time() - c
digest = hashlib.sha256(model.estimates_.count.tobytes() + model.estimates_.label_sum.tobytes())
# peak resident memory of this process (VmHWM; ru_maxrss may carry the parent's over the exec)
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
rss = int(status["VmHWM"].split()[0]) / 1024
print(json.dumps({"wall": wall, "cpu": cpu, "rss_mib": rss, "digest": digest.hexdigest()[:12]}))
"""


def write_data(folder: Path, n: int, d: int, chunk: int = 1 << 20) -> None:
    """The private set as two ``.npy`` files, written chunk by chunk (never whole in memory)."""
    rng = np.random.default_rng(0)
    X = np.lib.format.open_memmap(folder / "X.npy", mode="w+", dtype=np.float32, shape=(n, d))
    y = np.lib.format.open_memmap(folder / "y.npy", mode="w+", dtype=np.float32, shape=(n,))
    for s in range(0, n, chunk):
        block = rng.uniform(size=(min(chunk, n - s), d)).astype(np.float32)
        X[s : s + block.shape[0]] = block
        y[s : s + block.shape[0]] = np.sin(16 * block[:, 0]) + rng.normal(size=block.shape[0])
    X.flush()
    y.flush()
    del X, y


def run(tree: Path, folder: Path, depth: int, cores: bool) -> dict[str, object]:
    return run_json_child(tree, CHILD, folder, depth, "cores" if cores else "one")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="git revision to compare against (omit: current only)")
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--d", type=int, default=4)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--tmp", default=None, help="folder for the data files")
    parser.add_argument(
        "--cores", action="store_true", help="call ldptree.use_host_cores() first (where it exists)"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.baseline = args.baseline or "HEAD"
        args.n, args.depth = 5_000, 3
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        folder = Path(tmp)
        write_data(folder, args.n, args.d)
        trees = {"current": ROOT}
        if args.baseline:
            trees = {"baseline": export(args.baseline, folder), "current": ROOT}
        load_before = os.getloadavg()[0]
        results = {name: run(tree, folder, args.depth, args.cores) for name, tree in trees.items()}
        load_after = os.getloadavg()[0]
    print(f"n={args.n} d={args.d} depth={args.depth} baseline={args.baseline} cores={args.cores}")
    print(f"load average {load_before:.2f} -> {load_after:.2f}")
    print("| revision | fit wall s | fit CPU s | peak RSS MiB | estimates digest |")
    print("|---|---:|---:|---:|---|")
    for name, r in results.items():
        print(f"| {name} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['rss_mib']:.0f} | {r['digest']} |")


if __name__ == "__main__":
    main()
