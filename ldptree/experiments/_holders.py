"""What the private holders of one split have released, summed over every cell of a run.

An experiment fits several methods, budgets and grid points on the *same* private sample: for
repetition ``r`` of source ``D`` every cell uses the split drawn from
``derive_seed(seed, "split", D, r)``, so that results are paired. Each fit draws independent noise
(its keys are derived per cell, and each release folds its own configuration into the key), but
the reports all come from the same holders. In a deployment those would be separate releases of
one person's record, and by sequential composition each holder would have spent

    eps_holder(D, r) = sum over cells c run on split (D, r) of eps_c,

where ``eps_c`` is the cell's ``holder_epsilon`` (already ``k eps`` for an oracle cell of ``k``
grid points, and the ledger's total for a private-tuning cell). The tables compare methods *as if*
each cell had its own population of holders at the row's epsilon: that is what the simulation
means, and :func:`holder_ledger_section` says so next to every results table, with the sums.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ldptree.experiments._records import RunRecord

#: The sentence written beside every results table (and by ``ldptree`` commands).
SEPARATE_POPULATIONS = (
    "Every cell of a repetition (method, epsilon, tuning, grid point) is fitted on the same "
    "private holders with independent noise: the tables compare methods as if each cell had a "
    "separate population of holders at the row's epsilon. On one population the releases would "
    "compose, and each holder would spend the sum below."
)


def holder_ledger(records: Iterable[RunRecord]) -> dict[tuple[str, int], tuple[int, float]]:
    """``{(dataset, rep): (cells, epsilon summed over the cells)}`` for the rows of a run.

    A cell (``RunRecord.cell``) may have several rows (one per grid point); its
    ``holder_epsilon`` is counted once."""
    per_cell: dict[tuple[str, str, float, int, str], float] = {}
    for record in records:
        per_cell[record.cell] = max(per_cell.get(record.cell, 0.0), record.holder_epsilon)
    out: dict[tuple[str, int], tuple[int, float]] = {}
    for (_, dataset, _, rep, _), epsilon in per_cell.items():
        cells, total = out.get((dataset, rep), (0, 0.0))
        out[(dataset, rep)] = (cells + 1, total + epsilon)
    return out


def holder_ledger_section(records: Iterable[RunRecord]) -> str:
    """Markdown: :data:`SEPARATE_POPULATIONS` and, per dataset, the cells run on one split and
    the largest per-holder sum over its repetitions."""
    ledger = holder_ledger(records)
    worst: dict[str, tuple[int, float]] = {}
    for (dataset, _), (cells, total) in ledger.items():
        previous = worst.get(dataset, (0, -math.inf))
        worst[dataset] = (max(previous[0], cells), max(previous[1], total))
    lines = [
        "## Releases on the same holders",
        "",
        SEPARATE_POPULATIONS,
        "",
        "| dataset | cells per split | summed holder epsilon (largest over repetitions) |",
        "|---|---|---|",
    ]
    for dataset in sorted(worst):
        cells, total = worst[dataset]
        lines.append(f"| {dataset} | {cells} | {total:g} |")
    return "\n".join(lines) + "\n"
