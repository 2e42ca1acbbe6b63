"""``ldptree run CONFIG.toml``: an experiment described in a TOML file.

Example (every key but ``sources`` and ``methods`` optional; paths relative to the file)::

    name = "red-wine-depth"
    seed = 0
    reps = 10
    epsilons = [2, 4, 8]
    methods = ["lpdt-m"]
    data_dir = "data"                    # else $LDPTREE_DATA
    out = "results/red-wine-depth"       # else --out

    [[sources]]                          # a manifest dataset, random public:train:test split
    dataset = "wine_quality_red"
    ratios = [1, 7, 2]

    [[sources]]                          # fixed public file, private file split train/test
    name = "diabetes"
    public = "diabetes_pub"
    private = "diabetes_pri"
    test_fraction = 0.2

    [[sources]]                          # synthetic: "lpdt-uniform" (needs d) or "lpdt-figure1"
    synthetic = "lpdt-uniform"
    d = 1
    sizes = [2000, 6000, 2000]           # public, train, test

    [[sources]]                          # a user's generator(n, rng) -> (X, y) by import path
    synthetic = "mypackage.data:make_rows"
    task = "regression"                  # or "classification"

A method may also be named by import path, ``"mypackage.methods:MyRegressor"``: a
:class:`~ldptree.experiments.MethodSpec`, or an estimator class (:mod:`._imports`); its grid goes
in ``tuning.grids`` under the same string.

    [tuning]
    mode = "oracle"                      # "oracle", "private" or "fixed"
    grid = "lpdt-depth"                  # a preset for every method, or per method:
    # grids = { lpdt-m = { max_depth = [2, 4], min_samples_leaf = [10] } }
    # validation_fraction = 0.2; training = "disjoint"     (private mode)
    # params = { max_depth = 3 }                           (fixed mode)

Unknown keys are errors (a typo must not silently change an experiment). Every key is described
in the documentation page "Experiment configuration" (``docs/configuration.md``).
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import check_epsilon, check_int
from ldptree.datasets import load_dataset, lpdt_figure1, lpdt_uniform
from ldptree.datasets._manifest import TASKS
from ldptree.experiments._grids import Grid
from ldptree.experiments._imports import is_import_path, user_generator, user_method
from ldptree.experiments._methods import DEFAULT_METHODS
from ldptree.experiments._runner import Experiment
from ldptree.experiments._splits import (
    DataSource,
    GivenPublicSplit,
    RandomSplit,
    SyntheticSource,
)
from ldptree.experiments._tuning import FixedParams, OracleTuning, PrivateTuning, Tuning

_TOP = {"name", "seed", "reps", "epsilons", "methods", "data_dir", "out", "sources", "tuning"}
#: The ``[tuning]`` keys each mode reads (a key of another mode is an error, never ignored).
_TUNING = {
    "oracle": {"mode", "grid", "grids"},
    "private": {"mode", "grid", "grids", "validation_fraction", "training"},
    "fixed": {"mode", "params"},
}


def _uniform(n: int, rng: np.random.Generator, *, d: int) -> tuple[FloatArray, FloatArray]:
    return lpdt_uniform(n, d, rng)


def _figure1(n: int, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    return lpdt_figure1(n, rng)


def _check_keys(
    table: dict[str, Any], allowed: set[str], where: str, known: set[str] | None = None
) -> None:
    """Refuse keys outside ``allowed``, naming them: "unknown" unless they are in ``known``
    (keys of another variant, which this one would ignore: "does not apply")."""
    extra = sorted(set(table) - allowed)
    if not extra:
        return
    inapplicable = [k for k in extra if known is not None and k in known]
    if inapplicable:
        raise ValueError(
            f"{where}: key(s) {inapplicable} do not apply here (they would be ignored); "
            f"allowed: {sorted(allowed)}"
        )
    raise ValueError(f"{where}: unknown key(s) {extra}; allowed: {sorted(allowed)}")


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a string, got {value!r}")
    return value


def _list(value: Any, where: str, item: Callable[[Any, str], Any]) -> list[Any]:
    """A TOML array (never a string, which would be iterated letter by letter), item by item."""
    if not isinstance(value, list):
        raise TypeError(f"{where} must be an array [...], got {value!r}")
    return [item(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _count(minimum: int) -> Callable[[Any, str], int]:
    def check(value: Any, where: str) -> int:
        return check_int(value, where, minimum=minimum)

    return check


def _source(table: Any, index: int, data_dir: Path | None) -> DataSource:
    where = f"sources[{index}]"
    if not isinstance(table, dict):
        raise TypeError(f"{where} must be a table ([[sources]]), got {table!r}")
    if "dataset" in table:
        _check_keys(table, {"dataset", "ratios", "target"}, where)
        data = load_dataset(table["dataset"], data_dir, target=table.get("target"))
        return RandomSplit(data, table.get("ratios", (1, 7, 2)))
    if "public" in table:
        _check_keys(table, {"name", "public", "private", "test_fraction"}, where)
        return GivenPublicSplit(
            name=table.get("name", f"{table['public']}+{table['private']}"),
            public=load_dataset(table["public"], data_dir),
            private=load_dataset(table["private"], data_dir),
            test_fraction=table.get("test_fraction", 0.2),
        )
    if "synthetic" in table:
        kind = _string(table["synthetic"], f"{where}.synthetic")
        user = is_import_path(kind)
        keys = {"synthetic", "name", "sizes"} | ({"d"} if kind == "lpdt-uniform" else set())
        keys |= {"task"} if user else set()
        _check_keys(table, keys, f"{where} (synthetic = {kind!r})", {"d", "task"})
        task = "regression"
        if user:  # a user's generator(n, rng) -> (X, y)
            generator: Any = user_generator(kind, f"{where}.synthetic")
            task = _string(table.get("task", task), f"{where}.task")
            if task not in TASKS:
                raise ValueError(f"{where}.task must be one of {TASKS}, got {task!r}")
        elif kind == "lpdt-uniform":
            d = check_int(table.get("d", 1), f"{where}.d", minimum=1)
            generator = functools.partial(_uniform, d=d)
        elif kind == "lpdt-figure1":
            generator = _figure1
        else:
            raise ValueError(
                f"{where}.synthetic must be 'lpdt-uniform', 'lpdt-figure1' or a generator's "
                f"import path 'package.module:Name', got {kind!r}"
            )
        sizes = _list(table.get("sizes", [2000, 6000, 2000]), f"{where}.sizes", _count(1))
        if len(sizes) != 3:
            raise ValueError(f"{where}.sizes must be [public, train, test]")
        name = _string(table.get("name", kind), f"{where}.name")
        n_public, n_train, n_test = sizes
        return SyntheticSource(name, generator, n_public, n_train, n_test, task=task)
    raise ValueError(f"{where} needs one of the keys 'dataset', 'public' or 'synthetic'")


def _grid_choice(value: Any, where: str) -> str | Grid:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return Grid(value)
    raise TypeError(f"{where} must be a preset name or a table of parameter lists")


def _tuning(table: Any, methods: list[str]) -> Tuning:
    if not isinstance(table, dict) or not isinstance(table.get("grids", {}), dict):
        raise TypeError(f"tuning (and tuning.grids) must be a table, got {table!r}")
    mode = table.get("mode", "oracle")
    if not isinstance(mode, str) or mode not in _TUNING:
        raise ValueError(f"tuning.mode must be 'oracle', 'private' or 'fixed', got {mode!r}")
    _check_keys(table, _TUNING[mode], f"tuning (mode = {mode!r})", set().union(*_TUNING.values()))
    grids: dict[str, str | Grid] = {}
    if "grid" in table:
        grids = {m: _grid_choice(table["grid"], "tuning.grid") for m in methods}
    for method, value in table.get("grids", {}).items():
        grids[method] = _grid_choice(value, f"tuning.grids.{method}")
    if mode == "oracle":
        return OracleTuning(grids)
    if mode == "private":
        return PrivateTuning(
            grids,
            validation_fraction=table.get("validation_fraction", 0.2),
            training=table.get("training", "disjoint"),
        )
    return FixedParams(table.get("params", {}))


def load_config(path: str | Path, *, quick: bool = False) -> tuple[Experiment, Path | None]:
    """The experiment of a TOML file and its ``out`` folder (if given); ``quick`` keeps 2
    repetitions and the first epsilon."""
    file = Path(path)
    try:
        config = tomllib.loads(file.read_text(encoding="utf-8-sig"))  # a BOM is no TOML key
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{file} is not valid TOML (UTF-8): {err}") from None
    _check_keys(config, _TOP, str(file))
    for key in ("sources", "methods"):
        if not config.get(key):
            raise ValueError(f"{file}: '{key}' is required and must not be empty")
    base = file.parent
    where = str(file)
    data_dir = (
        base / _string(config["data_dir"], f"{where}: data_dir") if "data_dir" in config else None
    )
    methods = _list(config["methods"], f"{where}: methods", _string)
    registry = DEFAULT_METHODS
    for i, method in enumerate(methods):
        if is_import_path(method):  # a user's method, registered under its own name
            spec = user_method(method, f"{where}: methods[{i}]")
            registry = registry.with_method(spec, replace=spec.name in registry.names())
            methods[i] = spec.name
    epsilons = _list(config.get("epsilons", [1.0]), f"{where}: epsilons", check_epsilon)
    reps = check_int(config.get("reps", 10), f"{where}: reps", minimum=1)
    seed = check_int(config.get("seed", 0), f"{where}: seed", minimum=0)
    sources = _list(config["sources"], f"{where}: sources", lambda v, _: v)
    if quick:
        epsilons, reps = epsilons[:1], min(reps, 2)
    experiment = Experiment(
        name=_string(config.get("name", file.stem), f"{where}: name"),
        sources=[_source(s, i, data_dir) for i, s in enumerate(sources)],
        methods=methods,
        epsilons=epsilons,
        reps=reps,
        tuning=_tuning(config.get("tuning", {}), methods),
        seed=seed,
        registry=registry,
    )
    out = base / _string(config["out"], f"{where}: out") if "out" in config else None
    return experiment, out
