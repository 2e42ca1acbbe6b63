"""A rule object's depth and the estimator's ``max_depth`` agree, or the fit is refused naming
both; ``max_depth_`` is the depth the partition was grown to. Deterministic (fixed seeds)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from ldptree import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor, Partition
from ldptree.experiments._memo import MemoPartitioner
from ldptree.partitions import CartPartitioner, MaxEdgePartitioner

ESTIMATORS = [LPDTRegressor, LPCTClassifier, LPCTPrunedClassifier]


def _data(kind: Any):
    rng = np.random.default_rng(0)
    X, Xq = rng.uniform(size=(600, 2)), rng.uniform(size=(200, 2))
    if kind is LPDTRegressor:
        return X, X[:, 0] - X[:, 1], Xq, Xq[:, 0] - Xq[:, 1]
    return X, (X[:, 0] > 0.5).astype(int), Xq, (Xq[:, 0] > 0.5).astype(int)


def _fit(kind: Any, **params: Any):
    X, y, Xq, yq = _data(kind)
    return kind(epsilon=4.0, random_state=0, **params).fit(X, y, X_public=Xq, y_public=yq)


@attrs.frozen
class Halves:
    """A rule that declares no max_depth: it splits feature 0 at 1/2, ``levels`` times."""

    levels: int = 2

    def fit(self, X_public: Any, y_public: Any = None, *, key: Any = None) -> Partition:
        del X_public, y_public, key
        n = 2 ** (self.levels + 1) - 1
        feature, threshold, left, right = [], [], [], []
        lower, upper = np.zeros((n, 2)), np.ones((n, 2))
        for i in range(n):
            inner = 2 * i + 2 < n
            feature.append(0 if inner else -1)
            lo, hi = lower[i, 0], upper[i, 0]
            threshold.append((lo + hi) / 2 if inner else np.nan)
            left.append(2 * i + 1 if inner else -1)
            right.append(2 * i + 2 if inner else -1)
            if inner:
                upper[2 * i + 1, 0] = lower[2 * i + 2, 0] = (lo + hi) / 2
                lower[2 * i + 1, 0], upper[2 * i + 2, 0] = lo, hi
        return Partition.from_arrays(
            feature=feature, threshold=threshold, left=left, right=right, lower=lower, upper=upper
        )


@pytest.mark.parametrize("kind", ESTIMATORS)
def test_a_rule_whose_depth_differs_is_refused_naming_both(kind):
    with pytest.raises(ValueError, match=r"MaxEdgePartitioner\(max_depth=2\).*max_depth=3"):
        _fit(kind, max_depth=3, rule=MaxEdgePartitioner(max_depth=2))


@pytest.mark.parametrize("kind", ESTIMATORS)
def test_an_agreeing_or_unset_depth_is_the_rules_and_max_depth_is_true(kind):
    rule = MaxEdgePartitioner(max_depth=2, min_samples_split=1, min_samples_leaf=1)
    agreeing = _fit(kind, max_depth=2, rule=rule)
    own = _fit(kind, max_depth=None, rule=rule)
    for model in (agreeing, own):
        assert model.max_depth_ == 2 == model.partition_.depth
    assert own.partition_.equals(agreeing.partition_)
    # a memoised rule declares the depth of the rule it wraps
    memo = _fit(kind, max_depth=2, rule=MemoPartitioner(rule))
    assert memo.max_depth_ == 2 and memo.partition_.equals(agreeing.partition_)


@pytest.mark.parametrize("kind", ESTIMATORS)
def test_a_rule_without_a_declared_depth_takes_only_none(kind):
    with pytest.raises(ValueError, match=r"Halves\(\.\.\.\) declares no max_depth.*max_depth=4"):
        _fit(kind, max_depth=4, rule=Halves(3))
    model = _fit(kind, max_depth=None, rule=Halves(3))
    assert model.partition_.depth == 3 and model.max_depth_ == 3


@pytest.mark.parametrize("kind", [LPDTRegressor, LPCTClassifier])
def test_a_named_rule_needs_an_integer_depth(kind):
    with pytest.raises(ValueError, match=r"max_depth=None .* needs a Partitioner object"):
        _fit(kind, max_depth=None, rule="max_edge")


def test_the_named_rules_keep_receiving_max_depth():
    model = _fit(LPDTRegressor, max_depth=3, rule="cart")
    assert model.max_depth_ == 3 and model.partition_.depth <= 3
    assert _fit(LPDTRegressor, max_depth=3, rule=CartPartitioner(max_depth=3)).max_depth_ == 3
