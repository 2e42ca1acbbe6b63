"""Everything a finished run writes next to its ``runs.csv``: tables and figures."""

from __future__ import annotations

from pathlib import Path

from ldptree.experiments._holders import holder_ledger_section
from ldptree.experiments._plots import plot_param_curve, plot_privacy_utility
from ldptree.experiments._records import read_records
from ldptree.experiments._summary import summarize
from ldptree.experiments._tables import markdown_report

#: grid parameters that get a metric-vs-parameter figure when oracle rows vary them
CURVE_PARAMS = ("max_depth", "min_samples_leaf")


def write_report(results: str | Path, *, title: str) -> list[Path]:
    """``results.md``, ``privacy_utility.png`` and parameter curves beside ``results``.

    ``results.md`` ends with what the holders of one split released over all cells
    (:func:`~ldptree.experiments._holders.holder_ledger_section`)."""
    path = Path(results)
    records = read_records(path)
    if not records:
        raise ValueError(f"{path} has no rows to report")
    folder = path.parent
    written = [folder / "results.md"]
    report = markdown_report(summarize(records), title=title)
    written[0].write_text(report + "\n" + holder_ledger_section(records), encoding="utf-8")
    written.append(plot_privacy_utility(records, folder / "privacy_utility.png"))
    for method in sorted({r.method for r in records}):
        for param in CURVE_PARAMS:
            values = {
                r.param_dict.get(param)
                for r in records
                if r.method == method and r.tuning == "oracle"
            }
            if len(values - {None}) > 1:
                target = folder / f"{method}_{param}.png"
                written.append(plot_param_curve(records, param, target, method=method))
    return written
