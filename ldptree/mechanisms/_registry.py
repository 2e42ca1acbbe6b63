"""The one list of mechanisms: what each built-in is for and where the library may use it.

Every built-in mechanism has one :class:`MechanismEntry` in :func:`mechanism_registry`: its
class, its task (``"regression"``: real labels clipped to a bound; ``"classification"``: class
codes ``0..K-1``), the candidates ``mechanism="auto"`` compares it as (none: ``auto`` never picks
it), the other ``mechanism=`` names that select it (``"paper"``: the papers' mechanism of its
task) and whether a deployment may publish it (it is written on the kit,
:class:`~ldptree.mechanisms.KitMechanism`: its whole configuration is in its constructor's fields
and it samples with ``privatize_words``). Everything else that lists mechanisms is computed from
this table: the candidates of :func:`~ldptree.mechanisms.choose_regression_mechanism` and
:func:`~ldptree.mechanisms.choose_class_mechanism`, the estimators' ``mechanism=`` names,
:data:`ldptree.testing.BUILT_INS`, :data:`ldptree.protocol.MECHANISMS` and
:func:`~ldptree.mechanisms.kit_built_ins`.

A registry is an immutable value. There is no global table to mutate: a user's mechanism joins
by a new registry, ``mechanism_registry().with_entries(MechanismEntry(...))``, passed where it is
wanted (e.g. ``choose_regression_mechanism(..., registry=mine)``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Literal

import attrs

from ldptree.mechanisms._duchi import DuchiMechanism
from ldptree.mechanisms._hr_laplace import HadamardLaplaceMechanism
from ldptree.mechanisms._kit import KitMechanism
from ldptree.mechanisms._krr import KRRCellClassMechanism, KRRJointMechanism, KRRLaplaceMechanism
from ldptree.mechanisms._laplace_cell_class import LaplaceCellClassMechanism
from ldptree.mechanisms._laplace_cell_label import LaplaceCellLabelMechanism
from ldptree.mechanisms._laplace_features import LaplaceFeatureLabelMechanism
from ldptree.mechanisms._olh import OLHCellClassMechanism, OLHLaplaceMechanism
from ldptree.mechanisms._oue import OUECellClassMechanism, OUELaplaceMechanism
from ldptree.mechanisms._piecewise import PiecewiseMechanism
from ldptree.mechanisms._rr_laplace import RRLaplaceMechanism
from ldptree.mechanisms._subset_selection import SubsetCellClassMechanism, SubsetLaplaceMechanism

__all__ = ["Candidate", "MechanismEntry", "MechanismRegistry", "Task", "mechanism_registry"]

Task = Literal["regression", "classification"]
TASKS: tuple[Task, ...] = ("regression", "classification")


@attrs.frozen
class Candidate:
    """One mechanism ``mechanism="auto"`` compares: its name in the choice's table (e.g.
    ``"rr-duchi"``, ``"krr-joint/2"``) and the constructor arguments fixed for it (e.g.
    ``(("levels", 2),)``)."""

    name: str
    options: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class MechanismEntry:
    """A registered mechanism (module docstring).

    ``mechanism`` the class, built as ``mechanism(epsilon=, label_bound=, **options)`` for
    regression and ``mechanism(epsilon=, n_classes=, **options)`` for classification;
    ``auto`` the candidates ``mechanism="auto"`` compares (a class with a ``budget_split``
    parameter is compared at its optimal split); ``names`` the other ``mechanism=`` names that
    select it; ``example`` constructor arguments of the test suite's instance besides the
    task's (``label_bound=(-1, 1)``, ``n_classes=3``).
    """

    mechanism: type[Any]
    task: Task = attrs.field(validator=attrs.validators.in_(TASKS))
    auto: tuple[Candidate, ...] = ()
    names: tuple[str, ...] = ()
    example: tuple[tuple[str, Any], ...] = ()

    @property
    def name(self) -> str:
        """The class name (how the protocol and the test suite name it)."""
        return self.mechanism.__name__

    @property
    def label_kind(self) -> Literal["real", "class"]:
        """``"real"`` (regression) or ``"class"`` (classification): its ``labels()``."""
        return "real" if self.task == "regression" else "class"

    @property
    def selectable(self) -> bool:
        """Whether ``mechanism="auto"`` may choose it."""
        return bool(self.auto)

    @property
    def publishable(self) -> bool:
        """Whether a deployment may publish it (written on the kit; module docstring)."""
        return issubclass(self.mechanism, KitMechanism)

    @property
    def splits(self) -> bool:
        """Whether its constructor takes a ``budget_split``."""
        return "budget_split" in inspect.signature(self.mechanism).parameters

    def build(
        self, epsilon: float, *, label_bound: Any = None, n_classes: Any = None, **options: Any
    ) -> Any:
        """The mechanism at ``epsilon`` with the task's ``label_bound`` or ``n_classes``."""
        if self.task == "regression":
            return self.mechanism(epsilon=epsilon, label_bound=label_bound, **options)
        return self.mechanism(epsilon=epsilon, n_classes=n_classes, **options)

    def make(self, epsilon: float) -> Any:
        """The test suite's instance at ``epsilon``: ``label_bound=(-1, 1)`` or ``n_classes=3``,
        plus ``example``."""
        return self.build(epsilon, label_bound=(-1.0, 1.0), n_classes=3, **dict(self.example))

    def factory(self, candidate: Candidate) -> Callable[..., Any]:
        """``factory(epsilon=, label_bound= or n_classes=, ...)`` for one of its candidates."""
        cls: Callable[..., Any] = self.mechanism
        return functools.partial(cls, **dict(candidate.options))


