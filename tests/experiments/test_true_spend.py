"""Every row of runs.csv records the spend of the fitted models' own ledgers (``privacy_``), in
every tuning mode, and a model whose ledger exceeds the cell's budget is refused; a TOML file can
name a user's method and data generator by import path. Deterministic (fixed seeds)."""

from __future__ import annotations

import json

import pytest
from exp_helpers import DOUBLE_SPEND, HALF_SPEND, source

from ldptree.experiments import (
    DEFAULT_METHODS,
    Experiment,
    FixedParams,
    OracleTuning,
    PrivateTuning,
    load_config,
    read_records,
    run_experiment,
)

EPS = 2.0
REGISTRY = DEFAULT_METHODS.with_method(HALF_SPEND).with_method(DOUBLE_SPEND)
MODES = {
    "fixed": FixedParams({"max_depth": 2}),
    "oracle": OracleTuning({"half-spend": "lpdt-quick", "double-spend": "lpdt-quick"}),
    "private": PrivateTuning({"half-spend": "lpdt-quick", "double-spend": "lpdt-quick"}),
}


def _run(method, mode, tmp_path):
    experiment = Experiment("t", [source()], [method], (EPS,), 1, MODES[mode], registry=REGISTRY)
    return read_records(run_experiment(experiment, tmp_path, progress=False))


@pytest.mark.parametrize("mode", ["fixed", "oracle"])
def test_a_row_records_the_models_own_spend_not_the_nominal_epsilon(mode, tmp_path):
    rows = _run("half-spend", mode, tmp_path)
    fits = 1 if mode == "fixed" else 2  # lpdt-quick has 2 grid points, fitted on the same holders
    for row in rows:
        ledger = json.loads(row.privacy)
        assert row.holder_epsilon == ledger["holder_epsilon"] == fits * EPS / 2
        assert ledger["holder_delta"] == 0.0
        assert row.epsilon == EPS  # the cell's budget stays the grid coordinate
    assert all(not r.private_pipeline for r in rows) == (mode == "oracle")


@pytest.mark.filterwarnings("ignore:half-spend. private tuning:UserWarning")
def test_the_private_mode_records_the_models_own_spend(tmp_path):
    (row,) = _run("half-spend", "private", tmp_path)
    ledger = json.loads(row.privacy)
    # disjoint groups: the worst-off holder is a validation holder (eps), training groups eps/2
    assert ledger["groups"] == {"training-0": EPS / 2, "training-1": EPS / 2, "validation": EPS}


@pytest.mark.parametrize("mode", ["fixed", "oracle", "private"])
def test_a_model_whose_ledger_exceeds_the_cells_budget_is_refused(mode, tmp_path):
    with pytest.raises(ValueError, match="above the budget"):
        _run("double-spend", mode, tmp_path)
    assert read_records(tmp_path / "runs.csv") == []  # no row was written


def test_the_standard_methods_still_record_their_budget(tmp_path):
    experiment = Experiment("t", [source()], ["lpdt-m"], (EPS,), 1, MODES["fixed"])
    (row,) = read_records(run_experiment(experiment, tmp_path, progress=False))
    assert row.holder_epsilon == EPS and row.private_pipeline
    assert json.loads(row.privacy)["groups"] == {"training": EPS}


def _config(tmp_path, methods, synthetic="exp_helpers:uniform2", extra=""):
    path = tmp_path / "c.toml"
    path.write_text(
        f"name = 't'\nreps = 1\nepsilons = [{EPS}]\nmethods = {json.dumps(methods)}\n"
        f"[[sources]]\nsynthetic = '{synthetic}'\nsizes = [200, 600, 200]\n{extra}"
        "[tuning]\nmode = 'fixed'\nparams = { max_depth = 2 }\n"
    )
    return path


def test_toml_names_a_user_method_and_generator_by_import_path(tmp_path):
    path = _config(tmp_path, ["exp_helpers:HALF_SPEND", "ldptree:LPDTRegressor", "lpdt-m"])
    experiment, _ = load_config(path)
    assert experiment.methods == ("half-spend", "ldptree:LPDTRegressor", "lpdt-m")
    assert experiment.sources[0].name == "exp_helpers:uniform2"
    rows = {r.method: r for r in read_records(run_experiment(experiment, tmp_path, progress=False))}
    assert rows["half-spend"].holder_epsilon == EPS / 2
    assert rows["ldptree:LPDTRegressor"].holder_epsilon == EPS
    # the class is built as LPDTRegressor(epsilon=..., random_state=..., max_depth=2)
    assert json.loads(rows["ldptree:LPDTRegressor"].params) == {"max_depth": 2}


@pytest.mark.parametrize(
    ("method", "synthetic", "error", "match"),
    [
        ("exp_helpers:nothing_here", "exp_helpers:uniform2", ValueError, "no attribute"),
        ("no_such_module_x:Thing", "exp_helpers:uniform2", ValueError, "cannot import"),
        ("exp_helpers:EPS", "exp_helpers:uniform2", TypeError, "MethodSpec or an estimator"),
        ("exp_helpers:a:b", "exp_helpers:uniform2", ValueError, "package.module:Name"),
        ("lpdt-m", "exp_helpers:wrong_generator", TypeError, "pair"),
        ("lpdt-m", "exp_helpers:missing", ValueError, "no attribute"),
    ],
)
def test_bad_import_paths_are_refused_by_name(tmp_path, method, synthetic, error, match):
    with pytest.raises(error, match=match):
        load_config(_config(tmp_path, [method], synthetic))


def test_a_user_class_without_a_grid_is_refused_in_oracle_mode(tmp_path):
    experiment = Experiment(
        "t",
        [source()],
        ["ldptree:LPDTRegressor"],
        (EPS,),
        1,
        OracleTuning(),
        registry=load_config(_config(tmp_path, ["ldptree:LPDTRegressor"]))[0].registry,
    )
    with pytest.raises(ValueError, match="no default grid"):
        run_experiment(experiment, tmp_path / "out", progress=False)
