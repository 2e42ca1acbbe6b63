"""``ldptree reproduce lpct-figure4``: LPCT vs LPCT-P vs LPCT-Q on the gamma = 0.5 pair (LPCT
Figure 4a) and accuracy against the public sample size ``n_Q`` (LPCT Figure 6).

Protocol: per repetition ``r`` draw ``n_P`` private points from P, ``n_Q``
public points from Q (relative signal exponent ``gamma``) and 2000 test points from P
(``make_lpct_pair(..., rng=seed + r)``); for every budget and grid point (depth, ``n_l``) grow the
max-edge partition (Gini) on the public data, collect one release and read out every lambda of the
grid from it (post-processing): LPCT-P is lambda = 0, LPCT-Q lambda = inf, LPCT the best
intermediate lambda. LPCT-prune (corrected and reference rules) uses its default depths, best of
``n_l in {1, 5}``.

Selection is the paper's oracle: the grid point with the best mean test accuracy over the
repetitions (not private). Because the oracle favours the method with the larger grid
(LPCT picks among 17 lambdas), the selected configurations are re-run on ``holdout_reps`` fresh
repetitions (seeds ``seed + 1000 + i``), which removes the selection bias. The ``n_Q`` curve
(Figure 6) repeats the oracle at one budget for several ``n_Q``.

``benchmarks/lpct_figure4.py`` is a thin command-line wrapper of this module.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import jax
import numpy as np

from ldptree._typing import FloatArray
from ldptree.datasets import make_lpct_pair
from ldptree.estimators import LPCTClassifier, LPCTPrunedClassifier
from ldptree.experiments._plots import _band, _figure, _save
from ldptree.experiments._progress import compile_note

LAMBDAS = (0.01, 0.1, 0.5, 1, 2, 5, 10, 50, 100, 500, 750, 1000, 1250, 1500, 2000, 4000, 8000)
PRUNE_RULES = ("corrected", "reference")
Choice = tuple[float, int, int, int]  # (mean accuracy, depth, n_l, lambda column)


def _floats(value: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in value)


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in value)


@attrs.frozen
class Figure4Config:
    """Settings; defaults are the paper's Figure 4a (``quick()`` for smoke tests)."""

    reps: int = 20
    epsilons: tuple[float, ...] = attrs.field(default=(1.0, 2.0, 4.0, 8.0), converter=_floats)
    n_private: int = 10_000
    n_public: int = 50
    gamma: float = 0.5
    holdout_reps: int = 60
    simulation: str = "per_holder"
    depths: tuple[int, ...] = attrs.field(default=tuple(range(1, 9)), converter=_ints)
    single_depths: tuple[int, ...] = attrs.field(default=tuple(range(1, 7)), converter=_ints)
    leaf_sizes: tuple[int, ...] = attrs.field(default=(1, 5, 10, 50, 100), converter=_ints)
    lambdas: tuple[float, ...] = attrs.field(default=LAMBDAS, converter=_floats)
    seed: int = 0

    @classmethod
    def quick(cls, **overrides: Any) -> Figure4Config:
        base: dict[str, Any] = {
            "reps": 2,
            "epsilons": (2.0, 8.0),
            "n_private": 2000,
            "holdout_reps": 2,
            "simulation": "aggregate",
            "depths": (2, 4),
            "single_depths": (2, 4),
            "leaf_sizes": (1,),
            "lambdas": (1, 100),
        }
        return cls(**{**base, **overrides})

    @property
    def path(self) -> list[float]:
        return [0.0, *self.lambdas, float("inf")]


@attrs.frozen(eq=False)
class Figure4Result:
    """``acc[eps][(depth, n_l)] -> float[reps, len(path)]``; ``prune[rule][eps] -> [reps, 2]``."""

    config: Figure4Config
    acc: dict[float, dict[tuple[int, int], FloatArray]]
    prune: dict[str, dict[float, FloatArray]]


