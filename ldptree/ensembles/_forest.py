"""Forests of locally private trees with public data.

Tree ``t`` of ``T`` is a copy of the ``estimator`` (an :class:`~ldptree.LPDTRegressor` or an
:class:`~ldptree.LPCTClassifier`) grown on its own resample of the *public* sample
(``public_sample``: a bootstrap resample, a random half, or all of it) with its own key, so the
trees may publish different partitions. The private holders answer the trees by ``composition``:

* ``"split"`` (default): a public, data-independent assignment of holders to trees
  (:class:`~ldptree.rounds.HolderSplit`: holder ``i`` answers tree ``hash(seed, i) mod T`` only)
  so each holder sends one report, at the full ``epsilon``: parallel composition, a holder's
  whole release is ``epsilon``-LDP. Each tree sees about ``n / T`` holders.
* ``"sequential"``: every holder answers every tree at ``epsilon / T`` with independent noise:
  sequential composition, again ``epsilon`` in total.

The forest predicts the mean of its trees' predictions (regression) or of their class
probabilities (classification; the class is the argmax of the mean). Every tree's mechanism is
certified for its own partition before any private row is read; ``privacy_certificate_`` (a
:class:`~ldptree.accounting.CompositionCertificate`) states the composition and
``privacy_ledger_`` records each tree's charge about its holders (a part of the split, or every
holder). All the trees' rounds run in one call of :func:`ldptree.rounds.run` (by default the
:class:`~ldptree.rounds.Batched` executor).

Public inputs that every tree must share are fixed once from the whole public sample (the label
bound of a regressor, the classes of a classifier), so a resample that misses a class or the
extreme labels does not change them.
"""

from __future__ import annotations

from typing import Any

import attrs
import jax
import numpy as np
from sklearn.base import clone

from ldptree._typing import FloatArray
from ldptree._validation import (
    as_key,
    check_choice,
    check_epsilon,
    check_int,
    check_matrix,
    check_vector,
)
from ldptree.accounting import CompositionCertificate, LedgerScope, PrivacyAccount
from ldptree.accounting._composed import Rule
from ldptree.ensembles._scopes import Composed, TreeT, holder_seed, mirror, outer_scope
from ldptree.estimators._base import ClassifierMixin, RegressorMixin
from ldptree.estimators._classes import check_class_labels, resolve_classes
from ldptree.estimators._inputs import resolve_label_bound
from ldptree.estimators._lpct import LPCTClassifier
from ldptree.estimators._lpdt import LPDTRegressor
from ldptree.estimators._many import PendingFit
from ldptree.mechanisms._random import split
from ldptree.protocols import CellEstimates
from ldptree.rounds import HolderSplit, run

COMPOSITIONS = ("split", "sequential")
PUBLIC_SAMPLES = ("bootstrap", "half", "all")


