"""The accelerator's checks and timings: rounds resident on the device against the host path.

Run it on a machine with an accelerator; without one the CPU plays the device (``--smoke`` does
that in the test suite, at toy sizes):

* ``equal``: LPDT and LPCT with the papers' and the automatic mechanisms, on float32 and float64
  rows (``--equal-n`` holders, depth 6): the round's summed statistics and the predictions of a
  fit resident on the default device and of a fit on the CPU's host path must be equal bit for
  bit. Exits with status 1 otherwise, after printing every comparison.
* ``parts``: one piece of ``--part-rows`` holders of the papers' LPDT mechanism (depth 8, d = 4)
  already on the device, its two programs timed apart (scale and route; privatize and sum) and
  the transfer of its float32 rows, median of 5 after a warm-up; beside them the device's own
  rate of Threefry words (``jax.random.bits``, 2^28 words per call) and the kernel's, from the
  mechanism's words per holder ``W``: the fraction of the word rate the kernel reaches.
* ``speed``: whole per-holder fits, each configuration in a fresh process: LPDT (the papers'
  mechanism and read-out, epsilon 4, depth 8, 20,000 public rows) at ``--sizes`` for each of
  ``--pieces`` (holders per resident piece; ``auto`` is the executor's choice) and LPCT (the
  papers' mechanism, epsilon 2, depth 8) at ``--lpct-sizes``; memory-mapped float32 rows
  (``X ~ U[0,1]^4``); the first fit and the best of ``--warm`` more, wall and CPU seconds, and
  the process's peak resident memory (``VmHWM``). ``--block`` sweeps the kernel's rows per step
  on an accelerator.

    python benchmarks/bench_device.py                  # the full run (minutes on one GPU)
    python benchmarks/bench_device.py --only equal     # the bitwise check alone
    .venv/bin/python benchmarks/bench_device.py --smoke    # seconds, on the CPU (tested)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _revisions import ROOT, run_json_child

PARTS = ("equal", "parts", "speed")

CHILD = r"""
import json, sys, time
import numpy as np
from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.rounds import Threads

kind, folder, n, depth = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pieces, warm, n_public, block = sys.argv[5], int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
if block != "auto":  # the sweep: the accelerator's entry of the table the executor reads
    from ldptree.rounds import _resident
    _resident.KERNEL_BLOCK["accelerator"] = int(block)
X = np.load(f"{folder}/X.npy", mmap_mode="r")[:n]
rng = np.random.default_rng(1)
Xq = rng.uniform(size=(n_public, X.shape[1]))
yq = np.sin(16 * Xq[:, 0]) + rng.normal(size=n_public)
if kind == "lpdt":
    y = np.load(f"{folder}/y.npy", mmap_mode="r")[:n]
    est = LPDTRegressor(epsilon=4.0, max_depth=depth, mechanism="paper", readout="ratio",
                        random_state=0)
else:
    y = np.load(f"{folder}/c.npy", mmap_mode="r")[:n]
    yq = (yq > 0).astype(np.int8)
    est = LPCTClassifier(epsilon=2.0, max_depth=depth, mechanism="paper", random_state=0)
executor = Threads(piece_rows=None if pieces == "auto" else int(pieces))

def timed():
    w, c = time.perf_counter(), time.process_time()
    pending = est._start_fit(X, y, X_public=Xq, y_public=yq)
    pending.run(executor)
    return time.perf_counter() - w, time.process_time() - c, pending

