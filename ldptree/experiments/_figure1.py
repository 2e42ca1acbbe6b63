"""The LPDT paper's Figure 1 experiment: does public data help on an imbalanced marginal?

Model ``Y = sin(16 X) + N(0, 1)`` with ``X`` normal of mean 0.5 and *variance* 0.025 (sd 0.158)
truncated to ``[0, 1]``. Arm "public": 500 public + 7,000 private holders; arm "no public":
8,000 private holders, the data-free dyadic grid and a label bound given by the user (here the
public label range, which the no-public arm could not know; it is the same bound the other arm
uses, so the comparison is about the partition only). Scored on 2,000 fresh points: test MSE
(whose Bayes risk is 1) and excess risk (mean squared distance to the true curve).

Two settings:

* the paper's (``paper=True``, ``ldptree reproduce lpdt-figure1``): ``eps = 8``, the papers'
  mechanism and the reference's unguarded ratio read-out, depths 2-6 and ``n_l`` in
  ``{10, 20, 40}``. Without public data the ratio explodes in the sparse side cells, which is
  most of the gap the paper shows;
* the demo's (``paper=False``, ``ldptree demo``): both arms with the estimator's defaults
  (variance-aware mechanism, guarded read-out), ``eps = 4``, depths 3-6 and ``n_l`` in
  ``{2, 5, 10}``: leaves small enough that max-edge can split where the data are (with
  ``n_l = 20`` the 18 public points of ``[0, 0.25)`` stop it from splitting ``[0, 0.5]``). With
  the guard on, the no-public arm no longer explodes, so what remains is the partition's
  effect; at ``eps = 8`` the 8,000 holders fill the dyadic cells well enough that it is small
  (about 10 % of the excess risk), at ``eps = 4`` it is about a quarter.

The paper tuned each arm by non-private 5-fold CV. We report every grid point and the best one
per arm, chosen on the mean test MSE over repetitions: an *oracle* choice, labelled as such.
"""

from __future__ import annotations

import itertools
import json
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree.accounting import KeyReuseWarning
from ldptree.datasets import lpdt_figure1, sine_regression_function
from ldptree.estimators import LPDTRegressor

DEPTHS = (2, 3, 4, 5, 6)
LEAF_SIZES = (10, 20, 40)
#: The demo's budget and grid (module docstring).
DEMO_EPSILON = 4.0
DEMO_DEPTHS = (3, 4, 5, 6)
DEMO_LEAF_SIZES = (2, 5, 10)
#: The papers' settings of the paper's run (module docstring).
PAPER_SETTINGS: dict[str, Any] = {"readout": "ratio", "mechanism": "paper"}


