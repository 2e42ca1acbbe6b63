"""Small, fast experiments on synthetic sources (no data folder needed)."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree.datasets import lpdt_uniform
from ldptree.experiments import Experiment, OracleTuning, PrivateTuning, SyntheticSource

EPS = (2.0,)


def uniform2(n: int, rng: np.random.Generator):
    return lpdt_uniform(n, 2, rng)


def source(name: str = "sine") -> SyntheticSource:
    return SyntheticSource(name, uniform2, n_public=200, n_train=900, n_test=300)


@pytest.fixture
def oracle_experiment() -> Experiment:
    return Experiment("t", [source()], ["lpdt-m"], EPS, 2, OracleTuning({"lpdt-m": "lpdt-quick"}))


@pytest.fixture
def private_experiment() -> Experiment:
    return Experiment("t", [source()], ["lpdt-m"], EPS, 2, PrivateTuning({"lpdt-m": "lpdt-quick"}))
