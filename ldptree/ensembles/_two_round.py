"""Two rounds: refine the partition with private counts, then estimate on it.

A public assignment that reads no private value (:class:`~ldptree.rounds.HolderSplit`: holder
``i`` is in part ``splitmix64(seed + i) mod k``, ``k = refine_parts``) sends part 0 (about
``n / k`` holders, ``n_1`` of them) to round 1 and every other holder (``n_2 = n - n_1``) to
round 2. Each holder answers exactly one round at the full ``epsilon``: parallel composition,
the whole release is ``epsilon``-LDP.

**Round 1 (counts).** The estimator's rule grows a public partition ``depth + extra_depth``
deep (``refine_empty`` also splits cells without public points data-free; :func:`~ldptree.
partitions.grow`). Each round-1 holder reports only its cell ``j_i`` of that fine partition,
through optimized unary encoding of the one-hot cell at the full ``epsilon``
(:class:`~ldptree.mechanisms.OUECellClassMechanism` with every holder in class 0: its label is
never read). The debiased counts ``c^_j`` are unbiased for the fine cells' counts; a node's count
``c^_A`` is the sum over the fine cells below it.

**Choice of the partition (post-processing).** Top-down from the root, a split of node ``A`` is
kept when both children ``B`` pass the signal-to-noise rule

    snr(B) = (n_2 / n_1) c^_B / sqrt(n_2 v_0) >= min_snr,

where ``(n_2 / n_1) c^_B`` is the number of round-2 holders predicted in ``B`` and ``v_0`` the
variance one holder outside a cell adds to that cell's debiased count under the count mechanism
at ``epsilon`` (exact for unary encoding: ``q' (1 - q') / (1/2 - q')^2``; public), so
``sqrt(n_2 v_0)`` is the noise standard deviation of the count of an *empty* cell estimated from
``n_2`` holders at the full ``epsilon``. Round 2's mechanism also spends budget on the label, so
its counts are noisier and its label sums more so: ``min_snr`` (default 8) asks for a margin.
(The mechanisms' stated variances of a label sum are upper bounds, for some far from tight, so
the rule does not use them.) Otherwise ``A`` becomes a leaf (its subtree is pruned). The rule
reads only public quantities and round 1's released reports, so the chosen partition costs
nothing more.

**Round 2 (estimates).** The other holders answer the estimator (an
:class:`~ldptree.LPDTRegressor` for :class:`LPDTTwoRoundRegressor`, an
:class:`~ldptree.LPCTClassifier` for :class:`LPCTTwoRoundClassifier`, with its mechanism,
``"auto"`` included, and read-out) on the chosen partition, as its own ``fit`` would on those
holders.

Both rounds run through the round engine (:func:`ldptree.rounds.run`); each mechanism is
certified by :func:`~ldptree.accounting.verify_ldp` for its own partition before any private row
is read by that round, and ``privacy_certificate_`` (a
:class:`~ldptree.accounting.CompositionCertificate`) composes the two in parallel.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import as_key, check_epsilon, check_int, check_real
from ldptree.accounting import CompositionCertificate, LedgerScope, PrivacyAccount
from ldptree.accounting._ledger import PrivacyLedger
from ldptree.accounting._spend import PrivacySpend
from ldptree.ensembles._scopes import Composed, TreeT, holder_seed, mirror, outer_scope
from ldptree.estimators._base import ClassifierMixin, RegressorMixin
from ldptree.estimators._classes import encode_labels, resolve_classes
from ldptree.estimators._inputs import check_fit_rows, fit_scaler, resolve_label_bound
from ldptree.estimators._lpct import LPCTClassifier
from ldptree.estimators._lpct_readout import check_lam
from ldptree.estimators._lpdt import LPDTRegressor
from ldptree.mechanisms._oue import OUECellClassMechanism
from ldptree.mechanisms._random import split
from ldptree.partitions._builder import TreeRule
from ldptree.partitions._partition import Partition
from ldptree.rounds import HolderPart, HolderSplit, Round, certified_spend, release_key, run
from ldptree.rounds._plan import DEFAULT_CHUNK
from ldptree.rounds._rows import PrivateRows

__all__ = [
    "ChosenPartition",
    "LPCTTwoRoundClassifier",
    "LPDTTwoRoundRegressor",
    "choose_partition",
    "no_label",
    "snr_splits",
    "subtree_sums",
]


def no_label(y: Any) -> np.ndarray[Any, Any]:
    """Round 1's label conversion: every holder is class 0 (the label is never read)."""
    return np.zeros(np.shape(y)[0], dtype=np.int32)


