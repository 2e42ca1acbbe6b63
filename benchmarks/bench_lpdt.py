"""Speed benchmark of :class:`ldptree.LPDTRegressor` against the authors' reference ``lpdt``.

Synthetic data (LPDT paper's simulation model, with ``d`` features): ``X`` uniform on
``[0, 1]^d``, ``y = sin(16 x_1) + N(0, 1)``; ``n_q`` public rows, ``n`` private rows (the first
``n`` of one draw of the largest size) and ``n_test`` test rows; ``epsilon = 4``, budget split
``rho = 1/2``, ``min_samples_split = 5``, ``min_samples_leaf = 2``.

For each ``(n, depth)`` the script calls ``fit`` and ``predict`` once untimed-for-statistics (the
"first call", which includes JAX compilation for shapes not seen before; reported separately),
then ``--repeats`` more times and reports the **minimum** of those (best-of-N: the machine may be
shared, and contention only ever adds time); medians and the 1-minute load average go to the CSV.

The reference package is optional and never a dependency of ldptree. Opt in with
``.venv/bin/pip install lpdt==0.0.2`` (or ``make bench-reference``); when ``import LPDT`` works in
the running interpreter it is timed on the same data in the same run. Settings are matched as
closely as the two APIs allow (see ``REFERENCE_NOTES`` and ``benchmarks/README.md``).

``--smoke`` (2,000 rows, depth 3, one repeat, 1,000 test rows, ldptree only, no results files)
runs in seconds; the test suite runs it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import importlib.metadata
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np

import ldptree
from ldptree import LPDTRegressor

FloatArray = np.ndarray[Any, np.dtype[np.float64]]

N_FEATURES = 10
N_PUBLIC = 2000
N_TEST = 100_000
EPSILON = 4.0
BUDGET_SPLIT = 0.5
MIN_SAMPLES_SPLIT = 5
MIN_SAMPLES_LEAF = 2
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (10_000, 100_000)
DEFAULT_DEPTHS = (4, 8)
RESULTS_DIR = Path(__file__).resolve().parent / "results"

REFERENCE_NOTES = (
    "reference = LPDT.LPDTreeRegressor(splitter='msemaxedge', estimator='random_permutation', "
    "range_x='unit') with public_X/public_Y in the constructor and fit(X_private, y_private); "
    "ours = LPDTRegressor defaults: same data, same max-edge rule, same depth, epsilon, rho, "
    "min_samples_split/leaf.",
    "Unavoidable differences: the reference's root cell is [0, 1]^d, ours the public min-max box "
    "(so the partitions differ slightly; compare n_leaves); the reference takes the label range "
    "from the PRIVATE labels (ours: public [min, max] of y_public, private labels clipped); it "
    "draws flips and a fresh Laplace label noise with numpy once per leaf (O(n L) work and L "
    "noisy copies of each label), ours one report per holder (JAX threefry, O(n L) Bernoulli "
    "bits); its `apply` is a per-row Python loop, ours a vectorised gather.",
)


# -- data -----------------------------------------------------------------------------------------
def make_data(rng: np.random.Generator, n: int, d: int) -> tuple[FloatArray, FloatArray]:
    """``X ~ U[0, 1]^d``, ``y = sin(16 x_1) + N(0, 1)``."""
    X = rng.uniform(size=(n, d))
    y = np.sin(16.0 * X[:, 0]) + rng.normal(size=n)
    return X, y


@dataclass(frozen=True)
class Dataset:
    X: FloatArray
    y: FloatArray
    X_public: FloatArray
    y_public: FloatArray
    X_test: FloatArray
    y_test: FloatArray


def make_dataset(seed: int, n_max: int, n_test: int = N_TEST) -> Dataset:
    rng = np.random.default_rng(seed)
    X_public, y_public = make_data(rng, N_PUBLIC, N_FEATURES)
    X_test, y_test = make_data(rng, n_test, N_FEATURES)
    X, y = make_data(rng, n_max, N_FEATURES)
    return Dataset(X, y, X_public, y_public, X_test, y_test)


# -- timing ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds: the first call, then the median and minimum of the repeats."""

    first: float
    median: float
    best: float


