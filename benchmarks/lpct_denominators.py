"""LPCT's read-out with non-positive denominators: ``fallback="none"`` (paper) vs ``"prior"``.

For rice and spambase (public : train : test = 1 : 7 : 2, the runner's split seeds), LPCT with
depth 2-8, ``n_l = 1``, lambda in {0, 1, 100} at eps 2 and 8 (aggregate simulation), 10
repetitions: mean and 0.1 quantile of test accuracy for both fallbacks, and the share of cells
whose denominator ``U^ + lambda U^Q`` is ``<= 0``. One process.

    LDPTREE_DATA=/path/to/data python benchmarks/lpct_denominators.py

``--smoke`` (rice only, epsilon 2, depth 2, lambda in {0, 1}, two repetitions) runs in seconds;
the test suite runs it so that the script keeps working.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

from ldptree.datasets import load_dataset
from ldptree.estimators import LPCTClassifier
from ldptree.experiments._seeds import derive_rng
from ldptree.experiments._splits import RandomSplit, impute_from_public


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--smoke", action="store_true", help="toy sizes, seconds (the test suite runs it)"
    )
    args = parser.parse_args()
    names = ("rice_cammeo_osmancik",) if args.smoke else ("rice_cammeo_osmancik", "spambase")
    reps = 2 if args.smoke else 10
    grid = (
        ((2.0,), (2,), (0.0, 1.0)) if args.smoke else ((2.0, 8.0), (2, 4, 6, 8), (0.0, 1.0, 100.0))
    )
    print(
        "| dataset | eps | depth | lambda | acc none | acc prior | q0.1 none | q0.1 prior "
        "| share <= 0 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        source = RandomSplit(load_dataset(name))
        splits = [
            impute_from_public(source.draw(derive_rng(0, "split", name, rep)))
            for rep in range(reps)
        ]
        for eps, depth, lam in itertools.product(*grid):
            acc: dict[str, list[float]] = {"none": [], "prior": []}
            share = []
            for rep, s in enumerate(splits):
                for fallback in acc:
                    model = LPCTClassifier(
                        eps,
                        depth,
                        1,
                        min_samples_split=1,
                        lam=lam,
                        fallback=fallback,
                        simulation="aggregate",
                        random_state=rep,
                    ).fit(s.X_train, s.y_train, X_public=s.X_public, y_public=s.y_public)
                    acc[fallback].append(float(np.mean(model.predict(s.X_test) == s.y_test)))
                    if fallback == "prior":
                        share.append(float(np.mean(model.used_fallback_)))
            a, b = np.array(acc["none"]), np.array(acc["prior"])
            print(
                f"| {name} | {eps:g} | {depth} | {lam:g} | {a.mean():.4f} | {b.mean():.4f} | "
                f"{np.quantile(a, 0.1):.4f} | {np.quantile(b, 0.1):.4f} | {np.mean(share):.3f} |"
            )


if __name__ == "__main__":
    main()
