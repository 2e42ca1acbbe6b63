"""The two-round design is a registered runner method: it runs in the runner's fixed and oracle
modes and its rows record each holder's spend from its own ledger (epsilon per fit: each holder
answers one of the two rounds)."""

from __future__ import annotations

import pytest
from exp_helpers import EPS, source

from ldptree.ensembles import LPCTTwoRoundClassifier, LPDTTwoRoundRegressor
from ldptree.experiments import (
    DEFAULT_METHODS,
    Experiment,
    FixedParams,
    OracleTuning,
    read_records,
    run_experiment,
)


def test_method_builds_the_estimator_with_tree_parameters() -> None:
    model = DEFAULT_METHODS.get("lpdt-two-round").build(
        2.0, {"max_depth": 3, "min_snr": 0.5, "extra_depth": 1}, 0
    )
    assert isinstance(model, LPDTTwoRoundRegressor)
    assert (model.estimator.max_depth, model.min_snr, model.extra_depth) == (3, 0.5, 1)
    assert model.epsilon == 2.0


@pytest.mark.parametrize("mode", ["fixed", "oracle"])
def test_runs_in_the_runner_and_records_epsilon(mode: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    methods = ["lpdt-m", "lpdt-two-round"]
    if mode == "fixed":
        tuning = FixedParams({"max_depth": 2})
    else:
        tuning = OracleTuning({m: "lpdt-quick" for m in methods})
    experiment = Experiment("t", [source()], methods, EPS, 1, tuning)
    records = read_records(run_experiment(experiment, tmp_path, progress=False))
    assert {r.method for r in records} == set(methods)
    spends = {m: {r.holder_epsilon for r in records if r.method == m} for m in methods}
    assert spends["lpdt-two-round"] == spends["lpdt-m"]
    assert spends["lpdt-m"] == ({EPS[0]} if mode == "fixed" else {2 * EPS[0]})
    assert all(r.value == r.value for r in records)  # numbers, not NaN


def test_classifier_method_builds_the_estimator() -> None:
    model = DEFAULT_METHODS.get("lpct-two-round").build(1.0, {"lam": 0.5, "refine_parts": 3}, 1)
    assert isinstance(model, LPCTTwoRoundClassifier)
    assert (model.estimator.lam, model.refine_parts, model.epsilon) == (0.5, 3, 1.0)