def _clock(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    out = call()
    if isinstance(out, jax.Array):  # our outputs are host arrays already; never time a dispatch
        out.block_until_ready()
    return time.perf_counter() - start


def time_calls(call: Callable[[], object], repeats: int) -> Timing:
    """Run ``call`` once (first call, compile included) and then ``repeats`` timed times."""
    first = _clock(call)
    runs = [_clock(call) for _ in range(repeats)]
    return Timing(first=first, median=statistics.median(runs), best=min(runs))


# -- the two implementations ---------------------------------------------------------------------
@dataclass(frozen=True)
class Measured:
    fit: Timing
    predict: Timing
    n_leaves: int
    test_mse: float


def run_ours(data: Dataset, n: int, depth: int, repeats: int, seed: int) -> Measured:
    X, y = data.X[:n], data.y[:n]
    model = LPDTRegressor(
        epsilon=EPSILON,
        max_depth=depth,
        min_samples_leaf=MIN_SAMPLES_LEAF,
        min_samples_split=MIN_SAMPLES_SPLIT,
        budget_split=BUDGET_SPLIT,
        mechanism="paper",
        readout="ratio",
        random_state=seed,
    )

    def fit() -> object:
        return model.fit(X, y, X_public=data.X_public, y_public=data.y_public).leaf_values_

    fit_t = time_calls(fit, repeats)
    predict_t = time_calls(lambda: model.predict(data.X_test), repeats)
    mse = float(np.mean((model.predict(data.X_test) - data.y_test) ** 2))
    return Measured(fit_t, predict_t, model.partition_.n_leaves, mse)


def load_reference() -> ModuleType | None:
    """The reference package ``LPDT`` if it is importable here, else ``None``."""
    try:
        return importlib.import_module("LPDT")
    except ImportError:
        return None


def _reference_model(lpdt: ModuleType, data: Dataset, depth: int) -> Any:
    return lpdt.LPDTreeRegressor(
        splitter="msemaxedge",
        estimator="random_permutation",
        epsilon=EPSILON,
        public_X=data.X_public,
        public_Y=data.y_public,
        min_samples_split=MIN_SAMPLES_SPLIT,
        min_samples_leaf=MIN_SAMPLES_LEAF,
        max_depth=depth,
        proportion_budget=BUDGET_SPLIT,
        range_x="unit",
        min_ratio_pri_est=0,
    )


def warm_up_reference(lpdt: ModuleType, data: Dataset) -> float:
    """One small fit + predict, compiling the reference's numba criterion; returns seconds."""
    model = _reference_model(lpdt, data, depth=2)
    start = time.perf_counter()
    model.fit(data.X[:1000], data.y[:1000]).predict(data.X_test[:1000])
    return time.perf_counter() - start


def run_reference(lpdt: ModuleType, data: Dataset, n: int, depth: int, repeats: int) -> Measured:
    X, y = data.X[:n], data.y[:n]
    model = _reference_model(lpdt, data, depth)
    fit_t = time_calls(lambda: model.fit(X, y), repeats)
    predict_t = time_calls(lambda: model.predict(data.X_test), repeats)
    mse = float(np.mean((model.predict(data.X_test) - data.y_test) ** 2))
    return Measured(fit_t, predict_t, len(model.tree_.leaf_ids), mse)


# -- reporting ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    n: int
    depth: int
    n_leaves: int
    fit_s: float
    predict_s: float
    fit_first_s: float
    predict_first_s: float
    fit_median_s: float
    predict_median_s: float
    test_mse: float
    load_avg_1min: float
    ref_n_leaves: int | None = None
    ref_fit_s: float | None = None
    ref_predict_s: float | None = None
    ref_fit_first_s: float | None = None
    ref_predict_first_s: float | None = None
    ref_fit_median_s: float | None = None
    ref_predict_median_s: float | None = None
    ref_test_mse: float | None = None

    @property
    def fit_speedup(self) -> float | None:
        return None if self.ref_fit_s is None else self.ref_fit_s / self.fit_s

    @property
    def predict_speedup(self) -> float | None:
        return None if self.ref_predict_s is None else self.ref_predict_s / self.predict_s


def make_row(n: int, depth: int, ours: Measured, ref: Measured | None) -> Row:
    row = Row(
        n=n,
        depth=depth,
        n_leaves=ours.n_leaves,
        fit_s=ours.fit.best,
        predict_s=ours.predict.best,
        fit_first_s=ours.fit.first,
        predict_first_s=ours.predict.first,
        fit_median_s=ours.fit.median,
        predict_median_s=ours.predict.median,
        test_mse=ours.test_mse,
        load_avg_1min=os.getloadavg()[0],
    )
    if ref is None:
        return row
    return Row(
        **{f.name: getattr(row, f.name) for f in fields(Row) if not f.name.startswith("ref_")},
        ref_n_leaves=ref.n_leaves,
        ref_fit_s=ref.fit.best,
        ref_predict_s=ref.predict.best,
        ref_fit_first_s=ref.fit.first,
        ref_predict_first_s=ref.predict.first,
        ref_fit_median_s=ref.fit.median,
        ref_predict_median_s=ref.predict.median,
        ref_test_mse=ref.test_mse,
    )


def _fmt(value: float | int | None, spec: str = ".3f") -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return format(value, spec)


def table_lines(rows: Sequence[Row], with_reference: bool) -> list[str]:
    """A markdown table (readable as plain text too)."""
    header = ["n", "depth", "n_leaves", "fit s", "predict s", "fit 1st s", "predict 1st s", "MSE"]
    if with_reference:
        header += [
            "ref n_leaves",
            "ref fit s",
            "ref predict s",
            "ref MSE",
            "fit speed-up",
            "predict speed-up",
        ]
    header.append("load")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    for r in rows:
        cells = [
            f"{r.n:,}",
            str(r.depth),
            str(r.n_leaves),
            _fmt(r.fit_s),
            _fmt(r.predict_s),
            _fmt(r.fit_first_s),
            _fmt(r.predict_first_s),
            _fmt(r.test_mse),
        ]
        if with_reference:
            speed_fit = None if r.fit_speedup is None else f"{r.fit_speedup:.1f}x"
            speed_predict = None if r.predict_speedup is None else f"{r.predict_speedup:.1f}x"
            cells += [
                _fmt(r.ref_n_leaves),
                _fmt(r.ref_fit_s),
                _fmt(r.ref_predict_s),
                _fmt(r.ref_test_mse),
                speed_fit or "-",
                speed_predict or "-",
            ]
        cells.append(f"{r.load_avg_1min:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def environment_lines(lpdt: ModuleType | None, repeats: int, ref_repeats: int) -> list[str]:
    ref_version = "not installed" if lpdt is None else importlib.metadata.version("lpdt")
    return [
        f"date: {datetime.now(UTC).isoformat(timespec='seconds')}",
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, {cpu_model()}",
        "load average (1, 5, 15 min) at start: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()),
        f"python {platform.python_version()}, numpy {np.__version__}, jax {jax.__version__} "
        f"({jax.default_backend()}), ldptree {ldptree.__version__}, lpdt {ref_version}",
        f"d={N_FEATURES}, n_q={N_PUBLIC}, n_test={N_TEST:,}, epsilon={EPSILON}, "
        f"rho={BUDGET_SPLIT}, min_samples_split={MIN_SAMPLES_SPLIT}, "
        f"min_samples_leaf={MIN_SAMPLES_LEAF}",
        f"times: best of {repeats} repeats (reference: {ref_repeats}) after one first call; "
        "'1st' = that first call (includes JAX compilation of new shapes)",
    ]


def write_results(rows: Sequence[Row], header: Sequence[str], table: Sequence[str]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    md = RESULTS_DIR / "bench_lpdt.md"
    md.write_text(
        "# LPDT benchmark\n\n"
        + "".join(f"- {line}\n" for line in header)
        + "\n"
        + "\n".join(table)
        + "\n"
    )
    columns = [f.name for f in fields(Row)] + ["fit_speedup", "predict_speedup"]
    with (RESULTS_DIR / "bench_lpdt.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for r in rows:
            writer.writerow([getattr(r, c) for c in columns])
    return md


# -- command line ---------------------------------------------------------------------------------
def _int_list(text: str) -> list[int]:
    try:
        values = [int(float(v)) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        type=_int_list,
        default=list(DEFAULT_SIZES),
        help="private sizes n, comma-separated (1e6 accepted); default 1e4,1e5,1e6",
    )
    parser.add_argument(
        "--depths", type=_int_list, default=list(DEFAULT_DEPTHS), help="default 4,8"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (minimum reported)")
    parser.add_argument(
        "--ref-repeats", type=int, default=None, help="repeats for the reference (default: same)"
    )
    parser.add_argument("--quick", action="store_true", help="only n = 1e4 and 1e5")
    parser.add_argument("--no-reference", action="store_true", help="skip the reference package")
    parser.add_argument("--seed", type=int, default=0, help="data and noise seed")
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes, args.depths, args.repeats, args.no_reference = [2_000], [3], 1, True
    if args.quick:
        args.sizes = list(QUICK_SIZES)
    if args.repeats < 1 or (args.ref_repeats is not None and args.ref_repeats < 1):
        parser.error("--repeats and --ref-repeats must be >= 1")
    if args.ref_repeats is None:
        args.ref_repeats = args.repeats
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes: list[int] = sorted(args.sizes)
    depths: list[int] = sorted(args.depths)
    lpdt = None if args.no_reference else load_reference()
    if lpdt is None and not args.no_reference:
        print("reference package `lpdt` not importable: timing ldptree only", file=sys.stderr)
        print("  opt in with `.venv/bin/pip install lpdt==0.0.2`", file=sys.stderr)

    data = make_dataset(args.seed, max(sizes), 1_000 if args.smoke else N_TEST)
    header = environment_lines(lpdt, args.repeats, args.ref_repeats)
    if lpdt is not None:
        header.append(
            f"reference first call (numba JIT warm-up): {warm_up_reference(lpdt, data):.2f} s"
        )
        header.extend(REFERENCE_NOTES)
    for line in header:
        print(line)
    print(flush=True)

    rows: list[Row] = []
    for n in sizes:
        for depth in depths:
            ours = run_ours(data, n, depth, args.repeats, args.seed)
            ref = None if lpdt is None else run_reference(lpdt, data, n, depth, args.ref_repeats)
            row = make_row(n, depth, ours, ref)
            rows.append(row)
            print(table_lines([row], lpdt is not None)[-1], flush=True)

    table = table_lines(rows, lpdt is not None)
    print()
    print("\n".join(table))
    if not args.smoke:
        print(f"\nwritten: {write_results(rows, header, table)} (+ .csv)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
