"""Markdown tables in the papers' style: mean (sd) per dataset and method, best in bold.

For each epsilon, one row per dataset and one column per (method, tuning) entry
(:mod:`._summary`). The best mean of a row is **bold**; it gets a ``*`` when a paired two-sided
Wilcoxon signed-rank test over the common repetitions rejects equality at level 0.05 against
*every* other entry of the row (the papers' "significantly better"; with fewer than 6 paired
repetitions the test cannot reach 0.05). Methods with published values get a ``paper`` column
(the paper's star kept) and one ``ours / paper`` ratio per entry of that method.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
from scipy import stats

from ldptree.experiments._methods import DEFAULT_METHODS
from ldptree.experiments._published import Published, published
from ldptree.experiments._summary import Entry, higher_is_better

ALPHA = 0.05
PaperLookup = Callable[[str, str, float], Published | None]


def _paper_key(method: str) -> str | None:
    try:
        return DEFAULT_METHODS.get(method).paper_key
    except ValueError:
        return None


def _lpdt_lookup(dataset: str, method: str, epsilon: float) -> Published | None:
    key = _paper_key(method)
    if key == "DT":  # the non-private tree has one value per dataset, whatever epsilon
        return published(dataset, key, None)
    return None if key is None else published(dataset, key, epsilon)


def wilcoxon_p(a: Entry, b: Entry) -> float:
    """Two-sided paired Wilcoxon signed-rank p-value over common repetitions (1 if undefined)."""
    x, y = a.by_rep(), b.by_rep()
    common = sorted(set(x) & set(y))
    diff = np.asarray([x[r] - y[r] for r in common])
    if diff.shape[0] == 0 or not np.any(diff != 0):
        return 1.0
    return float(stats.wilcoxon(diff).pvalue)


def _fmt(value: float) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value:.3g}" if 1e-3 <= abs(value) < 1e4 else f"{value:.2e}"


#: How a column names its tuning mode.
TUNING_NOTES = {
    "oracle": "oracle, non-private tuning",
    "private": "private tuning",
    "fixed": "fixed parameters",
}


def _label(entries: list[Entry]) -> str:
    """A column's head: the method's label, the tuning mode and, when any configuration of the
    column turned a protective setting off, which one (:mod:`._guards`)."""
    entry = entries[0]
    try:
        name = DEFAULT_METHODS.get(entry.method).label
    except ValueError:
        name = entry.method
    note = TUNING_NOTES.get(entry.tuning, entry.tuning)
    guards = sorted({g for e in entries for g in e.guards.split("; ") if g})
    flag = "".join(f"; {g}" for g in guards)
    return f"{name} ({note}{flag})"


def markdown_table(
    entries: Iterable[Entry], epsilon: float, *, paper: PaperLookup = _lpdt_lookup
) -> str:
    """The table for one epsilon (module docstring)."""
    rows: dict[str, dict[tuple[str, str], Entry]] = {}
    for e in entries:
        if e.epsilon == epsilon:
            rows.setdefault(e.dataset, {})[(e.method, e.tuning)] = e
    if not rows:
        raise ValueError(f"no results for epsilon={epsilon}")
    columns = sorted({col for row in rows.values() for col in row})
    methods = sorted({m for m, _ in columns})
    published = [m for m in methods if any(paper(d, m, epsilon) is not None for d in rows)]
    head = [_label([r[c] for r in rows.values() if c in r]) for c in columns]
    for m in published:
        head.append(f"paper {m}")
        head.extend(f"{t} / paper" for mm, t in columns if mm == m)
    lines = [
        f"**epsilon = {epsilon:g}**: test {next(iter(next(iter(rows.values())).values())).metric}"
        ", mean (sd) over repetitions",
        "",
        "| dataset | " + " | ".join(head) + " |",
        "|---" * (len(head) + 1) + "|",
    ]
    for dataset in sorted(rows):
        row = rows[dataset]
        present = [row[c] for c in columns if c in row]
        higher = higher_is_better(present[0].metric)
        best = (max if higher else min)(present, key=lambda e: e.mean)
        significant = len(present) > 1 and all(
            wilcoxon_p(best, e) < ALPHA for e in present if e is not best
        )
        cells = []
        for c in columns:
            if c not in row:
                cells.append("")
                continue
            e = row[c]
            text = f"{_fmt(e.mean)} ({_fmt(e.sd)})"
            if e is best:
                text = f"**{text}**" + ("\\*" if significant else "")
            cells.append(text)
        for m in published:
            pub = paper(dataset, m, epsilon)
            if pub is None or pub.value is None:
                cells.append("-" if pub is not None else "")
                cells.extend("" for mm, _ in columns if mm == m)
                continue
            cells.append(
                _fmt(pub.value)
                + ("\\*" if pub.significant else "")
                + ("" if pub.certain else " (eps?)")
            )
            cells.extend(
                f"{row[(mm, t)].mean / pub.value:.2f}" if (mm, t) in row else ""
                for mm, t in columns
                if mm == m
            )
        lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_summary(
    entries: Iterable[Entry], *, tolerance: float = 0.25, paper: PaperLookup = _lpdt_lookup
) -> str:
    """How many (dataset, epsilon) cells per (method, tuning) are within ``(1 + tol)`` x paper."""
    counts: dict[tuple[str, str], list[bool]] = {}
    for e in entries:
        pub = paper(e.dataset, e.method, e.epsilon)
        if pub is None or pub.value is None:
            continue
        ratio = e.mean / pub.value
        ok = ratio >= 1 - tolerance if higher_is_better(e.metric) else ratio <= 1 + tolerance
        counts.setdefault((e.method, e.tuning), []).append(ok)
    lines = []
    for (method, tuning), oks in sorted(counts.items()):
        lines.append(
            f"- {method} ({tuning}): {sum(oks)}/{len(oks)} dataset-epsilon cells within "
            f"{tolerance:.0%} of the paper's value or better"
        )
    return "\n".join(lines)


def markdown_report(entries: list[Entry], *, title: str) -> str:
    """All tables (one per epsilon) with the paper comparison summary."""
    parts = [f"# {title}", ""]
    for eps in sorted({e.epsilon for e in entries}):
        parts.extend([markdown_table(entries, eps), ""])
    summary = ratio_summary(entries)
    if summary:
        parts.extend(["Comparison with the published values:", "", summary, ""])
    parts.append(
        "Bold: best mean of the row; \\*: significantly better than every other entry of the row "
        "(paired two-sided Wilcoxon signed-rank test, 0.05). Oracle rows pick the grid point with "
        "the best mean test score (the papers' practice) and are **not private**."
    )
    return "\n".join(parts) + "\n"
