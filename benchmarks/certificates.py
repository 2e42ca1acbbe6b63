"""Certificates of every library mechanism: ``verify_ldp`` on the mechanism as sampled.

For each mechanism of the test suite's built-in registry (``ldptree.testing.BUILT_INS``: the
suite's constructor, labels in ``[-1, 1]``, three classes for class mechanisms) and each epsilon,
prints the certified bound, its ratio to the claim, the delta of the mechanism as sampled, whether
it is certified pure, and the time of one verification (law construction included) as a markdown
table. ``n_cells`` is 256 (1 for the feature release, which has no cells); real labels are
certified on ``[-2, 2]``, beyond the declared bound, since the mechanism must clip.

    .venv/bin/python benchmarks/certificates.py --epsilons 0.1 1 8

``--smoke`` (epsilon 1, 8 cells) runs in seconds; the test suite runs it.
"""

from __future__ import annotations

import argparse
import time

from ldptree.accounting import verify_ldp
from ldptree.testing import BUILT_INS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", nargs="*", type=float, default=[0.1, 1.0, 8.0])
    parser.add_argument("--n-cells", type=int, default=256)
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    if args.smoke:
        args.epsilons, args.n_cells = [1.0], 8
    columns = ["mechanism", "epsilon", "certified bound", "bound / claim", "delta as sampled"]
    print("| " + " | ".join([*columns, "pure", "time (s)"]) + " |")
    print("|---|---|---|---|---|---|---|")
    for name, built_in in BUILT_INS.items():
        for eps in args.epsilons:
            mechanism = built_in.make(eps)
            n_cells = 1 if "n_features" in built_in.options else args.n_cells
            kwargs: dict[str, object] = {"n_cells": n_cells}
            if built_in.task == "regression":
                kwargs["label_bound"] = (-2.0, 2.0)
            start = time.perf_counter()
            cert = verify_ldp(mechanism, **kwargs)  # type: ignore[arg-type]
            seconds = time.perf_counter() - start
            print(
                f"| {name} | {eps:g} | {cert.epsilon_bound:.10g} | {cert.epsilon_bound / eps:.6f} "
                f"| {cert.delta:g} | {cert.pure} | {seconds:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
