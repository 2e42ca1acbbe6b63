"""From run rows to per-(dataset, epsilon, method, tuning) results, as the papers report them.

* ``oracle`` rows: the grid point with the best *mean* test score over the repetitions is chosen
  (the LPCT notebook's rule), and its per-repetition scores are the entry's values;
* ``private`` and ``fixed`` rows: the selected model of each repetition.

``param_curve`` gives, for one parameter, the best mean score at each of its values (the other
parameters chosen by the same oracle rule): the MSE-vs-depth and MSE-vs-``n_l`` curves of LPDT
Figure 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree.experiments._metrics import METRICS
from ldptree.experiments._records import RunRecord

EntryKey = tuple[str, float, str, str]  # dataset, epsilon, method, tuning


@attrs.frozen(eq=False)
class Entry:
    """The per-repetition scores of one (dataset, epsilon, method, tuning); ``guards``: the
    protective settings the chosen configurations turned off (``"; "``-joined, else empty)."""

    dataset: str
    epsilon: float
    method: str
    tuning: str
    metric: str
    reps: tuple[int, ...]
    values: FloatArray
    params: str
    private_pipeline: bool
    guards: str = ""

    @property
    def mean(self) -> float:
        return float(self.values.mean())

    @property
    def sd(self) -> float:
        return float(self.values.std(ddof=1)) if self.values.shape[0] > 1 else float("nan")

    def by_rep(self) -> dict[int, float]:
        return dict(zip(self.reps, self.values.tolist(), strict=True))


def higher_is_better(metric: str) -> bool:
    """Direction of a metric by name."""
    for m in METRICS.values():
        if m.name == metric:
            return m.higher_is_better
    raise ValueError(f"unknown metric {metric!r}")


def _best_group(groups: dict[Any, list[RunRecord]], higher: bool) -> tuple[Any, list[RunRecord]]:
    def mean(rows: list[RunRecord]) -> float:
        return float(np.mean([r.value for r in rows]))

    pick = max if higher else min
    key = pick(sorted(groups, key=str), key=lambda k: mean(groups[k]))
    return key, groups[key]


def _entry(key: EntryKey, rows: list[RunRecord]) -> Entry:
    dataset, epsilon, method, tuning = key
    higher = higher_is_better(rows[0].metric)
    if tuning == "oracle":
        by_point: dict[str, list[RunRecord]] = {}
        for r in rows:
            by_point.setdefault(r.params, []).append(r)
        params, chosen = _best_group(by_point, higher)
    else:
        chosen = [r for r in rows if r.selected]
        params = ""
    chosen = sorted(chosen, key=lambda r: r.rep)
    return Entry(
        dataset=dataset,
        epsilon=epsilon,
        method=method,
        tuning=tuning,
        metric=rows[0].metric,
        reps=tuple(r.rep for r in chosen),
        values=np.asarray([r.value for r in chosen]),
        params=params,
        private_pipeline=all(r.private_pipeline for r in chosen),
        guards="; ".join(sorted({r.guards for r in chosen if r.guards})),
    )


def summarize(records: Iterable[RunRecord]) -> list[Entry]:
    """One :class:`Entry` per (dataset, epsilon, method, tuning) present in ``records``."""
    groups: dict[EntryKey, list[RunRecord]] = {}
    for r in records:
        groups.setdefault((r.dataset, r.epsilon, r.method, r.tuning), []).append(r)
    return [_entry(key, groups[key]) for key in sorted(groups)]


def param_curve(
    records: Iterable[RunRecord], param: str, *, dataset: str, epsilon: float, method: str
) -> list[tuple[Any, FloatArray]]:
    """``[(value, per-rep scores)]`` of the best grid point at each value of ``param`` (oracle)."""
    rows = [
        r
        for r in records
        if r.tuning == "oracle"
        and (r.dataset, r.epsilon, r.method) == (dataset, epsilon, method)
        and param in r.param_dict
    ]
    if not rows:
        return []
    higher = higher_is_better(rows[0].metric)
    by_value: dict[str, dict[str, list[RunRecord]]] = {}
    for r in rows:
        value = json.dumps(r.param_dict[param])
        by_value.setdefault(value, {}).setdefault(r.params, []).append(r)
    curve = []
    for value, groups in by_value.items():
        _, chosen = _best_group(groups, higher)
        curve.append((json.loads(value), np.asarray([r.value for r in chosen])))
    return sorted(curve, key=lambda item: item[0])
