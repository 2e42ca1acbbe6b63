"""Configurations that cannot trap: a grid starts from the estimator's defaults, a configuration
that turns a protective setting off is reported (rows, table, one note), warnings come once per
cause and point at the caller's line, and public-only rows are labelled and charged as such."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from exp_helpers import EPS, source

from ldptree.experiments import (
    Experiment,
    FixedParams,
    Grid,
    OracleTuning,
    PrivateTuning,
    load_config,
    read_records,
    run_experiment,
    write_report,
)

_CONFIG = """
methods = ["lpdt-m"]
reps = 1
epsilons = [2]
[[sources]]
synthetic = "lpdt-figure1"
sizes = [300, 2000, 500]
[tuning]
grids = {{ lpdt-m = {grid} }}
"""


def _run_config(tmp_path: Path, grid: str) -> Path:
    config = tmp_path / "exp.toml"
    config.write_text(_CONFIG.format(grid=grid))
    experiment, _ = load_config(config)
    return run_experiment(experiment, tmp_path / "out")


def test_a_grid_naming_only_sizes_keeps_the_guarded_defaults(tmp_path, capsys):
    runs = _run_config(tmp_path, "{ max_depth = [2, 4], min_samples_leaf = [10] }")
    records = read_records(runs)
    assert len(records) == 2 and all(r.guards == "" for r in records)
    assert "note:" not in capsys.readouterr().err
    write_report(runs, title="t")
    assert "guard off" not in (runs.parent / "results.md").read_text()


def test_turning_the_guard_off_is_reported_in_rows_table_and_once_in_the_output(tmp_path, capsys):
    grid = '{ max_depth = [2, 4], min_samples_leaf = [10], readout = ["ratio"] }'
    runs = _run_config(tmp_path, grid)
    records = read_records(runs)
    flag = "read-out guard off (readout='ratio', min_private_ratio=0)"
    assert len(records) == 2 and all(r.guards == flag for r in records)
    err = capsys.readouterr().err
    assert err.count("note: lpdt-m runs with the read-out guard off") == 1
    write_report(runs, title="t")
    report = (runs.parent / "results.md").read_text()
    assert f"LPDT-M (oracle, non-private tuning; {flag})" in report


def test_a_fallback_guard_counts_as_a_guard(tmp_path):
    tuning = FixedParams({"max_depth": 2, "readout": "ratio", "min_private_ratio": "auto"})
    experiment = Experiment("t", [source()], ["lpdt-m"], EPS, 1, tuning)
    (row,) = read_records(run_experiment(experiment, tmp_path, progress=False))
    assert row.guards == ""


def test_the_unguarded_deconv_row_is_flagged(tmp_path):
    tuning = OracleTuning({"deconv-raw": Grid({"bandwidth": (0.2,)})})
    experiment = Experiment("t", [source()], ["deconv-raw"], EPS, 1, tuning)
    (row,) = read_records(run_experiment(experiment, tmp_path, progress=False))
    assert row.guards == "guard and label clipping off (guard='none')"


@pytest.mark.slow
def test_a_too_fine_grid_warns_once_at_the_callers_line(tmp_path):
    tuning = PrivateTuning({"lpdt-m": Grid({"max_depth": (1, 2, 3)})})
    experiment = Experiment("t", [source("a"), source("b")], ["lpdt-m"], (1.0, 2.0), 2, tuning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_experiment(experiment, tmp_path, progress=False)
    grid_warnings = [w for w in caught if "selection is close to random" in str(w.message)]
    assert len(grid_warnings) == 1  # 2 sources x 2 epsilons x 2 repetitions: one cause
    (warning,) = grid_warnings
    assert warning.filename == __file__  # the run_experiment line above, not ldptree's code
    message = str(warning.message)
    assert message.startswith("lpdt-m: private tuning over the 3-point grid")
    assert "Use fewer candidates" in message and "4 of its 4 cells are affected" in message


def test_the_librarys_default_grids_do_not_warn(tmp_path):
    # lpdt-m: the default private grid sizes itself; dt: its 4-point default grid would be too
    # fine for these holders, but the user did not choose it
    experiment = Experiment("t", [source()], ["lpdt-m", "dt"], EPS, 1, PrivateTuning())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runs = run_experiment(experiment, tmp_path, progress=False)
    assert {r.method for r in read_records(runs)} == {"lpdt-m", "dt"}


@pytest.mark.parametrize(
    ("tuning", "holder_epsilon", "private"),
    [
        (FixedParams({"max_depth": 2}), 0.0, True),
        (OracleTuning({"dt-pub": Grid({"max_depth": (1, 2)})}), 0.0, False),
        (PrivateTuning({"dt-pub": Grid({"max_depth": (1, 2)})}), EPS[0], True),
    ],
)
def test_public_only_rows_spend_nothing_on_training(tmp_path, tuning, holder_epsilon, private):
    experiment = Experiment("t", [source()], ["dt-pub"], EPS, 1, tuning)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the named private grid is too fine: not tested here
        runs = run_experiment(experiment, tmp_path, progress=False)
    records = read_records(runs)
    assert all(r.holder_epsilon == holder_epsilon for r in records)
    assert all(r.private_pipeline == private for r in records)
    assert all("public data only" in r.spend for r in records)
    if tuning.mode == "private":
        assert json.loads(records[0].privacy)["groups"] == {"validation": EPS[0]}
    write_report(runs, title="t")
    report = (runs.parent / "results.md").read_text()
    note = {"fixed": "fixed parameters", "oracle": "oracle, non-private tuning"}.get(
        tuning.mode, "private tuning"
    )
    assert f"DT-pub (public data only) ({note})" in report
    assert "non-private, public only" not in report