@attrs.frozen
class Figure1Result:
    """Scores per configuration and repetition: ``mse[(arm, depth, n_l)] -> float[reps]`` (test
    MSE) and ``excess[...]`` (mean squared distance to the true curve); ``paper``: the paper's
    settings (module docstring)."""

    epsilon: float
    mse: dict[tuple[str, int, int], FloatArray]
    excess: dict[tuple[str, int, int], FloatArray] = attrs.field(factory=dict)
    paper: bool = False

    def best(self, arm: str) -> tuple[tuple[str, int, int], FloatArray]:
        rows = {k: v for k, v in self.mse.items() if k[0] == arm}
        key = min(rows, key=lambda k: float(np.mean(rows[k])))
        return key, rows[key]

    def table(self) -> str:
        """Markdown table of the best configuration per arm (mean, sd, 10%/90% quantiles of the
        test MSE, and the mean excess risk)."""
        lines = [
            f"| arm (eps = {self.epsilon:g}) | depth | n_l | test MSE mean | sd | q10 | q90 | "
            "excess risk mean |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for arm in ("no public", "public"):
            key, v = self.best(arm)
            _, depth, n_l = key
            q10, q90 = np.quantile(v, [0.1, 0.9])
            leaf = "-" if arm == "no public" else str(n_l)
            excess = f"{self.excess[key].mean():.3f}" if key in self.excess else "-"
            lines.append(
                f"| {arm} | {depth} | {leaf} | {v.mean():.3f} | {v.std(ddof=1):.3f} | "
                f"{q10:.3f} | {q90:.3f} | {excess} |"
            )
        return "\n".join(lines)

    def holder_epsilon(self) -> dict[str, float]:
        """Per arm, what one holder of a repetition spent over all the arm's configurations:
        every configuration is a separate release (independent noise) on the same holders, so
        on one population the budgets add up (``configurations x epsilon``)."""
        counts: dict[str, int] = {}
        for arm, _, _ in self.mse:
            counts[arm] = counts.get(arm, 0) + 1
        return {arm: n * self.epsilon for arm, n in sorted(counts.items())}

    def holders_note(self) -> str:
        """The sentence printed under :meth:`table`: the arms are simulated as separate
        populations per configuration, with the sum a single population would spend."""
        sums = ", ".join(f"{eps:g} in arm {arm!r}" for arm, eps in self.holder_epsilon().items())
        return (
            f"Each configuration is fitted on the same private holders of a repetition with "
            f"independent noise, as if it had its own population at eps = {self.epsilon:g}; on "
            f"one population each holder would spend the sum: {sums}."
        )

    def grid_table(self) -> str:
        """Markdown table of every configuration: mean and median test MSE over repetitions.

        The mean is what the paper reports; the median shows how much of it comes from the rare
        repetitions where a cell's debiased private count is small and positive, so the ratio
        ``s^_j / c^_j`` explodes (the reference read-out does not guard against this; raise
        ``min_private_ratio`` to fall back to the public mean in such cells).
        """
        lines = ["| arm | depth | n_l | mean | median | max |", "|---|---|---|---|---|---|"]
        for (arm, depth, n_l), v in sorted(self.mse.items()):
            leaf = "-" if arm == "no public" else str(n_l)
            lines.append(
                f"| {arm} | {depth} | {leaf} | {v.mean():.3f} | {np.median(v):.3f} | "
                f"{v.max():.3f} |"
            )
        return "\n".join(lines)


def _arms(
    rng: np.random.Generator,
) -> tuple[tuple[FloatArray, ...], tuple[FloatArray, ...], tuple[FloatArray, FloatArray]]:
    Xq, yq = lpdt_figure1(500, rng)
    X, y = lpdt_figure1(7000, rng)
    X8, y8 = lpdt_figure1(8000, rng)
    Xt, yt = lpdt_figure1(2000, rng)
    return (X, y, Xq, yq), (X8, y8), (Xt, yt)


def run_figure1(
    *,
    reps: int = 10,
    epsilon: float | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    quick: bool = False,
    paper: bool = False,
) -> tuple[Figure1Result, dict[str, LPDTRegressor], tuple[FloatArray, FloatArray]]:
    """Run the grid over ``reps`` repetitions; also return rep 0's best models and its sample.

    ``paper``: the paper's settings, else the demo's (module docstring); ``epsilon`` defaults to
    the setting's (8 or :data:`DEMO_EPSILON`). ``quick`` (smoke tests) keeps two depths and one
    leaf size. ``progress`` receives a line before the first fit (it compiles the kernels) and
    one per repetition."""
    from ldptree.experiments._progress import compile_note

    depths: tuple[int, ...]
    leaf_sizes: tuple[int, ...]
    if paper:
        depths, leaf_sizes = ((2, 4), (20,)) if quick else (DEPTHS, LEAF_SIZES)
        settings, eps = PAPER_SETTINGS, 8.0 if epsilon is None else epsilon
    else:
        depths, leaf_sizes = ((3, 5), (5,)) if quick else (DEMO_DEPTHS, DEMO_LEAF_SIZES)
        settings, eps = {}, DEMO_EPSILON if epsilon is None else epsilon
    mse: dict[tuple[str, int, int], list[float]] = {}
    excess: dict[tuple[str, int, int], list[float]] = {}
    first: dict[tuple[str, int, int], LPDTRegressor] = {}
    sample: tuple[FloatArray, FloatArray] = (np.empty((0, 1)), np.empty(0))
    start = time.perf_counter()
    if progress is not None:
        progress(compile_note())
    for rep in range(reps):
        (X, y, Xq, yq), (X8, y8), (Xt, yt) = _arms(np.random.default_rng([seed, rep]))
        truth = sine_regression_function(Xt)
        bound = (float(yq.min()), float(yq.max()))
        fits: dict[tuple[str, int, int], Any] = {}
        for depth, n_l in itertools.product(depths, leaf_sizes):
            fits[("public", depth, n_l)] = LPDTRegressor(
                eps, depth, n_l, random_state=rep, **settings
            ).fit(X, y, X_public=Xq, y_public=yq)
        with warnings.catch_warnings():
            # The two arms share random_state on purpose (common random numbers): where the
            # data-free grid equals the public partition, the simulated holders of the two arms
            # draw the same randomness. They are two independent simulated populations, so no
            # holder is in both and nothing about anyone is revealed; the warning is for one
            # population released twice.
            warnings.simplefilter("ignore", KeyReuseWarning)
            for depth in depths:
                fits[("no public", depth, 0)] = LPDTRegressor(
                    eps, depth, label_bound=bound, random_state=rep, **settings
                ).fit(X8, y8)
        for key, model in fits.items():
            pred = model.predict(Xt)
            mse.setdefault(key, []).append(float(np.mean((pred - yt) ** 2)))
            excess.setdefault(key, []).append(float(np.mean((pred - truth) ** 2)))
        if rep == 0:
            first, sample = fits, (X8[:1000], y8[:1000])
        if progress is not None:
            progress(f"repetition {rep + 1}/{reps} done ({time.perf_counter() - start:.1f} s)")
    result = Figure1Result(
        epsilon=eps,
        mse={k: np.asarray(v) for k, v in mse.items()},
        excess={k: np.asarray(v) for k, v in excess.items()},
        paper=paper,
    )
    best = {arm: first[result.best(arm)[0]] for arm in ("no public", "public")}
    return result, best, sample


def figure_data(
    result: Figure1Result, models: dict[str, LPDTRegressor], grid: FloatArray
) -> dict[str, Any]:
    """What the figure shows, as numbers: per arm the chosen configuration, its mean test MSE
    and excess risk over the repetitions, and the plotted curve (repetition 0's model) on
    ``grid``; the true curve; the settings."""
    arms = {}
    for arm in ("no public", "public"):
        key, values = result.best(arm)
        arms[arm] = {
            "depth": key[1],
            "n_l": key[2] if arm == "public" else None,
            "test_mse": float(values.mean()),
            "excess_risk": float(result.excess[key].mean()) if key in result.excess else None,
            "curve": models[arm].predict(grid).tolist(),
        }
    return {
        "epsilon": result.epsilon,
        "reps": int(next(iter(result.mse.values())).shape[0]),
        "settings": "paper" if result.paper else "defaults",
        "x": grid[:, 0].tolist(),
        "truth": sine_regression_function(grid).tolist(),
        "arms": arms,
    }


def plot_figure1(
    models: dict[str, LPDTRegressor],
    sample: tuple[FloatArray, FloatArray],
    path: Path,
    result: Figure1Result | None = None,
) -> Path:
    """Two panels like the paper's Figure 1: fitted curve vs truth, with 1,000 samples. With
    ``result``, the title states the design and the arms' scores, and the numbers behind the
    figure (:func:`figure_data`) are written beside it as ``<name>.json``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(0.0, 1.0, 2001)[:, None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    data = None if result is None else figure_data(result, models, grid)
    for ax, arm, title in zip(
        axes,
        ("no public", "public"),
        ("(a) 8,000 private, no public data", "(b) 7,000 private + 500 public"),
        strict=True,
    ):
        ax.scatter(sample[0][:, 0], sample[1], s=3, color="tab:green", alpha=0.35, label="samples")
        ax.plot(grid[:, 0], sine_regression_function(grid), color="black", lw=1.2, label="truth")
        ax.plot(grid[:, 0], models[arm].predict(grid), color="tab:red", lw=1.6, label="LPDT")
        if data is not None:
            chosen = data["arms"][arm]
            leaf = "" if chosen["n_l"] is None else f", n_l = {chosen['n_l']}"
            title += (
                f"\ndepth {chosen['depth']}{leaf}: excess risk {chosen['excess_risk']:.3f}, "
                f"test MSE {chosen['test_mse']:.3f}"
            )
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("x")
        ax.set_ylim(-4, 4)
    axes[0].set_ylabel("y")
    axes[1].legend(loc="lower right")
    if result is not None and data is not None:
        how = "papers' mechanism and ratio read-out" if result.paper else "estimator defaults"
        fig.suptitle(
            "Y = sin(16 X) + N(0, 1), X ~ normal(mean 0.5, variance 0.025) on [0, 1]\n"
            f"eps = {result.epsilon:g}, {how}; oracle choice over "
            f"{len(result.mse)} configurations, mean of {data['reps']} repetitions",
            fontsize=10,
        )
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.9 if result is not None else 1.0))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    if data is not None:
        path.with_suffix(".json").write_text(json.dumps(data), encoding="utf-8")
    return path
