"""``admit``: the decision to run a mechanism on private data, made before any private row.

Every estimator (and the protocol's ``publish``) asks :func:`admit` whether it may run a
mechanism over ``n_cells`` cells. It certifies the report law (:func:`verify_ldp`) and then:

* a mechanism whose law fails its claim, or that has no report law, is refused;
* a mechanism whose sampler is derived from its law (the kit's, or the library's own:
  :class:`~ldptree.accounting.Provenance`) is admitted: its certificate holds *as implemented*;
  nothing is sampled (cheap: the certificate is memoised per mechanism value);
* a hand-written mechanism is refused, unless the user opts in explicitly by wrapping it:
  ``HandWritten(mechanism)``. Then its sampler is tested (:func:`check_sampler`, at the fit's
  number of cells, labels across and beyond the declared range) and admitted only when no test
  rejects; its certificate says "law certified, sampler tested, not proven" and carries the
  tests' evidence. A law the tests cannot reach (continuous channels, feature releases) is
  refused: there would be no evidence at all.

``ValueError`` (:class:`AdmissionError`) says why a mechanism is refused; estimators turn it into
an uncertified run only with ``allow_uncertified=True``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import jax

from ldptree._validation import check_int, check_real
from ldptree.accounting._channels import FiniteChannel
from ldptree.accounting._law import FeatureBlock, IndexBlock, VerifiableMechanism
from ldptree.accounting._sampler import check_sampler
from ldptree.accounting._verify import LDPCertificate, verify_ldp

__all__ = ["AdmissionError", "HandWritten", "admit"]


class AdmissionError(ValueError):
    """A mechanism is refused; ``reason`` is a short form for a ledger entry."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _positive_int(value: Any) -> int:
    return check_int(value, "n", minimum=100)


def _check_alpha(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0.0 < check_real(value, attribute.name) < 1.0:
        raise ValueError(f"{attribute.name} must lie strictly between 0 and 1, got {value!r}")


@attrs.frozen
class HandWritten:
    """The explicit opt-in to run a hand-written ``mechanism`` on private data.

    A mechanism not built on the mechanism kit has a sampler nobody derived from its law, so
    estimators refuse it. Wrapped, it is admitted once its sampler passes
    :func:`~ldptree.accounting.check_sampler` (``n`` holders per batch and sweep, PRNG seed
    ``seed``, family-wise level ``alpha``), run at the fit's number of cells before any private
    row is read; the fit's certificate then says "law certified, sampler tested, not proven".
    Passing is statistical evidence, not a proof (``check_sampler`` says what it cannot see).

    The wrapper behaves as the mechanism (every attribute is the mechanism's).
    """

    mechanism: Any
    n: int = attrs.field(default=20_000, converter=_positive_int)
    seed: int = attrs.field(default=0, converter=int)
    alpha: float = attrs.field(default=1e-6, converter=float, validator=_check_alpha)

    def __getattr__(self, name: str) -> Any:
        # only called for attributes the wrapper lacks; never for its own fields or dunders
        # (copying and pickling look those up before the fields are set)
        if name.startswith("__") or name in ("mechanism", "n", "seed", "alpha"):
            raise AttributeError(name)
        return getattr(self.mechanism, name)


def _untestable(law: Any) -> list[str]:
    """Blocks whose sampler :func:`check_sampler` cannot test."""
    out = []
    for block in law.blocks:
        if isinstance(block, FeatureBlock):
            out.append(f"{block.name} (a feature release: records carry features)")
        elif not isinstance(block, IndexBlock) and not isinstance(block.channel, FiniteChannel):
            out.append(f"{block.name} (a continuous channel: no float sampler realises it)")
    return out


def widened(label_bound: Any) -> tuple[float, float] | None:
    """``[lo - w, hi + w]`` with ``w = hi - lo``: the range a real-label certificate covers, so
    that it also checks that the mechanism clips labels outside the declared range."""
    if label_bound is None:
        return None
    lo, hi = (float(b) for b in label_bound)
    return (lo - (hi - lo), hi + (hi - lo))


def admit(
    mechanism: Any,
    *,
    n_cells: int,
    label_bound: tuple[float, float] | None = None,
    labels: Sequence[Any] | None = None,
) -> LDPCertificate:
    """The certificate under which ``mechanism`` may run over ``n_cells`` cells, or
    :class:`AdmissionError` (a ``ValueError``) saying why it may not (module docstring).

    ``label_bound``: the declared real-label range (certified over its widening
    :func:`widened`; the sampler tests sweep it and beyond); ``None`` for class labels, whose
    finite domain is the report law's (or ``labels``).
    """
    opted = isinstance(mechanism, HandWritten)
    inner = mechanism.mechanism if opted else mechanism
    name = type(inner).__name__
    claim = float(inner.epsilon)
    if not isinstance(inner, VerifiableMechanism):
        raise AdmissionError(
            f"{name} has no report_law, so its epsilon={claim:.6g} cannot be certified; give "
            "it a report_law (see ldptree.accounting.ReportLaw) or pass allow_uncertified=True "
            "to run it uncertified",
            "no report_law",
        )
    cert = verify_ldp(inner, n_cells=n_cells, label_bound=widened(label_bound), labels=labels)
    if not cert.law_holds or cert.delta is None:
        raise AdmissionError(
            f"the certificate of {name} does not hold: it claims "
            f"epsilon={cert.epsilon_claimed:.12g} but its report law is certified only up to "
            f"epsilon={cert.epsilon_bound:.12g} for n_cells={n_cells} (witness: "
            f"{cert.witness.record} vs {cert.witness.other}); fix the mechanism or pass "
            "allow_uncertified=True to run it uncertified",
            f"certificate fails: bound {cert.epsilon_bound:.6g} > claim",
        )
    if cert.proven:
        return cert
    if not opted:
        raise AdmissionError(
            f"{name} is hand-written ({cert.provenance.reason}): its report law is certified, "
            "but nothing proves that privatize samples it. Build it on the mechanism kit "
            "(ldptree.mechanisms.KitMechanism), or opt in explicitly with "
            "ldptree.accounting.HandWritten(mechanism) to run it after its sampler is tested "
            "(law certified, sampler tested, not proven), or pass allow_uncertified=True",
            "hand-written sampler, not opted in",
        )
    untestable = _untestable(inner.report_law(n_cells))
    if untestable:
        raise AdmissionError(
            f"{name} is hand-written and its sampler cannot be tested against its law: "
            f"{', '.join(untestable)}; build it on the mechanism kit, or pass "
            "allow_uncertified=True to run it uncertified",
            "hand-written sampler that cannot be tested",
        )
    check = check_sampler(
        inner,
        n_cells,
        label_bound=label_bound,
        labels=labels,
        n=mechanism.n,
        key=jax.random.key(mechanism.seed),
        alpha=mechanism.alpha,
    )
    if check.rejected or check.n_tests == 0:
        raise AdmissionError(
            f"{name} is hand-written and its sampler does not sample its certified law: "
            f"{check}; fix privatize (or its report_law)",
            "hand-written sampler rejected by check_sampler",
        )
    return attrs.evolve(
        cert,
        sampler_check=check,
        notes=(
            *cert.notes,
            "admitted as HandWritten: law certified, sampler tested (check_sampler did not "
            "reject it), not proven",
        ),
    )