class _Forest(Composed[TreeT]):
    """The parameters and the fit shared by both forests (module docstring)."""

    _budget_hint = "the forest charges its trees; set privacy_budget on the forest"
    estimators_: list[TreeT]

    def __init__(
        self,
        estimator: TreeT | None = None,
        n_trees: int = 8,
        epsilon: float = 1.0,
        *,
        composition: str = "split",
        public_sample: str = "bootstrap",
        privacy_budget: float | LedgerScope | PrivacyAccount | None = None,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    def _shared_public(self, tree: Any, y_public: Any, n: int) -> tuple[dict[str, Any], Any]:
        """Parameters every tree shares, fixed from the whole public sample, and the checked
        public labels (``n`` of them; ``None`` when absent)."""
        raise NotImplementedError

    def _resample(self, key: Any, n_public: int) -> np.ndarray[Any, Any]:
        if self.public_sample == "bootstrap":
            return np.asarray(jax.random.randint(key, (n_public,), 0, n_public))
        if self.public_sample == "half":
            half = max(1, n_public // 2)
            return np.sort(np.asarray(jax.random.permutation(key, n_public))[:half])
        return np.arange(n_public)

    def _fit(self, X: Any, y: Any, X_public: Any, y_public: Any) -> TreeT:
        n_trees = check_int(self.n_trees, "n_trees", minimum=1)
        epsilon = check_epsilon(self.epsilon, "epsilon")
        check_choice(self.composition, "composition", COMPOSITIONS)
        check_choice(self.public_sample, "public_sample", PUBLIC_SAMPLES)
        outer = outer_scope(self.privacy_budget)
        tree = self._template()
        self._check_rereadable(X, y, "a forest reads the private rows once per tree")
        if X_public is None:
            raise ValueError(
                "X_public is required: the trees are grown on resamples of the public sample"
            )
        Xq = check_matrix(X_public, "X_public")
        shared, yq = self._shared_public(tree, y_public, Xq.shape[0])
        split_mode = self.composition == "split"
        if split_mode and tree.max_depth == "auto":
            raise ValueError(
                "max_depth='auto' (of the estimator) is not supported with composition='split' "
                "(each tree sees only its part of the holders): give an integer max_depth"
            )

        key_split, key_trees = split(as_key(self.random_state))
        holder_split = HolderSplit(n_trees, holder_seed(key_split)) if split_mode else None
        # the forest's own account: a numeric privacy_budget caps it; every tree charges it
        account = PrivacyAccount(budget=None if outer is not None else self.privacy_budget)
        if holder_split is not None:
            scopes = account.scope().split(holder_split.name, n_trees)
        else:
            scopes = (account.scope(),) * n_trees
        tree_epsilon = epsilon if split_mode else epsilon / n_trees

        pending: list[PendingFit[Any]] = []
        for t, tree_key in enumerate(split(key_trees, n_trees)):
            key_sample, key_fit = split(tree_key)
            rows = self._resample(key_sample, Xq.shape[0])
            member = clone(tree).set_params(
                epsilon=tree_epsilon,
                random_state=key_fit,
                privacy_budget=scopes[t].labelled(f"tree {t}"),
                **shared,
            )
            started = member._start_fit(
                X, y, X_public=Xq[rows], y_public=None if yq is None else yq[rows]
            )
            if started.round is not None and holder_split is not None:
                started = attrs.evolve(
                    started, round=attrs.evolve(started.round, holders=holder_split.part(t))
                )
            pending.append(started)
        if holder_split is not None:
            _check_parts(holder_split, pending[0].rows.n)
        mirror(account, 0, outer)  # every tree's charge at once, under the caller's scope

        rounds = [p.round for p in pending if p.round is not None]
        results = iter(run(rounds, pending[0].rows))
        fitted: list[TreeT] = []
        for p in pending:
            estimates: CellEstimates | None = None if p.round is None else next(results).estimates
            fitted.append(p.finish(estimates))

        rule: Rule = "parallel" if split_mode else "sequential"
        self.estimators_ = fitted
        self.holder_split_ = holder_split
        self.n_features_in_ = fitted[0].n_features_in_
        self.privacy_ledger_ = account.ledger.post_process("mean of the trees' predictions")
        self.privacy_ = self.privacy_ledger_.total
        self.privacy_certificate_ = CompositionCertificate(
            rule=rule,
            rounds=[f"tree {t}" for t in range(n_trees)],
            spends=tuple(m.privacy_ for m in fitted),
            certificates=tuple(m.privacy_certificate_ for m in fitted),
        )
        return fitted[0]


def _check_parts(holder_split: HolderSplit, n: int | None) -> None:
    """``ValueError`` when a tree would get no holder (public: ``n`` and the assignment)."""
    if n is None:
        return
    sizes = holder_split.sizes(n)
    if np.any(sizes == 0):
        empty = int(np.argmin(sizes))
        raise ValueError(
            f"n_trees={holder_split.n_parts} leaves tree {empty} without holders ({n} private "
            "rows split among the trees): use fewer trees or composition='sequential'"
        )


class LPDTForestRegressor(RegressorMixin, _Forest[LPDTRegressor]):
    """A forest of :class:`~ldptree.LPDTRegressor` trees (module docstring); predicts the mean
    of the trees' predictions.

    Parameters
    ----------
    estimator:
        The tree: an unfitted :class:`~ldptree.LPDTRegressor` (``None``: ``LPDTRegressor()``).
        Its parameters apply to every tree except ``epsilon``, ``random_state`` and
        ``privacy_budget``, which the forest sets, and ``label_bound`` when ``None`` (taken
        once from the whole ``y_public``); its own ``privacy_budget`` must be ``None``.
    n_trees:
        ``T >= 1``.
    epsilon:
        Every holder's whole release (the forest's), ``eps > 0``.
    composition:
        ``"split"`` (default): each holder answers exactly one tree, chosen by a public
        data-independent assignment, at ``eps``; ``"sequential"``: every holder answers every
        tree at ``eps / T``.
    public_sample:
        The public rows tree ``t`` is grown on: ``"bootstrap"`` (``n_q`` draws with
        replacement, default), ``"half"`` (a random half without replacement) or ``"all"``.
    privacy_budget:
        ``None``, a cap on the per-holder epsilon, or a shared
        :class:`~ldptree.accounting.LedgerScope` (or :class:`~ldptree.accounting.PrivacyAccount`)
        charged with every tree's release about its holders (all of them at once, or none);
        refused before any private row is read when over a cap.
    random_state:
        ``None``, an int seed or a JAX key: drives the holder split, the resamples and every
        tree's key.

    Attributes
    ----------
    estimators_
        The fitted trees.
    holder_split_
        The :class:`~ldptree.rounds.HolderSplit` (``None`` for ``"sequential"``).
    privacy_, privacy_ledger_
        One holder's total spend (``eps`` either way) and the ledger of the trees' charges.
    privacy_certificate_
        A :class:`~ldptree.accounting.CompositionCertificate`: every tree's certificate and the
        composition rule.
    """

    _tree_type = LPDTRegressor

    def _shared_public(self, tree: Any, y_public: Any, n: int) -> tuple[dict[str, Any], Any]:
        yq = None if y_public is None else check_vector(y_public, "y_public", n=n)
        if tree.label_bound is not None:
            return {}, yq
        return {"label_bound": resolve_label_bound(None, yq)}, yq

    def predict(self, X: Any) -> FloatArray:
        """The mean of the trees' predictions (post-processing: no privacy cost)."""
        self._check_fitted("estimators_")
        preds = np.stack([tree.predict(X) for tree in self.estimators_])
        return np.asarray(preds.mean(axis=0), dtype=np.float64)


class LPCTForestClassifier(ClassifierMixin, _Forest[LPCTClassifier]):
    """A forest of :class:`~ldptree.LPCTClassifier` trees (module docstring); predicts the
    argmax of the mean of the trees' class probabilities.

    Parameters
    ----------
    estimator:
        The tree: an unfitted :class:`~ldptree.LPCTClassifier` (``None``: ``LPCTClassifier()``).
        Its parameters apply to every tree except ``epsilon``, ``random_state`` and
        ``privacy_budget``, which the forest sets, and ``classes`` (resolved once from the
        declared classes and the whole ``y_public``, so every tree has the same classes).
    n_trees, epsilon, composition, public_sample, privacy_budget, random_state:
        As :class:`LPDTForestRegressor`.

    Attributes
    ----------
    classes_
        The class labels.
    estimators_, holder_split_, privacy_, privacy_ledger_, privacy_certificate_
        As :class:`LPDTForestRegressor`.
    """

    _tree_type = LPCTClassifier

    def _shared_public(self, tree: Any, y_public: Any, n: int) -> tuple[dict[str, Any], Any]:
        yq = None if y_public is None else check_class_labels(y_public, "y_public", n=n)
        classes = resolve_classes(tree.classes, yq)
        return {"classes": classes}, yq

    def predict_proba(self, X: Any) -> FloatArray:
        """``float[n, K]``: the mean of the trees' class probabilities."""
        self._check_fitted("estimators_")
        probs = np.stack([tree.predict_proba(X) for tree in self.estimators_])
        return np.asarray(probs.mean(axis=0), dtype=np.float64)

    def predict(self, X: Any) -> np.ndarray[Any, Any]:
        """``classes_[argmax]`` of :meth:`predict_proba`."""
        return np.asarray(self.classes_[np.argmax(self.predict_proba(X), axis=1)])
