"""Fixtures: published rounds for the protocol tests."""

from __future__ import annotations

from typing import Any

import pytest
from protocol_helpers import make_round

from ldptree.mechanisms import LaplaceCellClassMechanism


@pytest.fixture(scope="module")
def published() -> dict[str, Any]:
    return make_round()


@pytest.fixture(scope="module")
def published_classes() -> dict[str, Any]:
    return make_round(LaplaceCellClassMechanism(epsilon=1.0, n_classes=3))
