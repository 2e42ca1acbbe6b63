"""``ldptree reproduce lpdt-figure2``: the LPDT paper's Figure 2.

Source: the reference simulation's generator ``X ~ Uniform[0, 1]`` (d = 1), ``Y = sin(16 X) +
N(0, 1)`` (so the Bayes MSE is 1), 2000 public, 6000 private training and 2000 test points per
repetition, 20 repetitions. Three runs of the protocol runner, each tuned by the papers' oracle:

* (a) test MSE vs depth ``s in {2..6}`` (``n_l = 10``) for ``eps in {3, 4, 6, 8}``;
* (b) test MSE vs ``n_l in {15, 25, ..., 135}`` (depth 4) for ``eps in {3, 4, 6, 8}``;
* (c) test MSE vs ``eps in {2, ..., 10}``, best of the depth grid per ``eps``, next to the means
  of the authors' shipped run (``results/epsilon_mse.csv``; CV-tuned, same generator).

Curves are means over repetitions with (0.1, 0.9) quantile bands. ``quick``: 2 repetitions,
100/500/200 points, two points per grid, eps 8 for the curves and {2, 8} for (c).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ldptree._typing import FloatArray
from ldptree.datasets import lpdt_uniform
from ldptree.experiments._grids import Grid
from ldptree.experiments._plots import _band, _figure, _save
from ldptree.experiments._records import read_records
from ldptree.experiments._runner import Experiment, run_experiment
from ldptree.experiments._splits import SyntheticSource
from ldptree.experiments._summary import param_curve, summarize
from ldptree.experiments._tuning import OracleTuning

#: mean test MSE by epsilon of the authors' shipped run
REFERENCE_MSE = {
    2: 1.748,
    3: 1.544,
    4: 1.651,
    5: 1.392,
    6: 1.254,
    7: 1.215,
    8: 1.157,
    9: 1.110,
    10: 1.089,
}


def uniform_1d(n: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    """The reference simulation's generator with d = 1 (module level: picklable for ``jobs``)."""
    return lpdt_uniform(n, 1, rng)


def _experiments(
    epsilons: Sequence[float], reps: int, quick: bool, seed: int
) -> dict[str, Experiment]:
    sizes = (100, 500, 200) if quick else (2000, 6000, 2000)
    source = SyntheticSource("lpdt-uniform-1d", uniform_1d, *sizes)
    if quick:
        grids: dict[str, str | Grid] = {
            "depth": Grid({"max_depth": (2, 4), "min_samples_leaf": (10,)}),
            "leaf": Grid({"max_depth": (4,), "min_samples_leaf": (15, 55)}),
        }
        sweep: tuple[float, ...] = (2.0, 8.0)
    else:
        grids = {"depth": "lpdt-depth", "leaf": "lpdt-leaf"}
        sweep = tuple(float(e) for e in range(2, 11))
    runs = {
        name: Experiment(
            f"lpdt-figure2-{name}",
            [source],
            ["lpdt-m"],
            tuple(epsilons),
            reps,
            OracleTuning({"lpdt-m": grid}),
            seed=seed,
        )
        for name, grid in grids.items()
    }
    runs["epsilon"] = Experiment(
        "lpdt-figure2-epsilon",
        [source],
        ["lpdt-m"],
        sweep,
        reps,
        OracleTuning({"lpdt-m": grids["depth"]}),
        seed=seed,
    )
    return runs


def run_lpdt_figure2(
    out: str | Path,
    *,
    epsilons: Sequence[float] | None = None,
    reps: int | None = None,
    quick: bool = False,
    seed: int = 0,
    jobs: int = 1,
) -> list[Path]:
    """Run (or resume) the three runs under ``out/{depth,leaf,epsilon}``; write the figure and
    a markdown table of every curve point. Returns the written paths."""
    folder = Path(out)
    eps = tuple(epsilons) if epsilons else ((8.0,) if quick else (3.0, 4.0, 6.0, 8.0))
    runs = _experiments(eps, reps or (2 if quick else 20), quick, seed)
    records = {
        name: read_records(run_experiment(exp, folder / name, jobs=jobs))
        for name, exp in runs.items()
    }
    fig, axes = _figure(3)
    lines = [f"# LPDT Figure 2 ({'quick' if quick else 'full'}; oracle tuning, not private)", ""]
    for ax, (name, param, title) in zip(
        axes,
        [
            ("depth", "max_depth", "(a) MSE vs depth (n_l = 10)"),
            ("leaf", "min_samples_leaf", "(b) MSE vs n_l (depth 4)"),
        ],
        strict=False,
    ):
        lines += [f"## {title}", "", f"| eps | {param}: mean test MSE |", "|---|---|"]
        for e in eps:
            curve = param_curve(
                records[name], param, dataset="lpdt-uniform-1d", epsilon=e, method="lpdt-m"
            )
            _band(ax, [v for v, _ in curve], [s for _, s in curve], f"eps = {e:g}")
            lines.append(f"| {e:g} | " + ", ".join(f"{v}: {s.mean():.3f}" for v, s in curve) + " |")
        lines.append("")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(param)
        ax.set_ylabel("test MSE (log scale)")
        # small budgets and deep trees give near-zero noisy counts and exploding ratios: means
        # reach 1e6 next to curves near 1, which only a log axis shows together
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    entries = sorted(summarize(records["epsilon"]), key=lambda e: e.epsilon)
    ax = axes[2]
    _band(ax, [e.epsilon for e in entries], [e.values for e in entries], "LPDT-M (oracle depth)")
    ref = sorted(REFERENCE_MSE.items())
    ax.plot([k for k, _ in ref], [v for _, v in ref], "k--", lw=1, label="authors' run (CV)")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":", label="Bayes MSE")
    ax.set_title("(c) MSE vs epsilon", fontsize=9)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("test MSE")
    ax.legend(fontsize=7)
    lines += [
        "## (c) MSE vs epsilon",
        "",
        "| eps | ours: mean (sd) | authors' run |",
        "|---|---|---|",
    ]
    for entry in entries:
        ref_mse = REFERENCE_MSE.get(int(entry.epsilon)) if entry.epsilon.is_integer() else None
        lines.append(
            f"| {entry.epsilon:g} | {entry.mean:.3f} ({entry.sd:.3f}) | "
            + ("" if ref_mse is None else f"{ref_mse:.3f}")
            + " |"
        )
    png = _save(fig, folder / "figure2.png")
    md = folder / "figure2.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [md, png]
