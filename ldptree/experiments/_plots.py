"""Figures from the results file (matplotlib, Agg backend, PNG).

* :func:`plot_privacy_utility`: test metric against epsilon per dataset, one line per (method,
  tuning) at the mean over repetitions, with a band between the 0.1 and 0.9 quantiles;
* :func:`plot_param_curve`: test metric against one grid parameter (``max_depth``,
  ``min_samples_leaf``), one line per epsilon, from oracle rows: LPDT Figure 2 (a, b).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ldptree.experiments._records import RunRecord
from ldptree.experiments._summary import param_curve, summarize

QUANTILES = (0.1, 0.9)


def _figure(n_panels: int) -> tuple[Any, list[Any]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(4, n_panels)
    rows = math.ceil(n_panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n_panels:]:
        ax.set_visible(False)
    return fig, flat[:n_panels]


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _band(ax: Any, x: Sequence[float], samples: Sequence[np.ndarray[Any, Any]], label: str) -> None:
    mean = [float(np.mean(s)) for s in samples]
    lo = [float(np.quantile(s, QUANTILES[0])) for s in samples]
    hi = [float(np.quantile(s, QUANTILES[1])) for s in samples]
    (line,) = ax.plot(x, mean, marker="o", ms=3, label=label)
    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, lw=0)


def plot_privacy_utility(records: Sequence[RunRecord], path: str | Path) -> Path:
    """Metric vs epsilon per dataset with (0.1, 0.9) quantile bands; returns the PNG path."""
    entries = summarize(records)
    if not entries:
        raise ValueError("records is empty: nothing to plot")
    datasets = sorted({e.dataset for e in entries})
    fig, axes = _figure(len(datasets))
    for ax, dataset in zip(axes, datasets, strict=True):
        lines: dict[tuple[str, str], list[Any]] = {}
        for e in entries:
            if e.dataset == dataset:
                lines.setdefault((e.method, e.tuning), []).append(e)
        for (method, tuning), es in sorted(lines.items()):
            es = sorted(es, key=lambda e: e.epsilon)
            _band(ax, [e.epsilon for e in es], [e.values for e in es], f"{method} ({tuning})")
        ax.set_title(dataset, fontsize=9)
        ax.set_xlabel("epsilon")
        ax.set_ylabel(f"test {entries[0].metric}")
        ax.set_yscale("log")
    axes[0].legend(fontsize=7)
    return _save(fig, Path(path))


def plot_param_curve(
    records: Sequence[RunRecord], param: str, path: str | Path, *, method: str = "lpdt-m"
) -> Path:
    """Metric vs ``param`` per dataset, one line per epsilon (oracle rows); returns the path."""
    keys = sorted({(r.dataset, r.epsilon) for r in records if r.method == method})
    datasets = sorted({d for d, _ in keys})
    if not datasets:
        raise ValueError(f"no rows of method {method!r} to plot")
    fig, axes = _figure(len(datasets))
    drawn = False
    for ax, dataset in zip(axes, datasets, strict=True):
        for d, eps in keys:
            if d != dataset:
                continue
            curve = param_curve(records, param, dataset=dataset, epsilon=eps, method=method)
            if curve:
                drawn = True
                _band(ax, [v for v, _ in curve], [s for _, s in curve], f"eps = {eps:g}")
        ax.set_title(dataset, fontsize=9)
        ax.set_xlabel(param)
        ax.set_ylabel("test metric (best other parameters)")
    if not drawn:
        raise ValueError(f"no oracle rows vary {param!r}: nothing to plot")
    axes[0].legend(fontsize=7)
    return _save(fig, Path(path))
