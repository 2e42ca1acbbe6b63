"""The first ``LPDTRegressor.fit`` of a fresh process against the later (warm) ones.

Makes the synthetic data (``n`` rows, ``d = 4``, labels ``sin(16 x_0)`` plus noise, 2,000 public
rows; not timed), imports ldptree (timed apart), then times ``--fits`` fits of
``LPDTRegressor(epsilon=4, max_depth=8, mechanism="paper", readout="ratio", random_state=0)`` in
this one process: fit 0 is the first fit (with the persistent compilation cache filled by an
earlier run, it pays tracing, lowering and cache look-ups only), the others are warm. Run it a few
times in fresh processes and report min / median with the load average. ``--log-compiles``
prints every program a fit compiles (JAX's ``jax_log_compiles``, with millisecond timestamps and
the thread).

Usage: ``.venv/bin/python benchmarks/first_fit.py [--n 1000000] [--fits 3] [--log-compiles]``
(``--smoke``: 2,000 rows, depth 3, two fits, in seconds; the test suite runs it).
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e6, help="private rows")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--fits", type=int, default=3)
    parser.add_argument("--log-compiles", action="store_true")
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.n, args.depth, args.fits = 2_000, 3, 2
    rng = np.random.default_rng(0)
    n = int(args.n)
    X = rng.uniform(size=(n, 4)).astype(np.float32)
    y = (np.sin(16 * X[:, 0]) + rng.normal(size=n)).astype(np.float32)
    Xq = rng.uniform(size=(2000, 4))
    yq = np.sin(16 * Xq[:, 0]) + rng.normal(size=2000)

    start = time.perf_counter()
    import jax

    from ldptree import LPDTRegressor

    print(f"import {time.perf_counter() - start:.3f} s")
    if args.log_compiles:
        jax.config.update("jax_log_compiles", True)
        logging.basicConfig(format="%(relativeCreated)d ms %(threadName)s %(message)s")
        logging.getLogger("jax._src.dispatch").setLevel(logging.DEBUG)
    for i in range(args.fits):
        model = LPDTRegressor(
            epsilon=4.0, max_depth=args.depth, mechanism="paper", readout="ratio", random_state=0
        )
        start = time.perf_counter()
        model.fit(X, y, X_public=Xq, y_public=yq)
        print(f"fit {i} {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
