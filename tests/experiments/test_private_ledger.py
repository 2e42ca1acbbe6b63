"""Private tuning charges training and validation holders to a ledger, recorded per cell."""

from __future__ import annotations

import json

import pytest
from exp_helpers import source

from ldptree.experiments import (
    Experiment,
    Grid,
    PrivateTuning,
    SyntheticSource,
    read_records,
    run_experiment,
)
from ldptree.experiments._methods import lpdt_max_edge
from ldptree.experiments._registry import MethodSpec


def test_disjoint_private_tuning_records_a_parallel_ledger(private_experiment, tmp_path):
    rows = read_records(run_experiment(private_experiment, tmp_path, progress=False))
    assert len(rows) == 2  # one selected model per repetition
    for row in rows:
        ledger = json.loads(row.privacy)
        # lpdt-quick has k = 2 grid points: two disjoint training groups + the validation group
        assert ledger["composition"] == "parallel" and ledger["budget"] == 2.0
        assert ledger["groups"] == {"training-0": 2.0, "training-1": 2.0, "validation": 2.0}
        assert ledger["holder_epsilon"] == row.holder_epsilon == 2.0
        assert row.private_pipeline


def test_shared_training_composes_sequentially(tmp_path):
    tuning = PrivateTuning({"lpdt-m": "lpdt-quick"}, training="shared")
    experiment = Experiment("t", [source()], ["lpdt-m"], (2.0,), 2, tuning)
    row = read_records(run_experiment(experiment, tmp_path, progress=False))[0]
    ledger = json.loads(row.privacy)
    # every training holder reports to both models: 2 x eps; validation holders pay eps once
    assert ledger["groups"] == {"training": 4.0, "validation": 2.0}
    assert row.holder_epsilon == ledger["holder_epsilon"] == 4.0 and not row.private_pipeline


def _overspending(*, epsilon: float, **kwargs: object):
    # a (deliberately wrong) method that spends twice the budget it is given
    return lpdt_max_edge(epsilon=2 * epsilon, **kwargs)  # type: ignore[arg-type]


def test_a_model_above_the_budget_is_refused(private_experiment, tmp_path):
    spec = MethodSpec("greedy", "regression", _overspending, "lpdt-quick", "greedy")
    registry = private_experiment.registry.with_method(spec)
    experiment = Experiment(
        "t",
        [source()],
        ["greedy"],
        (2.0,),
        2,
        PrivateTuning({"greedy": "lpdt-quick"}),
        registry=registry,
    )
    with pytest.raises(ValueError, match="above the budget"):
        run_experiment(experiment, tmp_path, progress=False)


def test_a_non_private_reference_is_recorded_as_infinite_spend(tmp_path):
    # DT trains on raw records: no training charge may pretend otherwise; only the validation
    # holders' noisy release is charged, and the cell's holder epsilon is inf
    tuning = PrivateTuning({"dt": Grid({"max_depth": (1, 2)})})
    experiment = Experiment("t", [source()], ["dt"], (2.0,), 1, tuning)
    row = read_records(run_experiment(experiment, tmp_path, progress=False))[0]
    ledger = json.loads(row.privacy)
    assert ledger["groups"] == {"validation": 2.0}
    assert row.holder_epsilon == float("inf") and not row.private_pipeline


def _binary(n, rng):
    X = rng.uniform(size=(n, 3))
    return X, (X[:, 0] > 0.5).astype(int)


def test_an_approximate_dp_method_is_recorded_with_its_delta(tmp_path):
    # PGLM releases (eps, delta): the epsilon cap holds and delta is recorded, not refused
    src = SyntheticSource(
        "binary", _binary, n_public=100, n_train=600, n_test=100, task="classification"
    )
    experiment = Experiment("t", [src], ["pglm"], (8.0,), 1, PrivateTuning({"pglm": "pglm"}))
    row = read_records(run_experiment(experiment, tmp_path, progress=False))[0]
    ledger = json.loads(row.privacy)
    assert ledger["holder_epsilon"] == row.holder_epsilon == 8.0
    assert 0.0 < ledger["holder_delta"] < 1e-4
