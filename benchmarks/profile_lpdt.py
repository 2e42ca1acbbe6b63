"""Where does :meth:`ldptree.LPDTRegressor.fit` spend its time? A stage-by-stage breakdown.

Replays the steps of ``fit`` (``estimators/_lpdt.py`` and the round engine in
``rounds/``) on the benchmark's synthetic data and times each one separately,
synchronising after every stage so that JAX's asynchronous dispatch does not move time between
stages:

* ``grow``: public min-max box + max-edge partition growth (NumPy, public data only);
* ``scale``: mapping the private rows into the public box;
* ``route``: ``partition.cells`` per chunk (jitted level-wise gather);
* ``privatize``: the mechanism's per-holder randomized response + Laplace (jitted);
* ``summarize``: ``SumAggregator.update`` (jitted exact integer sums + copy to host);
* probes (not in the sum): the holders' threefry words alone, and the fused
  ``privatize_summarize`` kernel that ``fit`` actually runs in place of the two stages above;
* ``read-out``: debiasing, public leaf means, fallback.

The sum of the stages is compared with a plain ``fit`` call. The partition, scaler, label bound and
mechanism are the fitted model's own (``mechanism="paper"``: randomized response + Laplace); the
stages call private ldptree modules on purpose (it profiles them); it is a diagnostic, not part of
the API. ``--smoke`` runs it at toy sizes in seconds (the test suite does, so that it keeps
working).

Usage: ``.venv/bin/python benchmarks/profile_lpdt.py [--n 1000000] [--depth 8] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ldptree import LPDTRegressor
from ldptree.estimators._readout import cell_means, ratio_with_fallback
from ldptree.mechanisms._random import holder_words, key_words
from ldptree.mechanisms._rr_laplace import RRLaplaceMechanism
from ldptree.partitions import MaxEdgePartitioner
from ldptree.rounds import SumAggregator

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
N_FEATURES = 10
N_PUBLIC = 2000
EPSILON = 4.0


@partial(jax.jit, static_argnames=("n_holders", "n_words"))
def _words_probe(key_data: jax.Array, first: jax.Array, n_holders: int, n_words: int) -> jax.Array:
    """The holders' threefry words alone (what the mechanism draws per chunk)."""
    return holder_words(key_data, first, n_holders, n_words)


def _sync(x: Any) -> Any:
    for leaf in jax.tree_util.tree_leaves(x):
        if isinstance(leaf, jax.Array):
            leaf.block_until_ready()
    return x


class Stopwatch:
    """Accumulates synchronised wall time per stage name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def run(self, stage: str, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        out = _sync(call())
        self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - start
        return out


def _model(depth: int, seed: int) -> LPDTRegressor:
    return LPDTRegressor(
        epsilon=EPSILON, max_depth=depth, mechanism="paper", readout="ratio", random_state=seed
    )


def profile_once(
    model: LPDTRegressor, X: FloatArray, y: FloatArray, Xq: FloatArray, yq: FloatArray, seed: int
) -> dict[str, float]:
    """One replay of the fitted ``model``'s ``fit`` with every stage timed (the jit caches are
    assumed warm)."""
    chunk = model.chunk_size
    watch = Stopwatch()
    scaler = model.scaler_
    partitioner = MaxEdgePartitioner(
        max_depth=model.max_depth_,
        min_samples_split=model.min_samples_split,
        min_samples_leaf=model.min_samples_leaf,
    )

    def grow() -> Any:
        return partitioner.fit(scaler.transform(Xq), yq)

    partition = watch.run("grow", grow)
    assert partition.n_leaves == model.partition_.n_leaves  # the fit's own partition
    mechanism = model.mechanism_
    assert isinstance(mechanism, RRLaplaceMechanism)
    key = jax.random.key(seed)
    X_scaled = watch.run("scale", lambda: scaler.transform(X))
    n_cells = partition.n_leaves
    aggregator = SumAggregator(mechanism=mechanism, n_cells=n_cells)
    state = aggregator.init()
    n_words = -(-n_cells // (32 // mechanism.bits)) + 2
    for start in range(0, X.shape[0], chunk):
        stop = min(start + chunk, X.shape[0])
        rows = X_scaled[start:stop]
        cells = watch.run("route", partial(partition.cells, rows))
        labels = jnp.asarray(y[start:stop], dtype=np.float32)
        privatize = partial(mechanism.privatize, key, cells, labels, n_cells, first_holder=start)
        reports = watch.run("privatize", privatize)
        words = partial(_words_probe, key_words(key), jnp.uint32(start), stop - start, n_words)
        watch.run("  probe: holder words", words)
        fused = partial(
            mechanism.privatize_summarize, key, cells, labels, n_cells, first_holder=start
        )
        watch.run("  probe: fused (fit runs this)", fused)
        state = watch.run("summarize", partial(aggregator.update, state, reports))

    def read_out() -> Any:
        estimates = aggregator.finalize(state)
        public_mean = cell_means(
            np.asarray(partition.cells(scaler.transform(Xq))), yq, n_cells, float(yq.mean())
        )
        return ratio_with_fallback(estimates, public_mean, min_ratio=0.0)

    watch.run("read-out", read_out)
    return watch.seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Stage-by-stage profile of LPDTRegressor.fit")
    parser.add_argument("--n", type=lambda v: int(float(v)), default=1_000_000)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3, help="replays; the minimum is kept")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="toy sizes, seconds (a test runs it)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.n, args.depth, args.repeats = 2_000, 3, 1

    rng = np.random.default_rng(args.seed)
    Xq = rng.uniform(size=(N_PUBLIC, N_FEATURES))
    yq = np.sin(16.0 * Xq[:, 0]) + rng.normal(size=N_PUBLIC)
    X = rng.uniform(size=(args.n, N_FEATURES))
    y = np.sin(16.0 * X[:, 0]) + rng.normal(size=args.n)

    model = _model(args.depth, args.seed)
    start = time.perf_counter()
    model.fit(X, y, X_public=Xq, y_public=yq)
    first = time.perf_counter() - start
    fit_times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        model.fit(X, y, X_public=Xq, y_public=yq)
        fit_times.append(time.perf_counter() - start)
    profile_once(model, X, y, Xq, yq, args.seed)  # warm the extra jit of the words probe
    runs = [profile_once(model, X, y, Xq, yq, args.seed) for _ in range(args.repeats)]
    stages = {name: min(r[name] for r in runs) for name in runs[0]}

    fit_s = min(fit_times)
    print(
        f"n={args.n:,} depth={args.depth} n_leaves={model.partition_.n_leaves} "
        f"chunk={model.chunk_size} load avg={os.getloadavg()[0]:.2f}"
    )
    print(f"fit: first call {first:.3f} s (compilation included)")
    print(f"fit: best of {args.repeats}: {fit_s:.3f} s")
    total = sum(v for k, v in stages.items() if not k.startswith(" "))
    print(f"{'stage':<28}{'s':>9}{'% of stages':>14}")
    for name, sec in stages.items():
        print(f"{name:<28}{sec:>9.3f}{100 * sec / total:>13.1f}%")
    print(f"{'sum of stages':<28}{total:>9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