@attrs.frozen(cache_hash=True)
class MechanismRegistry:
    """An immutable table of :class:`MechanismEntry` values, in the order ``mechanism="auto"``
    compares them (ties go to the earlier candidate). Class names are unique, and so are the
    candidate and ``mechanism=`` names within a task (``ValueError`` otherwise)."""

    entries: tuple[MechanismEntry, ...]

    def __attrs_post_init__(self) -> None:
        _unique("mechanism", [e.name for e in self.entries])
        for task in TASKS:
            mine = self.select(task)
            _unique(f"{task} candidate", [c.name for e in mine for c in e.auto])
            _unique(f"{task} mechanism= name", [n for e in mine for n in e.names])

    def with_entries(self, *entries: MechanismEntry) -> MechanismRegistry:
        """A new registry with ``entries`` after these (this one is unchanged)."""
        return MechanismRegistry((*self.entries, *entries))

    def select(
        self,
        task: Task | None = None,
        *,
        selectable: bool | None = None,
        publishable: bool | None = None,
    ) -> tuple[MechanismEntry, ...]:
        """The entries of ``task`` (``None``: both) that are (or are not) ``selectable`` by
        ``auto`` and ``publishable`` (``None``: either), in registry order."""
        return tuple(
            e
            for e in self.entries
            if (task is None or e.task == task)
            and (selectable is None or e.selectable == selectable)
            and (publishable is None or e.publishable == publishable)
        )

    def get(self, name: str) -> MechanismEntry:
        """The entry of the class named ``name``; ``ValueError`` naming the registered ones."""
        found = [e for e in self.entries if e.name == name]
        if not found:
            raise ValueError(
                f"mechanism must be one of {sorted(e.name for e in self.entries)}, got {name!r}"
            )
        return found[0]

    def named(self, name: str, task: Task) -> MechanismEntry:
        """The entry of ``task`` that the ``mechanism=`` name ``name`` selects (e.g.
        ``"paper"``); ``ValueError`` naming the allowed names."""
        found = [e for e in self.select(task) if name in e.names]
        if not found:
            raise ValueError(f"mechanism must be one of {self.names()}, got {name!r}")
        return found[0]

    def names(self) -> tuple[str, ...]:
        """Every ``mechanism=`` name besides ``"auto"``, in registry order, each once."""
        return tuple(dict.fromkeys(n for e in self.entries for n in e.names))

    def candidates(self, task: Task) -> tuple[tuple[Candidate, MechanismEntry], ...]:
        """What ``mechanism="auto"`` compares for ``task``, in order."""
        return tuple((c, e) for e in self.select(task) for c in e.auto)

    def candidate(self, name: str, task: Task) -> tuple[Candidate, MechanismEntry]:
        """The ``auto`` candidate named ``name``; ``ValueError`` naming the allowed ones."""
        table = self.candidates(task)
        for c, e in table:
            if c.name == name:
                return c, e
        raise ValueError(f"candidate must be one of {[c.name for c, _ in table]}, got {name!r}")


def _unique(what: str, names: list[str]) -> None:
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"each {what} may be registered once; repeated: {repeated}")


def _entry(cls: type[Any], task: Task, *auto: str, **kw: Any) -> MechanismEntry:
    return MechanismEntry(cls, task, tuple(Candidate(a) for a in auto), **kw)


@functools.cache
def mechanism_registry() -> MechanismRegistry:
    """The built-in mechanisms (module docstring): every one exactly once, ``auto``'s candidates
    first in the order it compares them (the papers' mechanism of each task leads)."""
    joint = tuple(Candidate(f"krr-joint/{k}", (("levels", k),)) for k in (2, 4))
    return MechanismRegistry(
        (
            _entry(RRLaplaceMechanism, "regression", "rr-laplace", names=("paper",)),
            _entry(OUELaplaceMechanism, "regression", "oue-laplace"),
            _entry(KRRLaplaceMechanism, "regression", "krr-laplace"),
            _entry(HadamardLaplaceMechanism, "regression", "hadamard-laplace"),
            _entry(DuchiMechanism, "regression", "rr-duchi"),
            _entry(PiecewiseMechanism, "regression", "rr-piecewise"),
            MechanismEntry(KRRJointMechanism, "regression", joint),
            _entry(LaplaceCellClassMechanism, "classification", "laplace", names=("paper",)),
            _entry(OUECellClassMechanism, "classification", "oue"),
            _entry(KRRCellClassMechanism, "classification", "krr"),
            _entry(LaplaceCellLabelMechanism, "regression"),
            _entry(LaplaceFeatureLabelMechanism, "regression", example=(("n_features", 2),)),
            _entry(SubsetLaplaceMechanism, "regression"),
            _entry(SubsetCellClassMechanism, "classification"),
            _entry(OLHLaplaceMechanism, "regression"),
            _entry(OLHCellClassMechanism, "classification"),
        )
    )
