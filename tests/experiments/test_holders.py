"""Cells fitted on the same private holders: the runner's report states that it simulates
separate populations and writes what one population would have spent (sequential sum)."""

from __future__ import annotations

import numpy as np

from ldptree.experiments import Figure1Result, RunRecord
from ldptree.experiments._holders import (
    SEPARATE_POPULATIONS,
    holder_ledger,
    holder_ledger_section,
)
from ldptree.experiments._records import write_records
from ldptree.experiments._report import write_report


def record(method: str, eps: float, rep: int, holder_eps: float, grid: int = 0) -> RunRecord:
    return RunRecord(
        experiment="x",
        dataset="sine",
        task="regression",
        method=method,
        tuning="oracle",
        epsilon=eps,
        rep=rep,
        grid_index=grid,
        params="{}",
        metric="mse",
        value=1.0 + grid,
        selected=None,
        validation_score=None,
        seconds=0.1,
        n_public=10,
        n_train=100,
        n_validation=0,
        n_test=20,
        holder_epsilon=holder_eps,
        private_pipeline=False,
        spend="NON-PRIVATE",
        fingerprint="f",
        cell_rows=3,
    )


def rows() -> list[RunRecord]:
    # rep 0: an oracle cell of 3 grid points at eps 2 (6 per holder, once, not per row), and a
    # second method at eps 1 and 4 (one fit each); rep 1: only the oracle cell
    out = [record("lpdt-m", 2.0, 0, 6.0, grid=g) for g in range(3)]
    out += [record("lpdt-v", 1.0, 0, 1.0), record("lpdt-v", 4.0, 0, 4.0)]
    out += [record("lpdt-m", 2.0, 1, 6.0, grid=g) for g in range(3)]
    return out


def test_the_ledger_sums_each_cell_once_per_split() -> None:
    assert holder_ledger(rows()) == {("sine", 0): (3, 11.0), ("sine", 1): (1, 6.0)}


def test_the_report_says_it_simulates_separate_populations(tmp_path) -> None:
    section = holder_ledger_section(rows())
    assert SEPARATE_POPULATIONS in section
    assert "| sine | 3 | 11 |" in section  # the worst repetition
    results = tmp_path / "runs.csv"
    write_records(results, rows(), append=False)
    write_report(results, title="t")
    text = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert "Releases on the same holders" in text and "| sine | 3 | 11 |" in text


def test_figure1_reports_what_one_population_would_spend() -> None:
    mse = {
        ("public", 2, 10): np.ones(2),
        ("public", 2, 20): np.ones(2),
        ("public", 4, 10): np.ones(2),
        ("no public", 2, 0): np.ones(2),
        ("no public", 4, 0): np.ones(2),
    }
    result = Figure1Result(epsilon=8.0, mse=mse)
    assert result.holder_epsilon() == {"no public": 16.0, "public": 24.0}
    note = result.holders_note()
    assert "24 in arm 'public'" in note and "16 in arm 'no public'" in note
    assert "eps = 8" in note
