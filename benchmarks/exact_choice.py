"""Does ``mechanism="auto"`` (exact variances at public-label moments) beat the bound-based auto
and the papers' mechanism?

``mechanism="auto"`` ranks its candidate families by the exact variance of a cell mean at the
public labels' moments (:func:`~ldptree.mechanisms.choose_regression_mechanism` with
``public_labels``); before, it ranked them by worst-case bounds (the same call without public
labels, ``old auto`` here, fitted as that mechanism object). Three arms per (model, epsilon,
depth, seed), paired on the same data and seed: ``paper`` (``mechanism="paper"``), ``old`` and
``new`` (today's ``"auto"``).

Models (``n`` holders, 1,000 public points, 2,000 test points; excess MSE against the true
function): ``sin d=4`` (``lpdt_uniform``: ``sin(16 x_0)`` plus unit Gaussian noise, 4 features),
``heavy d=5`` (``sin(4 x_0) + x_1 - x_2^2 + x_3 x_4 / 2`` plus Student-t(2) noise / 2, 5
features) and ``step d=3`` (features Beta(2, 5), so most holders sit in a corner;
``2 [x_0 > 0.3] + [x_1 > 0.5] x_2`` plus Gaussian noise of sd 0.25: a step function with little
noise, where the label noise of the mechanism, not the data's, dominates). LPDT-M with the
default read-out (shrinkage) and fixed depths (the partition does not depend on the mechanism).
Per row: mean excess MSE of each arm, the choices (new (old)), ratios
``new / old`` and ``new / paper`` with paired two-sided Wilcoxon p-values over seeds
(``--reps``; with 5 repetitions the smallest p is 0.0625, so use more). Where the new choice
equals the old one the arms are identical and the row says ``same``.

    python benchmarks/exact_choice.py --reps 8
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from scipy import stats

from ldptree.datasets._lpdt import lpdt_uniform, sine_regression_function
from ldptree.estimators import LPDTRegressor
from ldptree.mechanisms import choose_regression_mechanism


def _heavy_f(X: np.ndarray) -> np.ndarray:
    return np.sin(4 * X[:, 0]) + X[:, 1] - X[:, 2] ** 2 + 0.5 * X[:, 3] * X[:, 4]


MODELS = ("sin d=4", "heavy d=5", "step d=3")


def _step_f(X: np.ndarray) -> np.ndarray:
    return 2.0 * (X[:, 0] > 0.3) + (X[:, 1] > 0.5) * X[:, 2]


def _draw(model: str, n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng([seed, 7])
    sizes = (n, 1000, 2000)
    if model == "sin d=4":
        parts = [lpdt_uniform(m, 4, rng)[0] for m in sizes]
        f = sine_regression_function
        noise = [rng.normal(size=m) for m in sizes]
    elif model == "step d=3":
        parts = [rng.beta(2.0, 5.0, size=(m, 3)) for m in sizes]
        f = _step_f
        noise = [0.25 * rng.normal(size=m) for m in sizes]
    elif model == "heavy d=5":
        parts = [rng.uniform(size=(m, 5)) for m in sizes]
        f = _heavy_f
        noise = [0.5 * rng.standard_t(2, size=m) for m in sizes]
    else:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    (X, Xq, Xt), (e, eq, _) = parts, noise
    return X, f(X) + e, Xq, f(Xq) + eq, Xt, f(Xt)


def _fit(mech: Any, eps: float, depth: int, seed: int, data: tuple[np.ndarray, ...]) -> Any:
    X, y, Xq, yq, _, _ = data
    reg = LPDTRegressor(eps, depth, 10, mechanism=mech, random_state=seed)
    return reg.fit(X, y, X_public=Xq, y_public=yq)


def _excess(reg: Any, data: tuple[np.ndarray, ...]) -> float:
    return float(np.mean((reg.predict(data[4]) - data[5]) ** 2))


def _old_auto(reg: Any, eps: float) -> Any:
    """The bound-based choice for the fitted partition (no public labels)."""
    return choose_regression_mechanism(reg.partition_.n_leaves, eps, reg.label_bound_)


def _p(a: np.ndarray, b: np.ndarray) -> str:
    if np.allclose(a, b):
        return "same"
    return f"{stats.wilcoxon(a, b).pvalue:.3g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.25, 0.5, 1, 2, 4, 8])
    ap.add_argument("--depths", type=int, nargs="+", default=[4, 8, 12])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        args.reps, args.n, args.epsilons, args.depths = 2, 3000, [2.0], [3]
        args.models = ["sin d=4"]
    start = time.perf_counter()
    print(
        "| model | eps | depth | paper | old auto | new auto | new choice (old) | "
        "new/old | p | new/paper | p |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models:
        for eps in args.epsilons:
            for depth in args.depths:
                errs: dict[str, list[float]] = {"paper": [], "old": [], "new": []}
                names = set()
                for seed in range(args.reps):
                    data = _draw(model, args.n, seed)
                    new = _fit("auto", eps, depth, seed, data)
                    old = _old_auto(new, eps)
                    errs["paper"].append(_excess(_fit("paper", eps, depth, seed, data), data))
                    errs["new"].append(_excess(new, data))
                    names.add(f"{new.mechanism_choice_.name} ({old.name})")
                    if old.name == new.mechanism_choice_.name:
                        errs["old"].append(errs["new"][-1])
                    else:
                        refit = _fit(old.mechanism, eps, depth, seed, data)
                        errs["old"].append(_excess(refit, data))
                p, o, x = (np.asarray(errs[k]) for k in ("paper", "old", "new"))
                print(
                    f"| {model} | {eps:g} | {depth} | {p.mean():.4f} | {o.mean():.4f} | "
                    f"{x.mean():.4f} | {', '.join(sorted(names))} | {x.mean() / o.mean():.3f} | "
                    f"{_p(x, o)} | {x.mean() / p.mean():.3f} | {_p(x, p)} |",
                    flush=True,
                )
    print(f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