@attrs.frozen(eq=False)
class ChosenPartition:
    """A :class:`~ldptree.protocols.Partitioner` that returns a partition already chosen (round
    2's): it reads no data."""

    partition: Partition

    @property
    def max_depth(self) -> int:
        return self.partition.depth

    def fit(self, X_public: Any, y_public: Any = None, *, key: Any = None) -> Partition:
        del X_public, y_public, key
        return self.partition


def subtree_sums(partition: Partition, leaf_values: Any) -> FloatArray:
    """``float[n_nodes]``: for every node the sum of ``leaf_values`` over the cells below it."""
    sums = np.zeros(partition.n_nodes)
    sums[partition.leaf_nodes] = np.asarray(leaf_values, dtype=np.float64)
    left, right = np.asarray(partition.left), np.asarray(partition.right)
    for node in range(partition.n_nodes - 1, -1, -1):  # children have larger numbers
        if left[node] >= 0:
            sums[node] = sums[left[node]] + sums[right[node]]
    return sums


def choose_partition(partition: Partition, keep_split: Any) -> Partition:
    """The subtree of ``partition`` from the root where node ``a``'s split is kept iff
    ``keep_split[a]`` (and every ancestor's is): a node whose split is not kept is a leaf. Nodes
    are numbered as the grower numbers them (children in pairs, depth first, left first), so
    keeping every split gives ``partition`` itself."""
    keep = np.asarray(keep_split, dtype=bool)
    left, right = np.asarray(partition.left), np.asarray(partition.right)
    old = [0]  # the node of ``partition`` each new node copies
    feature, threshold = [-1], [np.nan]
    new_left, new_right = [-1], [-1]
    stack = [0]
    while stack:
        index = stack.pop()
        node = old[index]
        if left[node] < 0 or not keep[node]:
            continue
        ids = (len(old), len(old) + 1)
        feature[index], threshold[index] = (
            int(partition.feature[node]),
            float(partition.threshold[node]),
        )
        new_left[index], new_right[index] = ids
        old.extend([int(left[node]), int(right[node])])
        feature.extend([-1, -1])
        threshold.extend([np.nan, np.nan])
        new_left.extend([-1, -1])
        new_right.extend([-1, -1])
        stack.extend([ids[1], ids[0]])
    return Partition.from_arrays(
        feature=feature,
        threshold=threshold,
        left=new_left,
        right=new_right,
        lower=np.asarray(partition.lower)[old],
        upper=np.asarray(partition.upper)[old],
    )


def snr_splits(
    partition: Partition, counts: Any, n_1: int, n_2: int, v: float, min_snr: float
) -> np.ndarray[Any, Any]:
    """``bool[n_nodes]``: whether node ``a``'s split passes the rule (module docstring): both
    children's predicted round-2 signal-to-noise ``(n_2 / n_1) c^_B / sqrt(n_2 v)`` is at
    least ``min_snr`` (``v``: the per-holder variance of an empty cell's debiased count)."""
    node_counts = subtree_sums(partition, counts)
    snr = (n_2 / n_1) * node_counts / np.sqrt(n_2 * v)
    left, right = np.asarray(partition.left), np.asarray(partition.right)
    internal = left >= 0
    keep = np.zeros(partition.n_nodes, dtype=bool)
    keep[internal] = np.minimum(snr[left[internal]], snr[right[internal]]) >= min_snr
    return keep


