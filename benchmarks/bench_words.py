"""Random words per holder of every kit built-in, and the fused kernel's time with the default
and the one-word (packed) Hadamard sampler.

For each kit built-in in ``ldptree.testing.BUILT_INS`` (at ``--epsilon``, ``--cells`` cells) the
script prints ``words_per_holder``; then it times ``privatize_summarize`` on ``--n`` holders for
a Hadamard-response mechanism with the default two-word sampler and with ``packed=True`` (one
word: the row in the low bits, the flip's 16-bit uniform in the high bits; the same law), best
of ``--repeats`` warm calls, wall and CPU time.

    .venv/bin/python benchmarks/bench_words.py --n 1000000 --cells 256 --repeats 5
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import attrs
import jax
import numpy as np

from ldptree.mechanisms import HadamardRelease, KitMechanism, RealLabels, Release
from ldptree.mechanisms._geometric_label import GeometricLabel
from ldptree.testing import BUILT_INS


@attrs.frozen
class PackedHadamard(GeometricLabel, KitMechanism):
    """Hadamard response (budget ``eps / 2``) + the geometric label; ``packed`` sampler."""

    epsilon: float
    label_bound: tuple[float, float] = (-1.0, 1.0)
    budget_split: float = 0.5
    packed: bool = True

    def labels(self) -> RealLabels:
        return GeometricLabel.labels(self)

    def releases(self) -> tuple[Release, ...]:
        cell = HadamardRelease("cell", self.cell_epsilon, packed=self.packed)
        return (cell, self.label_release())

    def debias(self, stats: dict[str, Any], n: int) -> Any:
        raise NotImplementedError  # timing only


def _time(
    mechanism: Any, cells: Any, labels: Any, n_cells: int, repeats: int
) -> tuple[float, float]:
    key = jax.random.key(0)
    mechanism.privatize_summarize(key, cells, labels, n_cells)  # compile
    best = (float("inf"), float("inf"))
    for r in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        mechanism.privatize_summarize(jax.random.key(r), cells, labels, n_cells)
        best = min(best, (time.perf_counter() - w, time.process_time() - c))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--cells", type=int, default=256)
    parser.add_argument("--epsilon", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="toy sizes, seconds (a test runs it)")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.cells, args.repeats = 2_000, 16, 1
    print(f"words per holder at epsilon={args.epsilon}, {args.cells} cells:")
    for name, built in sorted(BUILT_INS.items()):
        mechanism = built.make(args.epsilon)
        if isinstance(mechanism, KitMechanism):
            print(f"  {name}: {mechanism.words_per_holder(args.cells)}")
    rng = np.random.default_rng(0)
    cells = rng.integers(0, args.cells, args.n).astype(np.int32)
    labels = rng.uniform(-1.0, 1.0, args.n).astype(np.float32)
    print(f"fused kernel, n={args.n}, best of {args.repeats}, load {os.getloadavg()[0]:.2f}:")
    for packed in (False, True):
        mechanism = PackedHadamard(args.epsilon, packed=packed)
        words = mechanism.words_per_holder(args.cells)
        wall, cpu = _time(mechanism, cells, labels, args.cells, args.repeats)
        print(f"  hadamard packed={packed}: {words} words, wall {wall:.3f} s, cpu {cpu:.3f} s")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
