"""The protocol runner: every (data source, repetition, method, epsilon) cell of an experiment.

For repetition ``r`` of source ``D`` the split is drawn from ``derive_seed(seed, "split", D, r)``
(the same for every method, epsilon and tuning mode, so results are paired for Wilcoxon tests),
missing features are imputed from public rows, and each cell derives its fit and validation
seeds from ``(seed, D, r, method, epsilon, tuning, ...)``: independent across cells, identical
across runs. Rows are appended to ``<out>/runs.csv`` cell by cell; a re-run skips completed cells
(:mod:`._records`). The runner itself never scales features (the estimators fit the public
min-max box) and never touches private rows except through the estimators' mechanisms and the
validation holders' noisy release.

Every cell of a repetition releases from the same private holders (with independent noise), so
the run simulates a separate population per cell; the report states this and gives each split's
per-holder epsilon summed over its cells (:mod:`._holders`).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import attrs

from ldptree._locks import lock_folder, unlock_folder
from ldptree._validation import NotApplicableError, check_int, check_positive
from ldptree._warnings import warn_user
from ldptree.experiments._methods import DEFAULT_METHODS
from ldptree.experiments._metrics import METRICS
from ldptree.experiments._progress import ProgressLine, compile_note
from ldptree.experiments._records import CellKey, RunRecord, load_completed, write_records
from ldptree.experiments._registry import MethodRegistry, MethodSpec
from ldptree.experiments._seeds import derive_rng, derive_seed
from ldptree.experiments._splits import DataSource, Split, impute_from_public
from ldptree.experiments._tuning import Cell, Tuning

RESULTS_FILE = "runs.csv"


def _epsilons(value: Any) -> tuple[float, ...]:
    out = tuple(check_positive(e, "epsilons") for e in value)
    if not out:
        raise ValueError("epsilons must not be empty")
    return out


def _sources(value: Iterable[DataSource]) -> tuple[DataSource, ...]:
    return tuple(value)


def _methods(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _to_reps(value: Any) -> int:
    return check_int(value, "reps", minimum=1)


def _to_seed(value: Any) -> int:
    return check_int(value, "seed", minimum=0)


def _non_empty(_: object, attribute: attrs.Attribute[Any], value: tuple[Any, ...]) -> None:
    if not value:
        raise ValueError(f"{attribute.name} must not be empty")


@attrs.frozen(eq=False)
class Experiment:
    """What to run: sources x methods x epsilons x repetitions under one tuning mode."""

    name: str
    sources: tuple[DataSource, ...] = attrs.field(converter=_sources, validator=_non_empty)
    methods: tuple[str, ...] = attrs.field(converter=_methods, validator=_non_empty)
    epsilons: tuple[float, ...] = attrs.field(converter=_epsilons)
    reps: int = attrs.field(converter=_to_reps)
    tuning: Tuning
    seed: int = attrs.field(default=0, converter=_to_seed)
    registry: MethodRegistry = DEFAULT_METHODS

    def __attrs_post_init__(self) -> None:
        names = [s.name for s in self.sources]
        if len(set(names)) != len(names):
            raise ValueError(f"sources repeat a name: {names}")
        for method in self.methods:
            spec = self.registry.get(method)
            for source in self.sources:
                if source.task != spec.task:
                    raise ValueError(
                        f"method {method!r} is for {spec.task} but source {source.name!r} is "
                        f"{source.task}"
                    )

    def fingerprint(self, spec: MethodSpec, source: DataSource, n_private: int) -> str:
        blob = json.dumps(
            {
                "seed": self.seed,
                "source": source.describe(),
                "tuning": self.tuning.describe(spec, n_private),
                "method": spec.describe(),
            },
            sort_keys=True,
            default=repr,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _split(experiment: Experiment, source: DataSource, rep: int) -> Split:
    return impute_from_public(source.draw(derive_rng(experiment.seed, "split", source.name, rep)))


def _run_cell(
    experiment: Experiment,
    source: DataSource,
    rep: int,
    split: Split,
    spec: MethodSpec,
    eps: float,
    fingerprint: str,
) -> list[RunRecord]:
    tuning = experiment.tuning
    cell_key: CellKey = (spec.name, source.name, eps, rep, tuning.mode)
    metric = METRICS[source.task]

    def seed(*labels: object) -> int:
        return derive_seed(experiment.seed, *cell_key, *labels)

    try:
        outcomes = tuning.run(Cell(spec=spec, split=split, epsilon=eps, metric=metric, seed=seed))
    except NotApplicableError as error:
        # the papers' "-": the method refuses this dataset by design; no rows, tables leave the
        # entry empty, and a resumed run asks again (the refusal is immediate)
        print(
            f"not applicable: {spec.name} on {source.name} (eps={eps:g}, rep {rep}): {error}",
            file=sys.stderr,
        )
        return []
    n_public, _, n_test = split.sizes
    return [
        RunRecord(
            experiment=experiment.name,
            dataset=source.name,
            task=source.task,
            method=spec.name,
            tuning=tuning.mode,
            epsilon=eps,
            rep=rep,
            grid_index=o.grid_index,
            params=json.dumps(o.params, sort_keys=True),
            metric=metric.name,
            value=o.value,
            selected=o.selected,
            validation_score=o.validation_score,
            seconds=o.seconds,
            n_public=n_public,
            n_train=o.n_train,
            n_validation=o.n_validation,
            n_test=n_test,
            holder_epsilon=o.holder_epsilon,
            private_pipeline=o.private_pipeline,
            spend=o.spend,
            fingerprint=fingerprint,
            cell_rows=len(outcomes),
            privacy=o.privacy,
            guards=o.guards,
        )
        for o in outcomes
    ]


_Job = tuple[int, int, tuple[tuple[str, float], ...]]  # source index, rep, (method, eps) cells


def _run_group(
    experiment: Experiment, job: _Job, fingerprints: dict[tuple[str, str, str], str]
) -> list[list[RunRecord]]:
    """All cells of one (source, repetition): one split, drawn once."""
    source_index, rep, cells = job
    source = experiment.sources[source_index]
    split = _split(experiment, source, rep)
    mode = experiment.tuning.mode
    return [
        _run_cell(
            experiment,
            source,
            rep,
            split,
            experiment.registry.get(method),
            eps,
            fingerprints[(method, source.name, mode)],
        )
        for method, eps in cells
    ]


def run_experiment(
    experiment: Experiment,
    out: str | os.PathLike[str],
    *,
    progress: bool | Callable[[str], None] = True,
    jobs: int = 1,
    executor: Executor | None = None,
) -> Path:
    """Run every missing cell of ``experiment`` into ``<out>/runs.csv`` and return that path.

    ``progress``: ``True`` for a stderr progress line, ``False`` for silence, or a callable that
    receives one line per finished (source, repetition); unless silent, stderr also gets a line
    before the first fit (it compiles the kernels) and one note per method whose configuration
    turns a protective setting off (:mod:`._guards`). ``jobs > 1`` runs (source, repetition)
    groups in that many worker processes; the rows are the same, their order in the file may
    differ. ``executor``: run the groups on this :class:`concurrent.futures.Executor` instead
    (e.g. a Dask cluster's, ``client.get_executor()``; ``jobs`` is then ignored); the rows are
    still written here, group by group, so the run resumes as usual. One run at a time per
    folder: a concurrent run fails (an exclusive ``flock`` on the folder, which the operating
    system releases when the run ends, however it ends: a killed run never blocks the next).
    """
    jobs = check_int(jobs, "jobs", minimum=1)
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError(
            f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}"
        )
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    lock = lock_folder(folder, f"{folder} is in use by another run; wait for it to end")
    try:
        return _run_locked(experiment, folder / RESULTS_FILE, progress, jobs, executor)
    finally:
        unlock_folder(lock)


def _warn_selection(
    experiment: Experiment, specs: list[MethodSpec], shapes: dict[str, tuple[int, ...]]
) -> None:
    """One warning per method whose named grid is too fine for its holders (private tuning:
    ``selection_warning``), before any fit: the first affected cell's sizes and how many of the
    method's (source, epsilon) cells share the problem."""
    check = getattr(experiment.tuning, "selection_warning", None)
    if check is None:
        return
    for spec in specs:
        found = [
            message
            for source in experiment.sources
            for eps in experiment.epsilons
            if (message := check(spec, *shapes[source.name], eps)) is not None
        ]
        if found:
            cells = len(experiment.sources) * len(experiment.epsilons)
            warn_user(f"{spec.name}: {found[0]} ({len(found)} of its {cells} cells are affected)")


def _run_locked(
    experiment: Experiment,
    path: Path,
    progress: bool | Callable[[str], None],
    jobs: int,
    executor: Executor | None,
) -> Path:
    specs = [experiment.registry.get(m) for m in experiment.methods]
    for spec in specs:
        spec.check_available()
    mode = experiment.tuning.mode
    shapes = {s.name: _split(experiment, s, 0).X_train.shape for s in experiment.sources}
    n_private = {name: shape[0] for name, shape in shapes.items()}
    fingerprints = {
        (spec.name, source.name, mode): experiment.fingerprint(spec, source, n_private[source.name])
        for spec in specs
        for source in experiment.sources
    }
    done = load_completed(path, fingerprints)
    todo: list[_Job] = []
    for rep in range(experiment.reps):  # repetition-major: an interrupted run covers every source
        for index, source in enumerate(experiment.sources):
            cells = tuple(
                (spec.name, eps)
                for spec in specs
                for eps in experiment.epsilons
                if (spec.name, source.name, eps, rep, mode) not in done
            )
            if cells:
                todo.append((index, rep, cells))
    if not todo:
        if progress is True:
            print(f"nothing to do: every cell is already in {path}", file=sys.stderr)
        return path
    _warn_selection(experiment, specs, shapes)
    line = ProgressLine(total=len(todo)) if progress is True else None

    def say(text: str) -> None:  # notes go to stderr unless the run is silent
        if progress is not False:
            print(text, file=sys.stderr)

    say(compile_note())
    noted: set[tuple[str, str]] = set()

    def finish(job: _Job, results: list[list[RunRecord]]) -> None:
        records = [r for cell in results for r in cell]
        write_records(path, records, append=True)
        for method, guards in sorted({(r.method, r.guards) for r in records if r.guards}):
            if (method, guards) not in noted:  # once per method and setting in a run
                noted.add((method, guards))
                say(
                    f"note: {method} runs with the {guards}; runs.csv marks those rows (column "
                    "guards) and the results table flags the column"
                )
        label = f"{experiment.sources[job[0]].name} rep {job[1]} ({len(job[2])} cells, {mode})"
        if line is not None:
            line.step(label)
        elif callable(progress):
            progress(label)

    def fan_out(pool: Executor) -> None:
        futures = {pool.submit(_run_group, experiment, job, fingerprints): job for job in todo}
        for future in as_completed(futures):
            finish(futures[future], future.result())

    if executor is not None:
        fan_out(executor)
    elif jobs == 1:
        for job in todo:
            finish(job, _run_group(experiment, job, fingerprints))
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            fan_out(pool)
    return path