first = timed()
warms = [timed() for _ in range(warm)]
r = first[2].round
words = r.mechanism.words_per_holder(r.n_cells)
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(json.dumps({
    "first_wall": first[0], "first_cpu": first[1],
    "warm_wall": min(w[0] for w in warms) if warms else None,
    "warm_cpu": min(w[1] for w in warms) if warms else None,
    "words": words, "leaves": r.n_cells,
    "rss_mib": int(status["VmHWM"].split()[0]) / 1024,
}))
"""


def equal(n: int) -> bool:
    """The bitwise comparison (module docstring); prints one line per configuration."""
    import jax

    from ldptree import LPCTClassifier, LPDTRegressor
    from ldptree.rounds import Threads, run

    cpu = jax.devices("cpu")[0]
    device = jax.devices()[0]
    rng = np.random.default_rng(11)
    ok = True
    for dtype in (np.float32, np.float64):
        X = (rng.uniform(-1, 3, size=(n, 4))).astype(dtype)
        y = np.sin(4 * X[:, 0]) + rng.normal(size=n)
        Xq = rng.uniform(-1, 3, size=(2000, 4))
        yq = np.sin(4 * Xq[:, 0]) + rng.normal(size=2000)
        X_test = rng.uniform(-1.5, 3.5, size=(10_000, 4))
        for name in ("lpdt-paper", "lpdt-auto", "lpct-paper", "lpct-auto"):
            mechanism = name.split("-")[1]
            classes = name.startswith("lpct")
            labels, public = ((y > 0).astype(int), (yq > 0).astype(int)) if classes else (y, yq)
            outs = []
            # the CPU's host path, then the device's resident round (on a CPU-only machine the
            # CPU plays the device: the resident round forced there)
            for where, resident in ((cpu, False), (device, True)):
                make = LPCTClassifier if classes else LPDTRegressor
                est = make(max_depth=6, mechanism=mechanism, random_state=0)
                with jax.default_device(where):
                    pending = est._start_fit(X, labels, X_public=Xq, y_public=public)
                    result = run(
                        [pending.round], pending.rows, executor=Threads(resident=resident)
                    )[0]
                    model = pending.finish(result.estimates)
                    guess = model.predict(X_test)
                leaves = [np.asarray(v) for v in jax.tree_util.tree_leaves(result.state.stats)]
                outs.append((leaves, np.asarray(guess)))
            same = all(
                a.dtype == b.dtype and np.array_equal(a, b)
                for a, b in zip(outs[0][0] + [outs[0][1]], outs[1][0] + [outs[1][1]], strict=True)
            )
            ok = ok and same
            label = np.dtype(dtype).name
            print(f"equal {name} {label} n={n} {device.platform} vs cpu: {same}", flush=True)
    return ok


def parts(rows: int, blocks: list[int], folder: Path) -> None:
    """One resident piece's programs timed apart, and the word rates (module docstring)."""
    import jax

    from ldptree import LPDTRegressor
    from ldptree.rounds import _resident as resident

    X = np.load(folder / "X.npy", mmap_mode="r")[:rows]
    y = np.load(folder / "y.npy", mmap_mode="r")[:rows]
    rng = np.random.default_rng(1)
    Xq = rng.uniform(size=(20_000, 4))
    yq = np.sin(16 * Xq[:, 0]) + rng.normal(size=20_000)
    est = LPDTRegressor(epsilon=4.0, max_depth=8, mechanism="paper", random_state=0)
    pending = est._start_fit(X, y, X_public=Xq, y_public=yq)
    r = pending.round
    labels = np.asarray(y, dtype=np.float32)
    piece = resident.ResidentRound.of(r, r.key, rows, labels[:1])  # blocks: swept below
    host_X = np.ascontiguousarray(X)

    def median(fn: Any) -> float:
        jax.block_until_ready(fn())
        times = []
        for _ in range(5):
            t = time.perf_counter()
            jax.block_until_ready(fn())
            times.append(time.perf_counter() - t)
        return sorted(times)[2]

    with jax.enable_x64(True):
        X_dev = jax.device_put(host_X)
        t_put = median(lambda: jax.device_put(host_X))
        args = (piece.walk, piece.lo, piece.scale, X_dev, np.int32(rows))
        t_route = median(lambda: resident._resident_cells(*args))
        cells, _ = resident._resident_cells(*args)
    labels_dev = jax.device_put(labels)
    t_words = median(lambda: jax.random.bits(jax.random.key(0), (1 << 28,), dtype=np.uint32))
    words = r.mechanism.words_per_holder(r.n_cells)
    device_rate = (1 << 28) / t_words
    print(f"parts rows={rows} cells={r.n_cells} W={words} device={jax.devices()[0]}")
    print(f"parts transfer {t_put * 1e3:.2f} ms, scale+route {t_route * 1e3:.2f} ms")
    print(f"parts device threefry {device_rate:.3e} words/s", flush=True)
    for block in blocks:
        kernel_args = (piece.mechanism.summary_kernel, piece.spec, min(block, rows))

        def kernel(a: Any = kernel_args) -> Any:
            return resident._resident_sums(
                *a, piece.consts, piece.key_data, cells, labels_dev, np.uint32(0), np.int32(rows)
            )

        t_kernel = median(kernel)
        kernel_rate = rows * words / t_kernel
        print(
            f"parts block={block} privatize+sum {t_kernel * 1e3:.2f} ms, {kernel_rate:.3e} "
            f"words/s ({kernel_rate / device_rate:.2f} of the device's rate)",
            flush=True,
        )


