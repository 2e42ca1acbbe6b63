"""The protocol runner: determinism, resume, tuning records."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest
from exp_helpers import EPS, source

from ldptree._locks import lock_folder, unlock_folder
from ldptree.estimators import LPDTRegressor
from ldptree.experiments import (
    DEFAULT_METHODS,
    Experiment,
    FixedParams,
    Grid,
    OracleTuning,
    read_records,
    run_experiment,
)
from ldptree.experiments._registry import MethodSpec
from ldptree.experiments._seeds import derive_rng


def _rows_without_time(path):
    with path.open() as handle:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(handle)]


def test_same_seed_same_csv_and_another_seed_differs(oracle_experiment, tmp_path):
    a = run_experiment(oracle_experiment, tmp_path / "a", progress=False)
    b = run_experiment(oracle_experiment, tmp_path / "b", progress=False)
    c = run_experiment(attrs.evolve(oracle_experiment, seed=1), tmp_path / "c", progress=False)
    rows_a = _rows_without_time(a)
    assert len(rows_a) == 2 * 2  # 2 reps x 2 grid points
    assert rows_a == _rows_without_time(b)
    values = [r["value"] for r in rows_a]
    assert values != [r["value"] for r in _rows_without_time(c)]
    assert all(r["private_pipeline"] == "False" and r["tuning"] == "oracle" for r in rows_a)
    assert all("NON-PRIVATE" in r["spend"] and float(r["holder_epsilon"]) == 4.0 for r in rows_a)


def test_resume_skips_finished_cells_and_drops_a_partial_one(oracle_experiment, tmp_path):
    seen: list[str] = []
    path = run_experiment(oracle_experiment, tmp_path, progress=seen.append)
    assert len(seen) == 2
    first = path.read_text()
    seen.clear()
    run_experiment(oracle_experiment, tmp_path, progress=seen.append)
    assert seen == [] and path.read_text() == first
    # an interrupted run: the last cell lost one of its two rows, the other is cut mid-line
    lines = first.splitlines(keepends=True)
    path.write_text("".join(lines[:-2]) + lines[-2][:40])
    run_experiment(attrs.evolve(oracle_experiment, reps=3), tmp_path, progress=seen.append)
    assert seen == ["sine rep 1 (1 cells, oracle)", "sine rep 2 (1 cells, oracle)"]
    records = read_records(path)
    assert sorted((r.rep, r.grid_index) for r in records) == [
        (i, j) for i in range(3) for j in (0, 1)
    ]
    # the re-run cell has the same numbers as the uninterrupted run
    reference = read_records(run_experiment(oracle_experiment, tmp_path / "ref", progress=False))
    redo = {(r.rep, r.grid_index): r.value for r in records}
    assert all(redo[(r.rep, r.grid_index)] == r.value for r in reference)


def test_changed_protocol_refuses_to_resume(oracle_experiment, tmp_path):
    run_experiment(oracle_experiment, tmp_path, progress=False)
    changed = attrs.evolve(
        oracle_experiment, tuning=OracleTuning({"lpdt-m": Grid({"max_depth": [1, 2]})})
    )
    with pytest.raises(ValueError, match="different protocol"):
        run_experiment(changed, tmp_path, progress=False)


def test_private_tuning_records_its_spend(private_experiment, tmp_path):
    records = read_records(run_experiment(private_experiment, tmp_path, progress=False))
    assert len(records) == 2  # one selected model per repetition
    for r in records:
        assert r.tuning == "private" and r.selected and r.private_pipeline
        assert r.holder_epsilon == EPS[0]
        assert r.n_validation == 180  # 20% of 900 training holders
        assert r.n_train == 360  # the rest, split between the 2 grid points
        assert r.validation_score is not None and np.isfinite(r.validation_score)
        assert "parallel composition" in r.spend and "k = 2" in r.spend
        assert r.param_dict in (
            {"budget_split": 0.5, "max_depth": d, "min_samples_leaf": 10} for d in (2, 3)
        )


def test_shared_training_is_charged_k_times(private_experiment, tmp_path):
    shared = attrs.evolve(
        private_experiment, tuning=attrs.evolve(private_experiment.tuning, training="shared")
    )
    (r, *_) = read_records(run_experiment(shared, tmp_path, progress=False))
    assert r.holder_epsilon == 2 * EPS[0] and not r.private_pipeline and r.n_train == 720


def test_fixed_parameters_fit_once(tmp_path):
    experiment = Experiment("t", [source()], ["lpdt-m"], EPS, 2, FixedParams({"max_depth": 2}))
    records = read_records(run_experiment(experiment, tmp_path, progress=False))
    assert [r.params for r in records] == ['{"max_depth": 2}'] * 2
    assert all(r.private_pipeline and r.holder_epsilon == EPS[0] for r in records)


@pytest.mark.parametrize("rule", ["max_edge", "cart"])
def test_memoised_partition_gives_the_plain_estimators_result(rule):
    from ldptree import LPDTRegressor
    from ldptree.experiments._methods import lpdt_cart, lpdt_max_edge

    memoised = {"max_edge": lpdt_max_edge, "cart": lpdt_cart}[rule]
    split = source().draw(np.random.default_rng(3))
    kwargs = {"max_depth": 3, "min_samples_leaf": 10, "readout": "ratio", "mechanism": "paper"}
    for rho in (0.3, 0.7):  # the second rho is served from the cache
        preds = []
        for model in (
            LPDTRegressor(epsilon=2.0, random_state=7, rule=rule, budget_split=rho, **kwargs),
            memoised(epsilon=2.0, random_state=7, budget_split=rho, **kwargs),
            memoised(epsilon=2.0, random_state=7, budget_split=rho, **kwargs),
        ):
            model.fit(
                split.X_train, split.y_train, X_public=split.X_public, y_public=split.y_public
            )
            preds.append(model.predict(split.X_test))
        np.testing.assert_array_equal(preds[0], preds[1])
        np.testing.assert_array_equal(preds[0], preds[2])
        assert model.partition_.n_leaves > 1


def test_unavailable_method_is_refused_before_any_work(tmp_path):
    later = MethodSpec(
        "later", "regression", LPDTRegressor, "lpdt-quick", "Later", requires=lambda: "not yet"
    )
    registry = DEFAULT_METHODS.with_method(later)
    experiment = Experiment("t", [source()], ["later"], EPS, 2, FixedParams({}), registry=registry)
    with pytest.raises(NotImplementedError, match="not yet"):
        run_experiment(experiment, tmp_path, progress=False)
    assert not (tmp_path / "runs.csv").exists()


def test_lpdt_v_is_available():
    DEFAULT_METHODS.get("lpdt-v").check_available()


def test_experiment_checks_its_arguments():
    with pytest.raises(ValueError, match="not registered"):
        Experiment("t", [source()], ["nope"], EPS, 2, FixedParams({}))
    with pytest.raises(ValueError, match="epsilons"):
        Experiment("t", [source()], ["lpdt-m"], [0.0], 2, FixedParams({}))
    with pytest.raises(ValueError, match="reps"):
        Experiment("t", [source()], ["lpdt-m"], EPS, 0, FixedParams({}))
    with pytest.raises(ValueError, match="repeat a name"):
        Experiment("t", [source(), source()], ["lpdt-m"], EPS, 1, FixedParams({}))
    assert "lpdt-m" in DEFAULT_METHODS.names()


def test_a_folder_in_use_is_refused(oracle_experiment, tmp_path):
    held = lock_folder(tmp_path, "held by this test")  # as a run in progress holds it
    try:
        with pytest.raises(ValueError, match="in use by another run") as info:
            run_experiment(oracle_experiment, tmp_path, progress=False)
        assert "delete" not in str(info.value)
        assert not (tmp_path / "runs.csv").exists()
    finally:
        unlock_folder(held)


@pytest.mark.slow
def test_a_killed_run_never_blocks_the_next(oracle_experiment, tmp_path):
    """A run killed with SIGKILL while it holds the folder: the next run starts at once, with
    no manual step (and a lock file left by an earlier version of the runner is ignored)."""
    code = (
        "import sys, time; from pathlib import Path; from ldptree._locks import lock_folder; "
        "lock_folder(Path(sys.argv[1]), 'busy'); print('held', flush=True); time.sleep(600)"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    run = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert run.stdout.readline().strip() == "held"
    with pytest.raises(ValueError, match="in use by another run"):
        run_experiment(oracle_experiment, tmp_path, progress=False)
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=60)
    run.stdout.close()
    (tmp_path / "runs.csv.lock").touch()
    assert run_experiment(oracle_experiment, tmp_path, progress=False).exists()


class PublicMean:
    """A stand-in estimator (the public label mean) to register by name."""

    def __init__(self, *, epsilon, random_state, shrink=1.0):
        self.epsilon, self.random_state, self.shrink = epsilon, random_state, shrink

    def fit(self, X, y, *, X_public=None, y_public=None):
        self.value_ = self.shrink * float(np.mean(y_public))
        return self

    def predict(self, X):
        return np.full(len(X), self.value_)


def test_a_new_method_registers_by_name(tmp_path):
    from ldptree.experiments import MethodSpec

    spec = MethodSpec("public-mean", "regression", PublicMean, "lpdt-quick", "PM", private=False)
    registry = DEFAULT_METHODS.with_method(spec)
    with pytest.raises(ValueError, match="already registered"):
        registry.with_method(spec)
    grid = Grid({"shrink": [0.0, 1.0]})
    experiment = Experiment(
        "t",
        [source()],
        ["public-mean"],
        EPS,
        2,
        OracleTuning({"public-mean": grid}),
        registry=registry,
    )
    records = read_records(run_experiment(experiment, tmp_path, progress=False))
    by_shrink = {(r.rep, r.param_dict["shrink"]): r.value for r in records}
    for rep in range(2):
        # the documented split derivation: derive_seed(seed, "split", source name, rep)
        split = source().draw(derive_rng(0, "split", "sine", rep))
        assert by_shrink[(rep, 0.0)] == pytest.approx(np.mean(split.y_test**2))
        expected = np.mean((split.y_test - split.y_public.mean()) ** 2)
        assert by_shrink[(rep, 1.0)] == pytest.approx(expected)
    assert all(r.method == "public-mean" and not r.private_pipeline for r in records)


@pytest.mark.slow
def test_worker_processes_give_the_same_rows(tmp_path):
    experiment = Experiment(
        "t", [source("s1"), source("s2")], ["lpdt-m"], EPS, 1, FixedParams({"max_depth": 2})
    )
    one = run_experiment(experiment, tmp_path / "one", progress=False)
    two = run_experiment(experiment, tmp_path / "two", progress=False, jobs=2)
    key = lambda row: (row["dataset"], row["rep"])  # noqa: E731
    assert sorted(_rows_without_time(one), key=key) == sorted(_rows_without_time(two), key=key)


@pytest.mark.slow
def test_oracle_grid_fitted_together_gives_the_point_by_point_rows(tmp_path, monkeypatch):
    """The oracle fits a cell's grid with fit_many (rounds batched); the rows are those of
    fitting grid point by grid point, value for value."""
    from ldptree.experiments import _tuning

    grid = Grid({"max_depth": (1, 2), "min_samples_leaf": (5,), "budget_split": (0.3, 0.5, 0.7)})
    experiment = Experiment(
        "t",
        [source()],
        ["lpdt-m", "lpdt-v"],
        (2.0, 6.0),
        2,
        OracleTuning({"lpdt-m": grid, "lpdt-v": grid}),
    )
    together = _rows_without_time(run_experiment(experiment, tmp_path / "a", progress=False))
    monkeypatch.setattr(_tuning, "_fit_grid", lambda cell, points: None)
    alone = _rows_without_time(run_experiment(experiment, tmp_path / "b", progress=False))
    assert len(together) == 2 * 2 * 2 * 6  # methods x epsilons x repetitions x grid points
    assert together == alone
