"""Building an estimator's components from its hyper-parameters, and routing rows through them.

Shared by every tree estimator, so that ``rule="cart"`` or a user's own partitioner or mechanism
means the same thing in :class:`~ldptree.LPDTRegressor` and the classifiers.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from ldptree._typing import BoolArray, FloatArray, IntArray
from ldptree._validation import check_choice, check_features, check_int
from ldptree.estimators._fits import check_mechanism_fits
from ldptree.mechanisms import mechanism_registry
from ldptree.partitions._cart import CartPartitioner
from ldptree.partitions._max_edge import MaxEdgePartitioner
from ldptree.partitions._partition import Partition
from ldptree.partitions._random_max_edge import RandomMaxEdgePartitioner
from ldptree.partitions._scaling import RangeScaler
from ldptree.protocols import AggregatorFactory, Mechanism, Partitioner, SimulatesHolders
from ldptree.rounds import SimulatedSumAggregator, SumAggregator

#: Named partition rules: max-edge (LPDT-M, LPCT), random max-edge (LPCT-R), CART (LPDT-V,
#: LPCT-CART, quantile thresholds as the reference).
RULES = ("max_edge", "random_max_edge", "cart")


def make_partitioner(
    rule: Any,
    *,
    max_depth: Any,
    min_samples_split: Any,
    min_samples_leaf: Any,
    criterion: Any,
    criteria: Collection[str],
) -> Partitioner:
    """The partitioner named by ``rule`` (or ``rule`` itself if it is a Partitioner, whose depth
    must agree with ``max_depth``: :func:`check_rule_depth`)."""
    checked = check_rule(rule)
    if isinstance(checked, Partitioner):
        return check_rule_depth(checked, max_depth)
    if max_depth is None:
        raise ValueError(
            f"max_depth=None (the rule's own depth) needs a Partitioner object as rule; the named "
            f"rule {rule!r} needs an integer max_depth"
        )
    if criterion not in criteria:
        raise ValueError(f"criterion must be one of {sorted(criteria)}, got {criterion!r}")
    depth = check_int(max_depth, "max_depth", minimum=0)
    split = check_int(min_samples_split, "min_samples_split", minimum=0)
    leaf = check_int(min_samples_leaf, "min_samples_leaf", minimum=0)
    if rule == "random_max_edge":
        return RandomMaxEdgePartitioner(
            max_depth=depth, min_samples_split=split, min_samples_leaf=leaf
        )
    kind = MaxEdgePartitioner if rule == "max_edge" else CartPartitioner
    return kind(
        max_depth=depth, min_samples_split=split, min_samples_leaf=leaf, criterion=criterion
    )


def rule_depth(rule: Any) -> int | None:
    """The depth a Partitioner object declares (an integer attribute ``max_depth``, as every
    built-in rule has), else ``None``."""
    own = getattr(rule, "max_depth", None)
    return own if isinstance(own, int) and not isinstance(own, bool) else None


def check_rule_depth(rule: Partitioner, max_depth: Any) -> Partitioner:
    """``rule`` if the estimator's ``max_depth`` is the depth it grows to, else a ``ValueError``
    naming both: an estimator never reports a depth its rule ignored. ``max_depth=None`` leaves
    the depth to the rule; an integer must equal the rule's declared ``max_depth`` (a rule that
    declares none cannot receive one)."""
    if max_depth is None:
        return rule
    own = rule_depth(rule)
    name = type(rule).__name__
    if own is None:
        raise ValueError(
            f"rule={name}(...) declares no max_depth, so it cannot receive max_depth="
            f"{max_depth!r}; pass max_depth=None (the rule fixes its own depth) or give the rule "
            "an integer attribute max_depth"
        )
    if max_depth != own:
        raise ValueError(
            f"rule={name}(max_depth={own}) grows to depth {own}, but the estimator's max_depth="
            f"{max_depth!r}; pass the same depth to both, or max_depth=None (the rule's own)"
        )
    return rule


def grown_depth(rule: Any, max_depth: int | None, partition: Partition) -> int:
    """``max_depth_``: ``max_depth`` when given (the rule received it), else the rule's declared
    depth, else the depth of the grown ``partition``."""
    if max_depth is not None:
        return max_depth
    own = rule_depth(rule)
    return own if own is not None else partition.depth


def check_rule(rule: Any) -> str | Partitioner:
    """``rule``: a name in :data:`RULES` or a :class:`~ldptree.protocols.Partitioner`, else a
    ``TypeError`` (wrong type) or ``ValueError`` (unknown name)."""
    if isinstance(rule, str):
        if rule not in RULES:
            raise ValueError(f"rule must be one of {RULES} or a Partitioner, got {rule!r}")
        return rule
    if not isinstance(rule, Partitioner):
        raise TypeError(
            f"rule must be one of {RULES} (a str) or a Partitioner (an object with "
            f"fit(X_public, y_public, *, key) -> Partition), got {type(rule).__name__}"
        )
    return rule


#: The named mechanisms an estimator accepts besides a mechanism object (``None`` is ``"auto"``;
#: :mod:`ldptree.estimators._default_mechanism`): ``"auto"`` and the registry's names.
MECHANISM_CHOICES = ("auto", *mechanism_registry().names())


def is_named(mechanism: Any) -> bool:
    """Whether ``mechanism`` names a default (``None``, ``"auto"`` or ``"paper"``); any other
    string is a ``ValueError``."""
    if mechanism is None:
        return True
    if isinstance(mechanism, str):
        check_choice(mechanism, "mechanism", MECHANISM_CHOICES)
        return True
    return False


def check_components(
    estimator: str,
    *,
    rule: Any,
    mechanism: Any,
    aggregator: Any,
    simulation: Any = "per_holder",
) -> AggregatorFactory:
    """The user's components of ``estimator``, checked at the start of ``fit``, before any data
    is read: the partition ``rule`` (:func:`check_rule`), a ``mechanism`` (``None``, ``"auto"``
    or ``"paper"``: a default) that implements the protocol and privatizes the records the estimator
    feeds it (:func:`~ldptree.estimators._fits.check_mechanism_fits`), and the aggregator
    factory it returns (:func:`resolve_aggregator`).
    ``TypeError`` on a mismatch."""
    check_rule(rule)
    if not is_named(mechanism):
        check_protocol(mechanism)
        check_mechanism_fits(estimator, mechanism)
    return resolve_aggregator(aggregator, simulation)


def check_protocol(mechanism: Any) -> Mechanism:
    """``mechanism`` if it implements the :class:`~ldptree.protocols.Mechanism` protocol."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(
            f"mechanism must implement the Mechanism protocol (epsilon, privatize, summarize, "
            f"debias, log_prob), got {type(mechanism).__name__}"
        )
    checked: Mechanism = mechanism
    return checked


