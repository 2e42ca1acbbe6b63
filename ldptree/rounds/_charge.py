"""What an estimator charges for its private round: the certificate of the mechanism it runs.

Before any private row is privatized, every estimator calls :func:`certified_spend` with its
mechanism and the published partition's size. It runs :func:`~ldptree.accounting.verify_ldp`
on the mechanism's own report law and

* refuses (``ValueError``) a mechanism whose certificate does not hold, or that has no report
  law to certify, unless the estimator was built with ``allow_uncertified=True``;
* charges the certified claim: ``epsilon = cert.epsilon_claimed`` (the mechanism's ``epsilon``,
  which the certified bound ``cert.epsilon_bound`` does not exceed) and ``delta = cert.delta``,
  the delta of the mechanism *as sampled* (e.g. float32 Laplace noise with bounded support).

A mechanism's self-declared ``spend`` is never what is charged. It is used only as the
breakdown into parts (e.g. "cell" and "label"), and only when its total equals the certified
epsilon; otherwise the fit is refused with a ``ValueError`` naming ``mechanism.spend``.

Real labels are certified on the label range widened by its width on each side,
``[lo - w, hi + w]`` with ``w = hi - lo``: private labels may lie outside the declared range, so
this also checks that the mechanism clips them. Certificates are cached per
``(mechanism, n_cells, label range)`` for hashable mechanisms (the built-ins are frozen attrs
classes, compared by value), so a grid of fits verifies each configuration once.

With ``allow_uncertified=True`` (research on mechanisms that cannot be certified) the fit runs,
charges the mechanism's declared ``epsilon`` (and a declared ``spend``'s delta), and records
that it is uncertified: ``privacy_certificate_`` is then ``None`` and the ledger entry says so.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import attrs

from ldptree._memo import memoised
from ldptree._validation import check_positive
from ldptree.accounting._law import VerifiableMechanism
from ldptree.accounting._ledger import PrivacyLedger
from ldptree.accounting._spend import PrivacySpend
from ldptree.accounting._verify import LDPCertificate, verify_ldp

__all__ = ["CertifiedSpend", "budget_ledger", "certified_spend"]

#: Relative tolerance of "a declared spend's total equals the certified epsilon".
_SPEND_RTOL = 1e-9


@attrs.frozen(eq=False)
class CertifiedSpend:
    """What a fit charges (``spend``), the certificate behind it (``None``: uncertified) and
    the ledger entry's name."""

    spend: PrivacySpend
    certificate: LDPCertificate | None
    entry: str

    @property
    def certified(self) -> bool:
        return self.certificate is not None


def _widened(label_bound: tuple[float, float] | None) -> tuple[float, float] | None:
    if label_bound is None:
        return None
    lo, hi = (float(b) for b in label_bound)
    return (lo - (hi - lo), hi + (hi - lo))


@functools.lru_cache(maxsize=512)
def _cached(mechanism: Any, n_cells: int, domain: tuple[float, float] | None) -> LDPCertificate:
    return verify_ldp(mechanism, n_cells=n_cells, label_bound=domain)


def certify(
    mechanism: Any, n_cells: int, label_bound: tuple[float, float] | None
) -> LDPCertificate:
    """``verify_ldp`` of ``mechanism`` for ``n_cells`` cells over the widened label range
    (module docstring), cached when the mechanism is hashable."""
    return memoised(_cached, mechanism, n_cells, _widened(label_bound))


def _declared(mechanism: Any, epsilon: float) -> PrivacySpend | None:
    """The mechanism's declared ``spend``, checked to total ``epsilon`` (else ``ValueError``)."""
    try:
        spend = getattr(mechanism, "spend", None)
    except ValueError as err:
        raise ValueError(f"mechanism.spend is inconsistent: {err}") from None
    if spend is None:
        return None
    if not isinstance(spend, PrivacySpend):
        raise TypeError(
            f"mechanism.spend must be a PrivacySpend (or absent), got {type(spend).__name__}"
        )
    if not math.isclose(spend.epsilon, epsilon, rel_tol=_SPEND_RTOL, abs_tol=0.0):
        raise ValueError(
            f"mechanism.spend declares epsilon={spend.epsilon:.12g} but the mechanism spends "
            f"epsilon={epsilon:.12g}; a declared spend is only a breakdown of that epsilon "
            "into parts: make its parts add up to it, or drop it"
        )
    return spend


def certified_spend(
    mechanism: Any,
    *,
    n_cells: int,
    label_bound: tuple[float, float] | None = None,
    allow_uncertified: bool = False,
) -> CertifiedSpend:
    """The spend a fit charges for one report per holder (module docstring).

    ``label_bound`` is the real-label range the fit declares (``None`` for class labels: the
    report law's finite domain is certified). ``ValueError`` when the mechanism cannot be
    certified (no report law) or its certificate does not hold, unless ``allow_uncertified``.
    """
    if not isinstance(allow_uncertified, bool):
        raise TypeError(f"allow_uncertified must be True or False, got {allow_uncertified!r}")
    claim = float(mechanism.epsilon)
    if not isinstance(mechanism, VerifiableMechanism):
        if not allow_uncertified:
            raise ValueError(
                f"{type(mechanism).__name__} has no report_law, so its epsilon={claim:.6g} "
                "cannot be certified; give it a report_law (see ldptree.accounting.ReportLaw) "
                "or pass allow_uncertified=True to run it uncertified"
            )
        return _uncertified(mechanism, claim, "no report_law")
    cert = certify(mechanism, int(n_cells), label_bound)
    if not cert.holds or cert.delta is None:
        if not allow_uncertified:
            raise ValueError(
                f"the certificate of {type(mechanism).__name__} does not hold: it claims "
                f"epsilon={cert.epsilon_claimed:.12g} but its report law is certified only "
                f"up to epsilon={cert.epsilon_bound:.12g} for n_cells={n_cells} (witness: "
                f"{cert.witness.record} vs {cert.witness.other}); fix the mechanism or pass "
                "allow_uncertified=True to run it uncertified"
            )
        return _uncertified(
            mechanism, claim, f"certificate fails: bound {cert.epsilon_bound:.6g} > claim"
        )
    declared = _declared(mechanism, cert.epsilon_claimed)
    parts = declared.parts if declared is not None else ()
    spend = PrivacySpend(epsilon=cert.epsilon_claimed, delta=cert.delta, parts=parts)
    return CertifiedSpend(spend=spend, certificate=cert, entry="one report per holder")


def _uncertified(mechanism: Any, claim: float, why: str) -> CertifiedSpend:
    declared = _declared(mechanism, claim)
    spend = declared if declared is not None else PrivacySpend(epsilon=claim)
    return CertifiedSpend(
        spend=spend,
        certificate=None,
        entry=f"one report per holder (UNCERTIFIED, allow_uncertified=True: {why})",
    )


def budget_ledger(privacy_budget: Any) -> PrivacyLedger:
    """An empty ledger capped at ``privacy_budget`` (an epsilon; ``None`` means no cap).

    Estimators record their release in it *before* any private row is privatized, so a release
    over the cap fails with a ``ValueError`` and nothing is spent. The cap is on epsilon only:
    the delta a certificate reports for the mechanism as sampled is recorded, not capped.
    """
    if privacy_budget is None:
        return PrivacyLedger()
    return PrivacyLedger(
        budget=PrivacySpend(epsilon=check_positive(privacy_budget, "privacy_budget"), delta=1.0)
    )
