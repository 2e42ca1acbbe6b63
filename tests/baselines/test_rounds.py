"""Every private baseline runs the one round (partition x mechanism x aggregator) or is the
documented exception, an :class:`~ldptree.protocols.OwnRoundEstimator`."""

from __future__ import annotations

import inspect

import pytest

import ldptree.baselines as baselines
from ldptree.protocols import OwnRoundEstimator

#: Baselines that run the round, with the aggregator they take (DECONV fixes its own: it keeps
#: the reports for its kernel read-out).
ONE_ROUND = {"PHISTRegressor", "APHISTRegressor", "PHISTClassifier", "DECONVRegressor"}
OWN_ROUND = {"PGLMClassifier", "PSGDClassifier"}
NON_PRIVATE = {"DTRegressor", "CTClassifier"}


def _estimators() -> set[str]:
    return {
        name
        for name in baselines.__all__
        if inspect.isclass(obj := getattr(baselines, name))
        and hasattr(obj, "fit")
        and hasattr(obj, "predict")
    }


def test_every_baseline_is_classified() -> None:
    assert _estimators() == ONE_ROUND | OWN_ROUND | NON_PRIVATE


@pytest.mark.parametrize("name", sorted(OWN_ROUND))
def test_own_round_estimators_declare_their_protocol(name: str) -> None:
    estimator = getattr(baselines, name)()
    assert isinstance(estimator, OwnRoundEstimator)
    assert len(estimator.private_round) > 20


@pytest.mark.parametrize("name", sorted(ONE_ROUND))
def test_one_round_estimators_are_not_exceptions(name: str) -> None:
    estimator = getattr(baselines, name)()
    assert not isinstance(estimator, OwnRoundEstimator)
    if name != "DECONVRegressor":
        assert "aggregator" in estimator.get_params()