class _TwoRound(Composed[TreeT]):
    """The parameters and the fit shared by both two-round estimators (module docstring)."""

    _exact_member = True  # round 1 grows the named rule of exactly this estimator deeper
    _budget_hint = "set privacy_budget on the two-round estimator, which charges both rounds"

    estimator_: TreeT
    refine_partition_: Partition
    refine_mechanism_: OUECellClassMechanism
    refine_counts_: FloatArray
    partition_: Partition
    keep_split_: np.ndarray[Any, Any]
    holder_split_: HolderSplit
    n_refine_: int
    n_features_in_: int
    privacy_: PrivacySpend
    privacy_ledger_: PrivacyLedger
    privacy_certificate_: CompositionCertificate

    def __init__(
        self,
        estimator: TreeT | None = None,
        epsilon: float = 1.0,
        *,
        extra_depth: int = 2,
        refine_empty: int = 0,
        refine_parts: int = 4,
        min_snr: float = 8.0,
        privacy_budget: float | LedgerScope | PrivacyAccount | None = None,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    def _rows(
        self, tree: Any, X: Any, y: Any, X_public: Any, y_public: Any
    ) -> tuple[PrivateRows, FloatArray | None, Any]:
        """The private rows and the checked public data, with the tree's label check."""
        y = tree._check_fit_input(X, y)
        return check_fit_rows(X, y, X_public, y_public, check_labels=tree._label_check)

    def _shared_public(self, tree: Any, yq: Any) -> dict[str, Any]:
        """Round 2's parameters fixed from the public sample (a label bound, classes)."""
        raise NotImplementedError

    def _rule(self, tree: Any, max_depth: int) -> TreeRule:
        """The tree's named rule at ``max_depth``."""
        rule = tree._partitioner(max_depth)
        assert isinstance(rule, TreeRule)  # a named rule
        return rule

    def _growth_labels(self, tree: Any, yq: Any) -> Any:
        """The public labels the rule grows on."""
        raise NotImplementedError

    def _template(self) -> Any:
        tree = super()._template()
        if not isinstance(tree.rule, str):
            raise TypeError(
                "estimator.rule must be a named rule ('max_edge', 'cart', 'random_max_edge'): "
                "round 1 grows it deeper"
            )
        if isinstance(tree.max_depth, bool) or not isinstance(tree.max_depth, int):
            raise ValueError(
                f"estimator.max_depth must be an integer (round 1 grows extra_depth more "
                f"levels), got {tree.max_depth!r}"
            )
        return tree

    def _fit(self, X: Any, y: Any, X_public: Any, y_public: Any) -> TreeT:
        """Round 1 (counts on a deep public partition), the choice of the partition, round 2
        (the estimator on the other holders)."""
        epsilon = check_epsilon(self.epsilon, "epsilon")
        extra = check_int(self.extra_depth, "extra_depth", minimum=0)
        refine = check_int(self.refine_empty, "refine_empty", minimum=0)
        parts = check_int(self.refine_parts, "refine_parts", minimum=2)
        min_snr = check_real(self.min_snr, "min_snr")
        if not min_snr > 0:
            raise ValueError(f"min_snr must be > 0, got {min_snr}")
        outer = outer_scope(self.privacy_budget)
        tree = self._template()
        self._check_rereadable(X, y, "the two rounds read the private rows twice")
        rows, Xq, yq = self._rows(tree, X, y, X_public, y_public)
        tree.set_params(**self._shared_public(tree, yq))
        d, n = rows.n_features, rows.n
        assert n is not None  # arrays and memory maps say their length
        key_split, key_1, key_2 = split(as_key(self.random_state), 3)
        holder_split = HolderSplit(parts, holder_seed(key_split))
        first, rest = holder_split.part(0), HolderPart(holder_split, 0, complement=True)
        n_1, n_2 = first.size(n), rest.size(n)
        if n_1 == 0 or n_2 == 0:
            raise ValueError(
                f"{n} private rows leave a round without holders (round 1: {n_1}, round 2: "
                f"{n_2}): pass more rows or change refine_parts"
            )

        # round 1's partition: the estimator's rule, extra_depth deeper, on the public rows
        rule = attrs.evolve(self._rule(tree, int(tree.max_depth) + extra), refine_empty=refine)
        scaler = fit_scaler(Xq, d, check_real(tree.feature_margin, "feature_margin"))
        Xq_scaled = np.empty((0, d)) if Xq is None else scaler.transform(Xq)
        key_rule, key_noise = split(key_1)
        fine = rule.fit(Xq_scaled, self._growth_labels(tree, yq), key=key_rule)
        counter = OUECellClassMechanism(epsilon, n_classes=2)
        charge = certified_spend(counter, n_cells=fine.n_leaves)

        account = PrivacyAccount(budget=None if outer is not None else self.privacy_budget)
        groups = account.scope().split(_split_name(holder_split), ("round 1", "round 2"))
        if outer is not None:  # both groups must afford eps before anything is released
            for group in outer.split(_split_name(holder_split), ("round 1", "round 2")):
                left = group.remaining
                if left is not None and left.epsilon < epsilon:
                    raise ValueError(
                        f"privacy_budget: a round at epsilon={epsilon} exceeds the remaining "
                        f"budget {left.epsilon} of its holders; nothing was released"
                    )
        before = len(account.ledger.entries)
        groups[0].labelled("round 1").charge(f"cell counts, {charge.entry}", charge.spend)
        mirror(account, before, outer)
        first_round = Round(
            partition=fine,
            mechanism=counter,
            key=release_key(key_noise, counter, fine),
            scaler=scaler,
            labels=no_label,
            chunk_size=DEFAULT_CHUNK if tree.chunk_size is None else tree.chunk_size,
            holders=first,
        )
        estimates = run([first_round], rows)[0].estimates
        counts = np.asarray(estimates.label_sum, dtype=np.float64)[:, 0]  # class 0: everyone

        # the choice (post-processing of round 1's reports)
        # everyone is in class 0, so the label indicator's moments are 1
        v_0 = counter.exact_cell_variance(
            fine.n_leaves, label_mean=1.0, label_second_moment=1.0
        ).label_sum_outside
        keep = snr_splits(fine, counts, n_1, n_2, v_0, min_snr)
        chosen = choose_partition(fine, keep)

        # round 2: the estimator on the chosen partition, over the other holders
        member = tree.set_params(
            epsilon=epsilon,
            random_state=key_2,
            privacy_budget=groups[1].labelled("round 2"),
            rule=ChosenPartition(chosen),
            max_depth=None,
        )
        before = len(account.ledger.entries)
        started = member._start_fit(X, y, X_public=Xq, y_public=yq)
        mirror(account, before, outer)
        assert started.round is not None  # refused above: an estimator that collects nothing
        second_round = attrs.evolve(started.round, holders=rest)
        fitted: TreeT = started.finish(run([second_round], rows)[0].estimates)

        self.estimator_ = fitted
        self.refine_partition_ = fine
        self.refine_mechanism_ = counter
        self.refine_counts_ = counts
        self.partition_ = chosen
        self.keep_split_ = keep
        self.holder_split_ = holder_split
        self.n_refine_ = n_1
        self.n_features_in_ = fitted.n_features_in_
        self.privacy_ledger_ = account.ledger.post_process(
            "choice of the partition from round 1's counts; round 2's read-out"
        )
        self.privacy_ = self.privacy_ledger_.total
        self.privacy_certificate_ = CompositionCertificate(
            rule="parallel",
            rounds=("round 1 (cell counts)", "round 2 (estimates)"),
            spends=(charge.spend, fitted.privacy_),
            certificates=(charge.certificate, fitted.privacy_certificate_),
        )
        return fitted


class LPDTTwoRoundRegressor(RegressorMixin, _TwoRound[LPDTRegressor]):
    """Refine-then-estimate LPDT in two rounds of disjoint holders (module docstring).

    Parameters
    ----------
    estimator:
        Round 2's estimator: an unfitted :class:`~ldptree.LPDTRegressor` (``None``:
        ``LPDTRegressor()``) with a named ``rule`` and an integer ``max_depth``; its
        ``privacy_budget`` must be ``None``. Its parameters apply to round 2 except
        ``epsilon``, ``random_state``, ``privacy_budget`` (set here) and ``rule`` (the chosen
        partition); ``label_bound=None`` is taken from ``y_public``.
    epsilon:
        Every holder's whole release, ``eps > 0`` (each answers one round at ``eps``).
    extra_depth:
        Round 1's partition is grown ``max_depth + extra_depth`` deep (``>= 0``).
    refine_empty:
        ``k >= 0``: round 1's partition also splits cells the public data cannot split,
        data-free, up to ``k`` more levels (:func:`~ldptree.partitions.grow`; 0: off).
    refine_parts:
        ``k >= 2``: round 1 gets part 0 of a public split of the holders into ``k`` parts
        (about ``n / k`` holders), round 2 all the others.
    min_snr:
        ``z > 0``: a split is kept when both children's predicted round-2 signal-to-noise is at
        least ``z`` (module docstring).
    privacy_budget:
        ``None``, a cap on the per-holder epsilon, or a shared
        :class:`~ldptree.accounting.LedgerScope` (or :class:`~ldptree.accounting.PrivacyAccount`):
        checked for both rounds' groups before round 1, each round charged before it runs.
    random_state:
        ``None``, an int seed or a JAX key: drives the holder split and both rounds' noise.

    Attributes
    ----------
    estimator_
        Round 2's fitted :class:`~ldptree.LPDTRegressor` (its ``partition_`` is the chosen one).
    refine_partition_, refine_mechanism_, refine_counts_
        Round 1's partition, its count mechanism and the debiased counts of its cells.
    partition_, keep_split_
        The chosen partition and, per node of round 1's partition, whether its split passed.
    holder_split_, n_refine_
        The :class:`~ldptree.rounds.HolderSplit` and the number of round-1 holders.
    privacy_, privacy_ledger_, privacy_certificate_
        One holder's whole spend (``eps``), the ledger (the two rounds charged to the two
        disjoint groups of the split) and the parallel
        :class:`~ldptree.accounting.CompositionCertificate` of both rounds' certificates.
    """

    _tree_type = LPDTRegressor

    def _shared_public(self, tree: Any, yq: Any) -> dict[str, Any]:
        if tree.label_bound is not None:
            return {}
        return {"label_bound": resolve_label_bound(None, yq)}

    def _growth_labels(self, tree: Any, yq: Any) -> Any:
        return yq

    def predict(self, X: Any) -> FloatArray:
        """Round 2's predictions (post-processing: no privacy cost)."""
        self._check_fitted("estimator_")
        return self.estimator_.predict(X)


class LPCTTwoRoundClassifier(ClassifierMixin, _TwoRound[LPCTClassifier]):
    """Refine-then-estimate LPCT in two rounds of disjoint holders (module docstring): as
    :class:`LPDTTwoRoundRegressor` with an :class:`~ldptree.LPCTClassifier` in round 2.

    Parameters
    ----------
    estimator:
        Round 2's estimator: an unfitted :class:`~ldptree.LPCTClassifier` (``None``:
        ``LPCTClassifier()``) with a named ``rule`` and an integer ``max_depth``; its
        ``privacy_budget`` must be ``None``. Round 1's partition is grown by its rule and
        ``criterion`` on the public class codes; ``classes`` are resolved once from the declared
        classes and ``y_public``.
    epsilon, extra_depth, refine_empty, refine_parts, min_snr, privacy_budget, random_state:
        As :class:`LPDTTwoRoundRegressor`.

    Attributes
    ----------
    classes_
        The class labels.
    estimator_, refine_partition_, refine_mechanism_, refine_counts_, partition_, keep_split_, \
holder_split_, n_refine_, privacy_, privacy_ledger_, privacy_certificate_
        As :class:`LPDTTwoRoundRegressor` (``estimator_`` a fitted
        :class:`~ldptree.LPCTClassifier`).
    """

    _tree_type = LPCTClassifier

    def _template(self) -> Any:
        tree = super()._template()
        if math.isinf(check_lam(tree.lam)) and isinstance(tree.readout, str):
            raise ValueError(
                "estimator.lam=inf with a built-in read-out collects no private report in round "
                "2 (public data only): give a finite lam"
            )
        return tree

    def _shared_public(self, tree: Any, yq: Any) -> dict[str, Any]:
        return {"classes": resolve_classes(tree.classes, yq)}

    def _growth_labels(self, tree: Any, yq: Any) -> Any:
        if yq is None:
            return None
        return encode_labels(yq, tree.classes, "y_public").astype(np.float64)

    def predict_proba(self, X: Any) -> FloatArray:
        """Round 2's class probabilities (post-processing: no privacy cost)."""
        self._check_fitted("estimator_")
        return self.estimator_.predict_proba(X)

    def predict(self, X: Any) -> np.ndarray[Any, Any]:
        """Round 2's predicted classes."""
        self._check_fitted("estimator_")
        return np.asarray(self.estimator_.predict(X))


def _split_name(holder_split: HolderSplit) -> str:
    """The ledger's name of the two groups: part 0 of the split, and every other part."""
    return f"{holder_split.name}: part 0 | the rest"