def check_mechanism(mechanism: Any, epsilon: float) -> Mechanism:
    """A user-supplied mechanism, checked to implement the protocol at budget ``epsilon``."""
    checked = check_protocol(mechanism)
    if not np.isclose(checked.epsilon, epsilon, rtol=1e-12, atol=0.0):
        raise ValueError(
            f"mechanism.epsilon={checked.epsilon} differs from epsilon={epsilon}; set them equal"
        )
    return checked


def route(
    X: Any, n_features: int, scaler: RangeScaler, partition: Partition
) -> tuple[IntArray, BoolArray]:
    """Cells ``int[n]`` of new rows and whether each lies inside the public box ``bool[n]``."""
    X_arr = check_features(X, n_features)
    X_scaled: FloatArray = scaler.transform(X_arr)
    cells = np.asarray(partition.cells(X_scaled)).astype(np.int64)
    return cells, scaler.inside(X_scaled)


#: How a fit runs its private round: the protocol, or its in-law simulation.
SIMULATIONS = ("per_holder", "aggregate")


def check_simulation(value: Any) -> bool:
    """Whether ``simulation`` asks for the aggregate simulation; ``ValueError`` if unknown."""
    return check_choice(value, "simulation", SIMULATIONS) == "aggregate"


def simulates_holders(aggregator: AggregatorFactory) -> bool:
    """Whether ``aggregator`` is an aggregator class that simulates the holders
    (:class:`~ldptree.protocols.SimulatesHolders`: it draws no reports per piece, only routes)."""
    return isinstance(aggregator, type) and issubclass(aggregator, SimulatesHolders)


def resolve_aggregator(aggregator: Any, simulation: Any = "per_holder") -> AggregatorFactory:
    """The aggregator factory of a fit: ``aggregator`` (``None``: the exact streaming sum,
    :class:`SumAggregator`), or :class:`SimulatedSumAggregator` for
    ``simulation="aggregate"`` (which then must not be combined with an ``aggregator``).
    ``TypeError`` for an ``aggregator`` that is not callable as ``(mechanism, n_cells)``."""
    simulated = check_simulation(simulation)
    if aggregator is None:
        return SimulatedSumAggregator if simulated else SumAggregator
    if not isinstance(aggregator, AggregatorFactory):
        raise TypeError(
            "aggregator must be None or a callable (mechanism, n_cells) -> Aggregator, such as "
            f"an aggregator class like SumAggregator; got {type(aggregator).__name__}"
        )
    if simulated:
        raise ValueError(
            "simulation='aggregate' chooses the aggregator (SimulatedSumAggregator); pass either "
            "it or aggregator=, not both"
        )
    return aggregator
