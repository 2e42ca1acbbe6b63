"""The LPDT paper's Figure 1 experiment: does public data help on an imbalanced marginal?

Model ``Y = sin(16 X) + N(0, 1)`` with ``X ~ N(0.5, 0.025)`` truncated to ``[0, 1]``, ``eps = 8``.
Arm "public": 500 public + 7,000 private holders; arm "no public": 8,000 private holders, the
data-free dyadic grid and a label bound given by the user (here the public label range, which
the no-public arm could not know; it is the same bound the other arm uses, so the comparison is
about the partition only). Test MSE on 2,000 fresh points, whose Bayes risk is 1.

The paper tuned each arm by non-private 5-fold CV. We report every grid point and the best one
per arm, chosen on the mean test MSE over repetitions: an *oracle* choice, labelled as such.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree.datasets import lpdt_figure1, sine_regression_function
from ldptree.estimators import LPDTRegressor

DEPTHS = (2, 3, 4, 5, 6)
LEAF_SIZES = (10, 20, 40)


@attrs.frozen
class Figure1Result:
    """Test MSE per configuration and repetition: ``mse[(arm, depth, n_l)] -> float[reps]``."""

    epsilon: float
    mse: dict[tuple[str, int, int], FloatArray]

    def best(self, arm: str) -> tuple[tuple[str, int, int], FloatArray]:
        rows = {k: v for k, v in self.mse.items() if k[0] == arm}
        key = min(rows, key=lambda k: float(np.mean(rows[k])))
        return key, rows[key]

    def table(self) -> str:
        """Markdown table of the best configuration per arm (mean, sd, 10%/90% quantiles)."""
        lines = [
            f"| arm (eps = {self.epsilon:g}) | depth | n_l | test MSE mean | sd | q10 | q90 |",
            "|---|---|---|---|---|---|---|",
        ]
        for arm in ("no public", "public"):
            (_, depth, n_l), v = self.best(arm)
            q10, q90 = np.quantile(v, [0.1, 0.9])
            leaf = "-" if arm == "no public" else str(n_l)
            lines.append(
                f"| {arm} | {depth} | {leaf} | {v.mean():.3f} | {v.std(ddof=1):.3f} | "
                f"{q10:.3f} | {q90:.3f} |"
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
    epsilon: float = 8.0,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    quick: bool = False,
) -> tuple[Figure1Result, dict[str, LPDTRegressor], tuple[FloatArray, FloatArray]]:
    """Run the grid over ``reps`` repetitions; also return rep 0's best models and its sample.

    ``quick`` (smoke tests) keeps depths 2 and 4 and ``n_l = 20``."""
    depths, leaf_sizes = ((2, 4), (20,)) if quick else (DEPTHS, LEAF_SIZES)
    mse: dict[tuple[str, int, int], list[float]] = {}
    first: dict[tuple[str, int, int], LPDTRegressor] = {}
    sample: tuple[FloatArray, FloatArray] = (np.empty((0, 1)), np.empty(0))
    start = time.perf_counter()
    for rep in range(reps):
        (X, y, Xq, yq), (X8, y8), (Xt, yt) = _arms(np.random.default_rng([seed, rep]))
        bound = (float(yq.min()), float(yq.max()))
        fits: dict[tuple[str, int, int], Any] = {}
        for depth, n_l in itertools.product(depths, leaf_sizes):
            fits[("public", depth, n_l)] = LPDTRegressor(
                epsilon, depth, n_l, readout="ratio", mechanism="paper", random_state=rep
            ).fit(X, y, X_public=Xq, y_public=yq)
        for depth in depths:
            fits[("no public", depth, 0)] = LPDTRegressor(
                epsilon,
                depth,
                label_bound=bound,
                readout="ratio",
                mechanism="paper",
                random_state=rep,
            ).fit(X8, y8)
        for key, model in fits.items():
            mse.setdefault(key, []).append(float(np.mean((model.predict(Xt) - yt) ** 2)))
        if rep == 0:
            first, sample = fits, (X8[:1000], y8[:1000])
        if progress is not None:
            progress(f"repetition {rep + 1}/{reps} done ({time.perf_counter() - start:.1f} s)")
    result = Figure1Result(epsilon=epsilon, mse={k: np.asarray(v) for k, v in mse.items()})
    best = {arm: first[result.best(arm)[0]] for arm in ("no public", "public")}
    return result, best, sample


def plot_figure1(
    models: dict[str, LPDTRegressor], sample: tuple[FloatArray, FloatArray], path: Path
) -> Path:
    """Two panels like the paper's Figure 1: fitted curve vs truth, with 1,000 samples."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(0.0, 1.0, 2001)[:, None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, arm, title in zip(
        axes,
        ("no public", "public"),
        ("(a) 8,000 private, no public data", "(b) 7,000 private + 500 public"),
        strict=True,
    ):
        ax.scatter(sample[0][:, 0], sample[1], s=3, color="tab:green", alpha=0.35, label="samples")
        ax.plot(grid[:, 0], sine_regression_function(grid), color="black", lw=1.2, label="truth")
        ax.plot(grid[:, 0], models[arm].predict(grid), color="tab:red", lw=1.6, label="LPDT")
        ax.set_title(title)
        ax.set_xlabel("x")
        ax.set_ylim(-4, 4)
    axes[0].set_ylabel("y")
    axes[1].legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
