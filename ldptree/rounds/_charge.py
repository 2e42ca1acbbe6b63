"""What an estimator charges for its private round: the certificate of the mechanism it runs.

Before any private row is privatized, every estimator calls :func:`certified_spend` with its
mechanism and the published partition's size. The decision is
:func:`ldptree.accounting.admit`'s (certify the report law; admit a kit-derived sampler; refuse a
hand-written one unless wrapped in :class:`~ldptree.accounting.HandWritten`, whose sampler is
then tested first), and the fit

* refuses (``ValueError``) a mechanism that is not admitted, unless the estimator was built with
  ``allow_uncertified=True``;
* charges the certified claim: ``epsilon = cert.epsilon_claimed`` (the mechanism's ``epsilon``,
  which the certified bound ``cert.epsilon_bound`` does not exceed) and ``delta = cert.delta``.

A mechanism's self-declared ``spend`` is never what is charged. It is used only as the
breakdown into parts (e.g. "cell" and "label"), and only when its total equals the certified
epsilon; otherwise the fit is refused with a ``ValueError`` naming ``mechanism.spend``.

Real labels are certified on the label range widened by its width on each side,
``[lo - w, hi + w]`` with ``w = hi - lo``: private labels may lie outside the declared range, so
this also checks that the mechanism clips them. Certificates are memoised per *value* of the
mechanism (:func:`ldptree._memo.memoised`: a content fingerprint of a frozen mechanism's
fields), so a grid of fits verifies each configuration once, and a mechanism that is mutable or
hashed by identity is verified again at every fit.

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
from ldptree.accounting._account import LedgerScope, PrivacyAccount
from ldptree.accounting._admit import AdmissionError, admit, widened
from ldptree.accounting._ledger import PrivacyLedger
from ldptree.accounting._spend import PrivacySpend
from ldptree.accounting._verify import LDPCertificate, verify_ldp

__all__ = ["CertifiedSpend", "budget_ledger", "certified_spend", "charged_ledger"]

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


@functools.lru_cache(maxsize=512)
def _verified(mechanism: Any, n_cells: int, domain: tuple[float, float] | None) -> LDPCertificate:
    return verify_ldp(mechanism, n_cells=n_cells, label_bound=domain)


def certify(
    mechanism: Any, n_cells: int, label_bound: tuple[float, float] | None
) -> LDPCertificate:
    """``verify_ldp`` of ``mechanism`` for ``n_cells`` cells over the widened label range (no
    admission decision: :func:`admitted` makes it), memoised by the mechanism's value."""
    return memoised(_verified, mechanism, int(n_cells), widened(label_bound))


@functools.lru_cache(maxsize=512)
def _admitted(
    mechanism: Any, n_cells: int, label_bound: tuple[float, float] | None
) -> LDPCertificate:
    return admit(mechanism, n_cells=n_cells, label_bound=label_bound)


def admitted(
    mechanism: Any, n_cells: int, label_bound: tuple[float, float] | None
) -> LDPCertificate:
    """:func:`~ldptree.accounting.admit`'s certificate of ``mechanism`` for ``n_cells`` cells
    (``AdmissionError``, a ``ValueError``, when refused), memoised by the mechanism's value."""
    bound = None if label_bound is None else (float(label_bound[0]), float(label_bound[1]))
    return memoised(_admitted, mechanism, int(n_cells), bound)


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
    report law's finite domain is certified). ``ValueError`` when the mechanism is not admitted
    (:func:`~ldptree.accounting.admit`), unless ``allow_uncertified``.
    """
    if not isinstance(allow_uncertified, bool):
        raise TypeError(f"allow_uncertified must be True or False, got {allow_uncertified!r}")
    claim = float(mechanism.epsilon)
    try:
        cert = admitted(mechanism, int(n_cells), label_bound)
    except AdmissionError as err:
        if not allow_uncertified:
            raise
        return _uncertified(mechanism, claim, err.reason)
    assert cert.delta is not None  # admitted certificates have a delta
    declared = _declared(mechanism, cert.epsilon_claimed)
    parts = declared.parts if declared is not None else ()
    spend = PrivacySpend(epsilon=cert.epsilon_claimed, delta=cert.delta, parts=parts)
    entry = "one report per holder"
    if not cert.proven:
        entry += f" ({cert.status})"
    return CertifiedSpend(spend=spend, certificate=cert, entry=entry)


def _uncertified(mechanism: Any, claim: float, why: str) -> CertifiedSpend:
    declared = _declared(mechanism, claim)
    spend = declared if declared is not None else PrivacySpend(epsilon=claim)
    return CertifiedSpend(
        spend=spend,
        certificate=None,
        entry=f"one report per holder (UNCERTIFIED, allow_uncertified=True: {why})",
    )


def _scope(privacy_budget: Any) -> LedgerScope | None:
    if isinstance(privacy_budget, PrivacyAccount):
        return privacy_budget.scope()
    return privacy_budget if isinstance(privacy_budget, LedgerScope) else None


def budget_ledger(privacy_budget: Any) -> PrivacyLedger:
    """An empty ledger for a fit: capped at ``privacy_budget`` (an epsilon; ``None`` means no
    cap), or uncapped when ``privacy_budget`` is a :class:`~ldptree.accounting.LedgerScope` (or
    a :class:`~ldptree.accounting.PrivacyAccount`, meaning its every holder): the scope's caps
    apply when the fit charges it (:func:`charged_ledger`).

    Estimators record their release in it *before* any private row is privatized, so a release
    over the cap fails with a ``ValueError`` and nothing is spent. The cap is on epsilon only:
    the delta a certificate reports for the mechanism as sampled is recorded, not capped.
    """
    if privacy_budget is None or _scope(privacy_budget) is not None:
        return PrivacyLedger()
    return PrivacyLedger(
        budget=PrivacySpend(epsilon=check_positive(privacy_budget, "privacy_budget"), delta=1.0)
    )


def charged_ledger(privacy_budget: Any, charge: CertifiedSpend) -> PrivacyLedger:
    """The fit's own ledger with ``charge`` recorded (:func:`budget_ledger`); when
    ``privacy_budget`` is a scope (or an account) the charge is also recorded there, about the
    scope's holders. Either refusal (``ValueError``) comes before any release and leaves the
    account unchanged."""
    ledger = budget_ledger(privacy_budget).record(charge.entry, charge.spend)
    scope = _scope(privacy_budget)
    if scope is not None:
        scope.charge(charge.entry, charge.spend)
    return ledger