def _lpct(config: Figure4Config, eps: float, depth: int, leaf: int, lam: float, key: Any) -> Any:
    return LPCTClassifier(
        epsilon=eps,
        max_depth=depth,
        min_samples_leaf=leaf,
        min_samples_split=1,
        lam=lam,
        mechanism="paper",
        simulation=config.simulation,
        random_state=key,
    )


def run(
    config: Figure4Config,
    *,
    n_public: int | None = None,
    with_prune: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Figure4Result:
    """Every grid point, budget and repetition (module docstring)."""
    n_q = config.n_public if n_public is None else n_public
    path = config.path
    acc = {
        eps: {
            (d, m): np.zeros((config.reps, len(path)))
            for d in config.depths
            for m in config.leaf_sizes
        }
        for eps in config.epsilons
    }
    prune = {
        rule: {eps: np.zeros((config.reps, 2)) for eps in config.epsilons} for rule in PRUNE_RULES
    }
    for rep in range(config.reps):
        data = make_lpct_pair(config.n_private, n_q, gamma=config.gamma, rng=config.seed + rep)
        public = {"X_public": data.X_public, "y_public": data.y_public}
        for e_idx, eps in enumerate(config.epsilons):
            key = jax.random.fold_in(jax.random.key(config.seed + rep), e_idx)
            if n_public is not None:
                # the n_Q curve draws another private sample per n_Q: a partition that does not
                # depend on n_Q (max-edge splits) must not reuse a key on changed data
                key = jax.random.fold_in(key, n_q)
            for c_idx, (depth, leaf) in enumerate(
                itertools.product(config.depths, config.leaf_sizes)
            ):
                model = _lpct(config, eps, depth, leaf, 1.0, jax.random.fold_in(key, c_idx))
                model.fit(data.X_private, data.y_private, **public)
                proba = model.predict_proba_path(data.X_test, path)
                pred = model.classes_[np.argmax(proba, axis=2)]
                acc[eps][(depth, leaf)][rep] = np.mean(pred == data.y_test[None, :], axis=1)
            if not with_prune:
                continue
            for rule, (m_idx, leaf) in itertools.product(PRUNE_RULES, enumerate((1, 5))):
                pruned = LPCTPrunedClassifier(
                    epsilon=eps,
                    min_samples_leaf=leaf,
                    prune_rule=rule,
                    mechanism="paper",
                    simulation=config.simulation,
                    random_state=jax.random.fold_in(key, 10_000 + m_idx),
                ).fit(data.X_private, data.y_private, **public)
                prune[rule][eps][rep, m_idx] = pruned.score(data.X_test, data.y_test)
        if progress is not None:
            progress(f"n_Q = {n_q}: repetition {rep + 1}/{config.reps} done")
    return Figure4Result(config, acc, prune)


def _best(
    table: dict[tuple[int, int], FloatArray], columns: Sequence[int], depths: Sequence[int]
) -> Choice:
    """Oracle choice: the (depth, n_l, lambda column) of largest mean accuracy."""
    return max(
        (float(table[(d, m)][:, c].mean()), d, m, c)
        for d in depths
        for m in sorted({m for _, m in table})
        for c in columns
    )


def selections(result: Figure4Result, eps: float) -> dict[str, Choice]:
    """The oracle's choice for LPCT (intermediate lambdas), LPCT-P and LPCT-Q at ``eps``."""
    cfg = result.config
    table, last = result.acc[eps], len(cfg.path) - 1
    return {
        "LPCT": _best(table, range(1, last), cfg.depths),
        "LPCT-P": _best(table, [0], [d for d in cfg.single_depths if d in cfg.depths]),
        "LPCT-Q": _best(table, [last], [d for d in cfg.single_depths if d in cfg.depths]),
    }


def chosen_scores(result: Figure4Result, eps: float) -> dict[str, FloatArray]:
    """Per-repetition accuracies of each method's oracle choice."""
    return {
        name: result.acc[eps][(c[1], c[2])][:, c[3]] for name, c in selections(result, eps).items()
    }


def _mean_se(values: FloatArray, signed: bool = False) -> str:
    se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    return f"{values.mean():+.4f} ± {se:.4f}" if signed else f"{values.mean():.4f} ± {se:.4f}"


def summary_table(result: Figure4Result) -> str:
    """The oracle table: each method at its best grid point, plus LPCT-prune."""
    path = result.config.path
    lines = [
        "| eps | LPCT (best intermediate lambda) | LPCT-P (lambda = 0) | LPCT-Q (lambda = inf) "
        "| LPCT - max(P, Q), paired | LPCT-prune corrected | LPCT-prune reference |",
        "|---|---|---|---|---|---|---|",
    ]
    for eps in result.config.epsilons:
        chosen = selections(result, eps)
        column = chosen_scores(result, eps)
        runner_up = max(("LPCT-P", "LPCT-Q"), key=lambda name: chosen[name][0])
        cells = []
        for name, c in chosen.items():
            lam = f", lambda={path[c[3]]:g}" if name == "LPCT" else ""
            cells.append(f"{_mean_se(column[name])} (depth {c[1]}, n_l {c[2]}{lam})")
        pruned = [result.prune[rule][eps].mean(axis=0) for rule in PRUNE_RULES]
        lines.append(
            f"| {eps:g} | "
            + " | ".join(cells)
            + f" | {_mean_se(column['LPCT'] - column[runner_up], signed=True)} | "
            + " | ".join(f"{m.max():.4f} (n_l {(1, 5)[int(np.argmax(m))]})" for m in pruned)
            + " |"
        )
    return "\n".join(lines)


def holdout_table(result: Figure4Result) -> str:
    """Re-run the selected configurations on fresh repetitions (module docstring)."""
    cfg = result.config
    path = cfg.path
    lines = [
        "| eps | LPCT | LPCT-P | LPCT-Q | LPCT - LPCT-P (paired) | LPCT - LPCT-Q (paired) |",
        "|---|---|---|---|---|---|",
    ]
    for e_idx, eps in enumerate(cfg.epsilons):
        chosen = selections(result, eps)
        acc = np.zeros((cfg.holdout_reps, 3))
        for i in range(cfg.holdout_reps):
            seed = cfg.seed + 1000 + i
            data = make_lpct_pair(cfg.n_private, cfg.n_public, gamma=cfg.gamma, rng=seed)
            key = jax.random.fold_in(jax.random.key(seed), e_idx)
            for j, (_, depth, leaf, lam_column) in enumerate(chosen.values()):
                model = _lpct(cfg, eps, depth, leaf, path[lam_column], jax.random.fold_in(key, j))
                model.fit(
                    data.X_private, data.y_private, X_public=data.X_public, y_public=data.y_public
                )
                acc[i, j] = model.score(data.X_test, data.y_test)
        lines.append(
            f"| {eps:g} | "
            + " | ".join(_mean_se(acc[:, j]) for j in range(3))
            + " | "
            + " | ".join(_mean_se(acc[:, 0] - acc[:, j], signed=True) for j in (1, 2))
            + " |"
        )
    return "\n".join(lines)


def to_json(result: Figure4Result) -> dict[str, Any]:
    """The raw accuracies, JSON-ready."""
    return {
        "config": {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in attrs.asdict(result.config).items()
        },
        "path": [str(x) for x in result.config.path],
        "acc": {
            str(eps): {f"{d},{m}": a.tolist() for (d, m), a in table.items()}
            for eps, table in result.acc.items()
        },
        "prune": {
            rule: {str(eps): a.tolist() for eps, a in per.items()}
            for rule, per in result.prune.items()
        },
    }


def nq_curve(
    config: Figure4Config,
    n_publics: Sequence[int],
    epsilon: float,
    *,
    progress: Callable[[str], None] | None = None,
) -> dict[str, list[FloatArray]]:
    """LPCT Figure 6: per ``n_Q``, each method's oracle-chosen per-repetition accuracies."""
    cfg = attrs.evolve(config, epsilons=(epsilon,))
    out: dict[str, list[FloatArray]] = {"LPCT": [], "LPCT-P": [], "LPCT-Q": []}
    for n_q in n_publics:
        scores = chosen_scores(run(cfg, n_public=n_q, with_prune=False, progress=progress), epsilon)
        for name, values in scores.items():
            out[name].append(values)
    return out


def plot_figure4(
    result: Figure4Result,
    curve: dict[str, list[FloatArray]],
    n_publics: Sequence[int],
    curve_epsilon: float,
    path: Path,
) -> Path:
    """(a) accuracy vs epsilon at each method's oracle choice; (b) accuracy vs ``n_Q``; both
    with (0.1, 0.9) quantile bands over repetitions."""
    fig, (ax_eps, ax_nq) = _figure(2)
    epsilons = list(result.config.epsilons)
    per_eps = [chosen_scores(result, eps) for eps in epsilons]
    for name in ("LPCT", "LPCT-P", "LPCT-Q"):
        _band(ax_eps, epsilons, [s[name] for s in per_eps], name)
        _band(ax_nq, list(n_publics), curve[name], name)
    cfg = result.config
    ax_eps.set_title(
        f"(a) Figure 4a: n_P = {cfg.n_private}, n_Q = {cfg.n_public}, gamma = {cfg.gamma:g}",
        fontsize=9,
    )
    ax_eps.set_xlabel("epsilon")
    ax_nq.set_title(
        f"(b) Figure 6: n_P = {cfg.n_private}, eps = {curve_epsilon:g}, gamma = {cfg.gamma:g}",
        fontsize=9,
    )
    ax_nq.set_xlabel("n_Q (public sample size)")
    for ax in (ax_eps, ax_nq):
        ax.set_ylabel("test accuracy (oracle choice)")
        ax.legend(fontsize=7)
    return _save(fig, path)


def run_lpct_figure4(
    out: str | Path,
    *,
    epsilons: Sequence[float] | None = None,
    reps: int | None = None,
    quick: bool = False,
    seed: int = 0,
    holdout: bool = True,
) -> list[Path]:
    """Figure 4a tables (oracle and held-out), the ``n_Q`` curve, a PNG and the raw JSON."""
    overrides: dict[str, Any] = {"seed": seed}
    if epsilons:
        overrides["epsilons"] = tuple(epsilons)
    if reps is not None:
        overrides["reps"] = reps
    config = Figure4Config.quick(**overrides) if quick else Figure4Config(**overrides)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    print(compile_note())
    result = run(config, progress=print)
    n_publics = (10, 50, 200) if quick else (10, 20, 50, 100, 150, 200)
    curve_eps = max(config.epsilons)
    curve = nq_curve(config, n_publics, curve_eps, progress=print)
    parts = [
        f"# LPCT Figure 4a / Figure 6 ({'quick' if quick else 'full'}; oracle, NOT private tuning)",
        "",
        f"Settings: {attrs.asdict(config)}",
        "",
        "## Figure 4a: oracle choice (mean ± standard error over repetitions)",
        "",
        summary_table(result),
    ]
    if holdout:
        parts += ["", "## The same configurations on fresh repetitions", "", holdout_table(result)]
    parts += ["", f"## Figure 6: accuracy vs n_Q at eps = {curve_eps:g}", ""]
    parts += ["| n_Q | LPCT | LPCT-P | LPCT-Q |", "|---|---|---|---|"]
    for i, n_q in enumerate(n_publics):
        parts.append(
            f"| {n_q} | "
            + " | ".join(_mean_se(curve[m][i]) for m in ("LPCT", "LPCT-P", "LPCT-Q"))
            + " |"
        )
    md = folder / "figure4.md"
    md.write_text("\n".join(parts) + "\n", encoding="utf-8")
    raw = folder / "figure4.json"
    blob = to_json(result)
    blob["nq_curve"] = {
        "epsilon": curve_eps,
        "n_public": list(n_publics),
        "acc": {k: [v.tolist() for v in vs] for k, vs in curve.items()},
    }
    raw.write_text(json.dumps(blob), encoding="utf-8")
    png = plot_figure4(result, curve, n_publics, curve_eps, folder / "figure4.png")
    return [md, raw, png]
