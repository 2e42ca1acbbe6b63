"""``ldptree reproduce lpdt-table``: the LPDT paper's real-data protocol (Table 2/5).

Each regression dataset of the manifest is split ``public : train : test = 1 : 7 : 2`` at random
in every repetition; LPDT-M and LPDT-V are fitted for each
epsilon and tuned either by the papers' *oracle* (grid ``lpdt-real``, 132 points, best mean test
MSE; not private) or by *private* validation (the default private grid of
:mod:`._private_grid`: its size from ``n`` and epsilon, depths from the LPDT paper's rate, the
guarded read-out; earlier tables used the 3-point grid ``lpdt-private``). ``quick`` uses
3 repetitions, epsilon 2, (unless datasets are named) the two smallest regression datasets and,
for the oracle, the 2-point grid ``lpdt-quick``, for smoke tests; quick private tuning keeps the
default private grid, whose size the data can afford (a finer one would only warn that its
selection is close to random).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ldptree.datasets import load_dataset, read_manifest, resolve_data_dir
from ldptree.experiments._methods import DEFAULT_METHODS
from ldptree.experiments._runner import Experiment
from ldptree.experiments._splits import RandomSplit
from ldptree.experiments._tuning import OracleTuning, PrivateTuning, Tuning

PAPER_EPSILONS = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0)
LPDT_METHODS = ("lpdt-m", "lpdt-v")
QUICK_REPS = 3
QUICK_EPSILONS = (2.0,)


def available_lpdt_methods() -> tuple[str, ...]:
    """The LPDT variants that can run with the estimators on this branch."""
    out = []
    for name in LPDT_METHODS:
        try:
            DEFAULT_METHODS.get(name).check_available()
        except NotImplementedError:
            continue
        out.append(name)
    return tuple(out)


def regression_datasets(data_dir: str | os.PathLike[str] | None, *, quick: bool) -> list[str]:
    """Every regression dataset of the manifest (``quick``: the two smallest)."""
    entries = [e for e in read_manifest(data_dir).values() if e.task == "regression"]
    if not entries:
        raise ValueError("the manifest lists no regression dataset")
    if quick:
        entries = sorted(entries, key=lambda e: (e.n, e.name))[:2]
    return [e.name for e in entries]


def lpdt_table_experiment(
    *,
    datasets: Sequence[str] | None = None,
    epsilons: Sequence[float] | None = None,
    reps: int | None = None,
    tuning: str = "oracle",
    quick: bool = False,
    data_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
) -> Experiment:
    """The experiment behind ``reproduce lpdt-table`` (module docstring); ``None`` = default."""
    folder = resolve_data_dir(data_dir)
    names = (
        regression_datasets(folder, quick=quick)
        if datasets is None or list(datasets) == ["all"]
        else list(datasets)
    )
    methods = available_lpdt_methods()
    if tuning == "oracle":
        grid = "lpdt-quick" if quick else "lpdt-real"
        mode: Tuning = OracleTuning({m: grid for m in methods})
    elif tuning == "private":
        mode = PrivateTuning()
    else:
        raise ValueError(f"tuning must be 'oracle' or 'private', got {tuning!r}")
    return Experiment(
        name="lpdt-table",
        sources=tuple(RandomSplit(load_dataset(name, folder)) for name in names),
        methods=methods,
        epsilons=tuple(epsilons) if epsilons else (QUICK_EPSILONS if quick else PAPER_EPSILONS),
        reps=reps if reps is not None else (QUICK_REPS if quick else 10),
        tuning=mode,
        seed=seed,
    )
