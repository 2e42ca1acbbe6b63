"""The experiment runner fanned out to a Dask cluster: the same rows, the same resumable CSV."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from exp_helpers import EPS, source

from ldptree.experiments import Experiment, FixedParams, run_experiment


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        rows = [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(handle)]
    return sorted(rows, key=lambda r: (r["dataset"], r["rep"], r["epsilon"]))


def test_dask_executor_gives_the_rows_of_one_process(dask_client: Any, tmp_path: Path) -> None:
    experiment = Experiment(
        "t", [source("s1"), source("s2")], ["lpdt-m"], EPS, 2, FixedParams({"max_depth": 2})
    )
    one = run_experiment(experiment, tmp_path / "one", progress=False)
    executor = dask_client.get_executor(pure=False)
    lines: list[str] = []
    two = run_experiment(experiment, tmp_path / "two", progress=lines.append, executor=executor)
    assert _rows(two) == _rows(one) and len(_rows(one)) == 2 * 2 * len(EPS)
    assert len(lines) == 4  # one per (source, repetition) group
    # resumable: a second run finds every cell done and adds nothing
    run_experiment(experiment, tmp_path / "two", progress=lines.append, executor=executor)
    assert _rows(two) == _rows(one) and len(lines) == 4
