"""Summaries and markdown tables: oracle choice, bold best, Wilcoxon marks, paper ratios."""

from __future__ import annotations

import json

import numpy as np

from ldptree.experiments import RunRecord, lpdt_published, markdown_table, summarize, wilcoxon_p
from ldptree.experiments._tables import markdown_report


def _record(method, tuning, rep, value, *, dataset="concrete", eps=2.0, params=None, selected=None):
    return RunRecord(
        experiment="t",
        dataset=dataset,
        task="regression",
        method=method,
        tuning=tuning,
        epsilon=eps,
        rep=rep,
        grid_index=0,
        params=json.dumps(params or {}),
        metric="mse",
        value=float(value),
        selected=selected,
        validation_score=None,
        seconds=0.1,
        n_public=1,
        n_train=1,
        n_validation=0,
        n_test=1,
        holder_epsilon=eps,
        private_pipeline=tuning != "oracle",
        spend="",
        fingerprint="f",
        cell_rows=1,
    )


def _records(noise_scale):
    rng = np.random.default_rng(0)
    rows = []
    for rep in range(10):
        # oracle: grid point d=2 is better on average than d=1
        rows.append(_record("lpdt-m", "oracle", rep, 300 + rng.normal(0, 5), params={"d": 1}))
        rows.append(_record("lpdt-m", "oracle", rep, 200 + rng.normal(0, 5), params={"d": 2}))
        rows.append(
            _record("lpdt-m", "private", rep, 200 + rng.normal(0, noise_scale), selected=True)
        )
    return rows


def test_oracle_picks_the_grid_point_with_the_best_mean():
    (oracle, private) = summarize(_records(30.0))
    assert oracle.tuning == "oracle" and json.loads(oracle.params) == {"d": 2}
    assert abs(oracle.mean - 200) < 5 and oracle.values.shape == (10,)
    assert private.tuning == "private" and not oracle.private_pipeline and private.private_pipeline


def test_bold_best_and_star_only_when_significant():
    rng = np.random.default_rng(1)
    clear = summarize(
        [r for r in _records(5.0) if r.tuning == "oracle"]
        + [
            _record("lpdt-m", "private", k, 400 + rng.normal(0, 5), selected=True)
            for k in range(10)
        ]
    )
    table = markdown_table(clear, 2.0)
    row = next(line for line in table.splitlines() if line.startswith("| concrete"))
    cells = [c.strip() for c in row.split("|")[2:-1]]
    assert cells[0].startswith("**") and cells[0].endswith("\\*")  # oracle: best, significant
    assert not cells[1].startswith("**")
    # equal in distribution: the best is bold but not starred
    tied = summarize(
        [r for r in _records(5.0) if r.tuning == "oracle"]
        + [
            _record("lpdt-m", "private", k, 200 + rng.normal(0, 5), selected=True)
            for k in range(10)
        ]
    )
    row = next(line for line in markdown_table(tied, 2.0).splitlines() if "| concrete" in line)
    cells = [c.strip() for c in row.split("|")[2:4]]
    assert sum(c.startswith("**") for c in cells) == 1
    assert not any(c.endswith("\\*") for c in cells)


def test_paper_column_and_ratio():
    entries = summarize(_records(5.0))
    table = markdown_table(entries, 2.0)
    paper = lpdt_published("concrete", "M", 2.0)
    assert paper is not None and paper.value == 294.0
    header, _, row = table.splitlines()[2:5]
    assert "paper lpdt-m" in header and "oracle / paper" in header
    oracle = next(e for e in entries if e.tuning == "oracle")
    assert f"{oracle.mean / 294.0:.2f}" in row
    assert "294\\*" in row  # the paper's own significance star is kept
    report = markdown_report(entries, title="x")
    assert "lpdt-m (oracle): 1/1 dataset-epsilon cells within 25%" in report


def test_wilcoxon_is_paired_on_repetitions():
    a = summarize([_record("lpdt-m", "fixed", k, k, selected=True) for k in range(8)])[0]
    b = summarize([_record("lpdt-v", "fixed", k, k + 1.0, selected=True) for k in range(8)])[0]
    c = summarize([_record("lpdt-v", "fixed", k, float(k), selected=True) for k in range(8)])[0]
    assert wilcoxon_p(a, b) < 0.05  # shifted by 1 on every repetition: exact p = 2/2^8
    assert wilcoxon_p(a, c) == 1.0  # identical
