"""Small, fast experiments on synthetic sources (no data folder needed)."""

from __future__ import annotations

import pytest
from exp_helpers import EPS, source

from ldptree.experiments import Experiment, OracleTuning, PrivateTuning


@pytest.fixture
def oracle_experiment() -> Experiment:
    return Experiment("t", [source()], ["lpdt-m"], EPS, 2, OracleTuning({"lpdt-m": "lpdt-quick"}))


@pytest.fixture
def private_experiment() -> Experiment:
    return Experiment("t", [source()], ["lpdt-m"], EPS, 2, PrivateTuning({"lpdt-m": "lpdt-quick"}))
