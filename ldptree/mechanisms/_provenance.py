"""Where a mechanism's sampler comes from: derived from its certified law, or written by hand.

:func:`~ldptree.accounting.verify_ldp` certifies a mechanism's *report law*. Whether the code
that runs samples that law is a different question, and the answer decides what a certificate may
say about the mechanism *as implemented*:

* ``"kit"``: a :class:`~ldptree.mechanisms.KitMechanism` whose sampler (``privatize``,
  ``privatize_words``, ``privatize_summarize`` and everything they call) and ``report_law`` are
  the kit's own, built from vetted parts only: the library's label encodings, release kinds and
  noises, and a plain ``NamedTuple`` report type. The kit derives the sampler and the law from
  the same noise objects and tables, so the certified law is the sampled law by construction.
  A subclass may declare (``labels``, ``releases``, ``budget_parts``) and post-process on the
  curator's side (``debias``, ``summarize``, ...); overriding anything on the sampling path makes
  it hand-written.
* ``"library"``: one of the library's own mechanisms written outside the kit from the kit's exact
  sampling parts and the same noise objects as its law (the DECONV feature release), used as is
  (its exact class, not a subclass).
* ``"hand-written"``: anything else. Its law can be certified, but that ``privatize`` samples it
  can only be *tested* (:func:`~ldptree.accounting.check_sampler`), never proven: its
  certificate says "law certified, sampler tested, not proven".
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Provenance", "provenance"]

#: Kit methods a subclass may override without leaving the kit: declarations (read back as
#: vetted data) and the curator's post-processing, which never sees a private record.
KIT_OVERRIDABLE = frozenset(
    {
        "labels",
        "releases",
        "budget_parts",
        "spend",
        "debias",
        "summarize",
        "stat_names",
        "summary_stats",
        "simulate_summary",
        "record_counts",
        "simulate_counts",
        "log_prob",
        "report_type",
    }
)
#: Attribute hooks that would let a class answer for the kit's methods.
_HOOKS = ("__getattribute__", "__getattr__")


@attrs.frozen
class Provenance:
    """``kind`` (``"kit"``, ``"library"`` or ``"hand-written"``, module docstring) and why."""

    kind: str
    reason: str

    @property
    def proven(self) -> bool:
        """The sampler is derived from the certified law (kit or library), not hand-written."""
        return self.kind != "hand-written"


def _library(cls: type) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return module == "ldptree" or module.startswith("ldptree.")


def _plain_namedtuple(cls: Any) -> bool:
    """A class made by ``typing.NamedTuple``/``collections.namedtuple`` and nothing more (a
    subclass could rewrite the arrays it is built from)."""
    return (
        isinstance(cls, type)
        and cls.__mro__[1:] == (tuple, object)
        and isinstance(getattr(cls, "_fields", None), tuple)
    )


def _library_mechanisms() -> tuple[type, ...]:
    from ldptree.mechanisms._laplace_features import LaplaceFeatureLabelMechanism

    return (LaplaceFeatureLabelMechanism,)


def _shadowed(mechanism: Any, names: frozenset[str] | set[str]) -> list[str]:
    """Kit methods replaced on the instance itself (an unslotted class's ``__dict__``)."""
    own = getattr(mechanism, "__dict__", None) or {}
    return sorted(set(own) & set(names))


def _kit_provenance(mechanism: Any) -> Provenance:
    from ldptree.mechanisms._kit import ClassLabels, KitMechanism, RealLabels

    protected = {
        name
        for name in vars(KitMechanism)
        if not name.startswith("__") and name not in KIT_OVERRIDABLE
    }
    overridden: list[str] = []
    for cls in type(mechanism).__mro__:
        if cls is KitMechanism:
            break
        own = set(vars(cls))
        hooks = [h for h in _HOOKS if h in own]
        if hooks:
            overridden.extend(f"{cls.__name__}.{h}" for h in hooks)
        if _library(cls):
            continue
        overridden.extend(f"{cls.__name__}.{name}" for name in sorted(own & protected))
    shadowed = _shadowed(mechanism, protected | KIT_OVERRIDABLE)
    if overridden or shadowed:
        what = ", ".join(overridden + [f"instance attribute {s}" for s in shadowed])
        return Provenance(
            "hand-written",
            f"{type(mechanism).__name__} replaces the kit's sampling path ({what}): its sampler "
            "is not derived from its law",
        )
    labels = mechanism.labels()
    if type(labels) not in (RealLabels, ClassLabels):
        return Provenance(
            "hand-written", f"labels() returns {type(labels).__name__}, not a kit label encoding"
        )
    parts: list[Any] = []
    for release in mechanism._checked_releases():
        parts.append(release)
        noise = getattr(release, "noise", None)
        if noise is not None and not callable(noise):
            parts.append(noise)
    foreign = sorted({type(p).__name__ for p in parts if not _library(type(p))})
    if foreign:
        names = ", ".join(foreign)
        return Provenance(
            "hand-written",
            f"{type(mechanism).__name__} is built from parts outside the library ({names}): "
            "their samplers are not vetted",
        )
    report_type = getattr(type(mechanism), "report_type", None)
    if report_type is not None and not _plain_namedtuple(report_type):
        return Provenance(
            "hand-written",
            f"report_type {getattr(report_type, '__name__', report_type)!r} is not a plain "
            "NamedTuple: it could rewrite the sampled arrays",
        )
    return Provenance(
        "kit", f"{type(mechanism).__name__}: sampler and law derived by the mechanism kit"
    )


def provenance(mechanism: Any) -> Provenance:
    """Where ``mechanism``'s sampler comes from (module docstring)."""
    from ldptree.mechanisms._kit import KitMechanism

    if isinstance(mechanism, KitMechanism):
        return _kit_provenance(mechanism)
    if type(mechanism) in _library_mechanisms():
        if _shadowed(mechanism, {"privatize", "report_law", "log_prob"}):
            return Provenance("hand-written", "an instance attribute replaces a method")
        return Provenance(
            "library",
            f"{type(mechanism).__name__}: the library's sampler, built from the kit's exact "
            "sampling parts and the noise objects of its law",
        )
    return Provenance(
        "hand-written",
        f"{type(mechanism).__name__} is not built on the mechanism kit: its privatize is "
        "hand-written, so that it samples the certified law can be tested, not proven",
    )
