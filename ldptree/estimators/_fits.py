"""Which mechanisms fit which estimator: a capability check run at the start of ``fit``.

An estimator feeds its mechanism records of one kind, and a mechanism declares the records it
privatizes:

* **labels**: ``labels()`` returns :class:`~ldptree.mechanisms.RealLabels` (real labels clipped to
  a bound: regression) or :class:`~ldptree.mechanisms.ClassLabels` (class codes ``0..K-1``:
  classification, with ``K = n_classes``). Every mechanism written on the kit declares it.
* **extra record fields**: ``record_fields``, the per-holder inputs ``privatize`` needs besides
  ``(cell, label)`` (e.g. ``("features",)`` for a mechanism that releases the feature vector
  itself, DECONV's release on the trivial partition). Absent means ``()``.

A tree estimator routes each holder to a cell and passes only ``(cell, label)``, so it needs a
mechanism with no extra record fields and labels of its task. :func:`check_mechanism_fits`
refuses a mismatch with a ``TypeError`` naming what is missing, before any data is read (the
same check the test matrix ``tests/estimators/test_mechanism_matrix.py`` drives over every
built-in). A mechanism that declares no ``labels()`` cannot be checked and is accepted as it
is: declare it to get the check.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ldptree.mechanisms._kit import ClassLabels, RealLabels

__all__ = ["ESTIMATOR_NEEDS", "EstimatorNeeds", "check_mechanism_fits", "label_kind"]

LabelKind = Literal["real", "class"]
_SPEC = {"real": "RealLabels", "class": "ClassLabels"}
_EXAMPLE = {"real": "RRLaplaceMechanism", "class": "LaplaceCellClassMechanism"}


@attrs.frozen
class EstimatorNeeds:
    """What an estimator feeds its mechanism: ``labels`` of one kind, and (class labels) exactly
    ``n_classes`` classes when the estimator is fixed to that many (``None``: any, checked
    against the public classes once they are known)."""

    labels: LabelKind
    n_classes: int | None = None
    task: str = "regression"


#: The estimators that take ``mechanism=`` and what each feeds it.
ESTIMATOR_NEEDS: dict[str, EstimatorNeeds] = {
    "LPDTRegressor": EstimatorNeeds("real"),
    "LPCTClassifier": EstimatorNeeds("class", task="classification"),
    "LPCTPrunedClassifier": EstimatorNeeds("class", n_classes=2, task="binary classification"),
    "PHISTRegressor": EstimatorNeeds("real"),
    "APHISTRegressor": EstimatorNeeds("real"),
    "PHISTClassifier": EstimatorNeeds("class", n_classes=2, task="binary classification"),
}


def label_kind(mechanism: Any) -> tuple[LabelKind | None, int | None]:
    """``(kind, n_classes)`` from the mechanism's ``labels()`` declaration (a method, or a
    property holding the spec); ``(None, None)`` when it declares none."""
    spec: Any = getattr(mechanism, "labels", None)
    if callable(spec):
        spec = spec()
    if isinstance(spec, RealLabels):
        return "real", None
    if isinstance(spec, ClassLabels):
        return "class", spec.n_classes
    return None, None


def _declared(kind: LabelKind, n_classes: int | None) -> str:
    if kind == "real":
        return "real labels (labels() -> RealLabels)"
    return f"class labels (labels() -> ClassLabels(n_classes={n_classes}))"


def check_mechanism_fits(estimator: str, mechanism: Any, *, n_classes: int | None = None) -> None:
    """``TypeError`` unless ``mechanism`` privatizes the records ``estimator`` feeds it.

    ``estimator`` is a key of :data:`ESTIMATOR_NEEDS` (the estimator's class name);
    ``n_classes``, once the public classes are known, is the number of classes the labels are
    coded into, which a class mechanism must declare exactly. Module docstring for the rules.
    """
    needs = ESTIMATOR_NEEDS.get(estimator)
    if needs is None:
        raise ValueError(f"estimator must be one of {sorted(ESTIMATOR_NEEDS)}, got {estimator!r}")
    name = type(mechanism).__name__
    fields = tuple(getattr(mechanism, "record_fields", ()))
    if fields:
        raise TypeError(
            f"{estimator} needs a mechanism that privatizes (cell, label) records only; {name} "
            f"also needs {', '.join(f + '=' for f in fields)} per holder (record_fields="
            f"{fields!r}), which a tree estimator does not pass. Use a mechanism that releases the "
            f"cell, such as {_EXAMPLE[needs.labels]}"
        )
    kind, classes = label_kind(mechanism)
    if kind is None:
        return  # undeclared: cannot be checked (module docstring)
    want = needs.n_classes if needs.n_classes is not None else n_classes
    if kind != needs.labels:
        raise TypeError(
            f"{estimator} needs a mechanism with {needs.labels} labels (labels() -> "
            f"{_SPEC[needs.labels]}) for {needs.task}; {name} declares "
            f"{_declared(kind, classes)}. Use a mechanism such as {_EXAMPLE[needs.labels]}"
            + (" (or a classifier such as LPCTClassifier)" if kind == "class" else "")
            + (" (or LPDTRegressor for real labels)" if kind == "real" else "")
        )
    if kind == "class" and want is not None and classes != want:
        raise TypeError(
            f"{estimator} needs a mechanism with class labels over {want} classes "
            f"(labels() -> ClassLabels(n_classes={want})); {name} declares "
            f"{_declared(kind, classes)}"
        )