def write_data(folder: Path, n: int, d: int = 4, chunk: int = 1 << 22) -> None:
    """float32 ``X``, ``y`` and int8 classes ``c = 1{y > 0}`` as ``.npy`` files, in chunks."""
    rng = np.random.default_rng(0)
    X = np.lib.format.open_memmap(folder / "X.npy", mode="w+", dtype=np.float32, shape=(n, d))
    y = np.lib.format.open_memmap(folder / "y.npy", mode="w+", dtype=np.float32, shape=(n,))
    c = np.lib.format.open_memmap(folder / "c.npy", mode="w+", dtype=np.int8, shape=(n,))
    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        block = rng.random((m, d), dtype=np.float32)
        X[s : s + m] = block
        y[s : s + m] = np.sin(16 * block[:, 0]) + rng.standard_normal(m, dtype=np.float32)
        c[s : s + m] = y[s : s + m] > 0
    for arr in (X, y, c):
        arr.flush()
    del X, y, c


def speed(args: argparse.Namespace, folder: Path) -> None:
    """Whole fits in fresh processes (module docstring); one line each."""
    runs = [("lpdt", n, p, b) for n in args.sizes for p in args.pieces for b in args.block]
    runs += [("lpct", n, "auto", "auto") for n in args.lpct_sizes]
    for kind, n, p, b in runs:
        out = run_json_child(
            ROOT, CHILD, kind, folder, n, args.depth, p, args.warm, args.public, b, cache="off"
        )
        warm = out["warm_wall"]
        rate = "-" if warm is None else f"{n * out['words'] / warm:.3e}"
        print(
            f"speed {kind} n={n:.0e} pieces={p} block={b} leaves={out['leaves']} "
            f"first {out['first_wall']:.2f} s (CPU {out['first_cpu']:.2f}) "
            f"warm {warm if warm is None else round(warm, 3)} s "
            f"(CPU {out['warm_cpu'] if warm is None else round(out['warm_cpu'], 2)}) "
            f"words/s {rate} peak RSS {out['rss_mib']:.0f} MiB",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = lambda s: int(float(s))  # noqa: E731
    parser.add_argument("--only", type=lambda s: s.split(","), default=list(PARTS))
    parser.add_argument("--equal-n", type=size, default=200_000)
    parser.add_argument("--part-rows", type=size, default=1 << 21)
    parser.add_argument(
        "--sizes", type=lambda s: [size(v) for v in s.split(",")], default=[10**7, 10**8]
    )
    parser.add_argument("--pieces", type=lambda s: s.split(","), default=["auto"])
    parser.add_argument(
        "--lpct-sizes", type=lambda s: [size(v) for v in s.split(",") if v], default=[10**7]
    )
    parser.add_argument(
        "--blocks",
        type=lambda s: [size(v) for v in s.split(",")],
        default=[1 << 13, 1 << 15, 1 << 17, 1 << 19],
        help="rows per step of the kernel's loop, timed in the parts run",
    )
    parser.add_argument(
        "--block",
        type=lambda s: s.split(","),
        default=["auto"],
        help="rows per kernel step of the speed runs on an accelerator (auto: the default)",
    )
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--public", type=int, default=20_000)
    parser.add_argument("--warm", type=int, default=2)
    parser.add_argument("--tmp", default=None, help="folder for the data files")
    parser.add_argument("--smoke", action="store_true", help="toy sizes on any machine (tested)")
    args = parser.parse_args()
    if args.smoke:
        args.equal_n, args.part_rows, args.sizes, args.lpct_sizes = 3000, 4096, [5000], [3000]
        args.blocks = [1024, 4096]
        args.pieces, args.depth, args.public, args.warm = ["2048"], 3, 300, 1
    unknown = set(args.only) - set(PARTS)
    if unknown:
        parser.error(f"--only takes {', '.join(PARTS)}; got {sorted(unknown)}")
    ok = True
    if "equal" in args.only:
        ok = equal(args.equal_n)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        folder = Path(tmp)
        need = max([*args.sizes, *args.lpct_sizes, args.part_rows if "parts" in args.only else 0])
        if {"parts", "speed"} & set(args.only):
            t = time.perf_counter()
            write_data(folder, need)
            print(f"data: {need:.0e} rows written in {time.perf_counter() - t:.1f} s", flush=True)
        if "parts" in args.only:
            parts(args.part_rows, args.blocks, folder)
        if "speed" in args.only:
            speed(args, folder)
    if not ok:
        print("FAILED: a resident round differs from the host path", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
