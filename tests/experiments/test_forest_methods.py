"""The forests are registered runner methods: they run in the runner's fixed and oracle modes
and their rows record each holder's spend, epsilon (split and sequential alike)."""

from __future__ import annotations

import pytest
from exp_helpers import EPS, source

from ldptree.ensembles import LPCTForestClassifier, LPDTForestRegressor
from ldptree.experiments import (
    DEFAULT_METHODS,
    Experiment,
    FixedParams,
    OracleTuning,
    read_records,
    run_experiment,
)


def test_forest_methods_build_forests_with_tree_parameters() -> None:
    forest = DEFAULT_METHODS.get("lpdt-forest-seq").build(2.0, {"max_depth": 3, "n_trees": 4}, 0)
    assert isinstance(forest, LPDTForestRegressor)
    assert (forest.composition, forest.n_trees, forest.estimator.max_depth) == ("sequential", 4, 3)
    classifier = DEFAULT_METHODS.get("lpct-forest").build(1.0, {"lam": 0.5}, 1)
    assert isinstance(classifier, LPCTForestClassifier) and classifier.estimator.lam == 0.5
    assert classifier.composition == "split" and classifier.epsilon == 1.0


@pytest.mark.parametrize("mode", ["fixed", "oracle"])
@pytest.mark.slow
def test_forests_run_in_the_runner_and_record_epsilon(mode: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    methods = ["lpdt-m", "lpdt-forest", "lpdt-forest-seq"]
    if mode == "fixed":
        tuning = FixedParams({"max_depth": 2})
    else:
        tuning = OracleTuning({m: "lpdt-quick" for m in methods})
    experiment = Experiment("t", [source()], methods, EPS, 1, tuning)
    records = read_records(run_experiment(experiment, tmp_path, progress=False))
    assert {r.method for r in records} == set(methods)
    # a holder's spend is a single tree's: epsilon per fit (times the grid size under oracle)
    spends = {m: {r.holder_epsilon for r in records if r.method == m} for m in methods}
    assert spends["lpdt-forest"] == spends["lpdt-forest-seq"] == spends["lpdt-m"]
    assert spends["lpdt-m"] == ({EPS[0]} if mode == "fixed" else {2 * EPS[0]})
    assert all(r.value == r.value for r in records)  # numbers, not NaN
