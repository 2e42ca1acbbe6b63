"""Estimators certify the mechanism they run and charge its certificate, never its own word."""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
import pytest

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.accounting import LDPCertificate, PrivacySpend
from ldptree.baselines import DECONVRegressor, PHISTClassifier, PHISTRegressor
from ldptree.mechanisms import Geometric, LaplaceCellClassMechanism, RRLaplaceMechanism
from ldptree.rounds._charge import certified_spend


@attrs.frozen
class LowDeclaredSpend(RRLaplaceMechanism):
    """Runs and describes RR + Laplace at its epsilon, but declares a tiny spend."""

    @property
    def spend(self) -> PrivacySpend:
        return PrivacySpend(0.1)


@attrs.frozen
class SpendsTwiceItsClaim(RRLaplaceMechanism):
    """Samples (and describes) the cell and label at twice the budget it claims."""

    @property
    def cell_epsilon(self) -> float:
        return 2.0 * self.budget_split * self.epsilon

    @property
    def label_epsilon(self) -> float:
        return 2.0 * (1.0 - self.budget_split) * self.epsilon

    @property
    def spend(self) -> PrivacySpend:
        return PrivacySpend(self.epsilon)  # what it claims


class NoLaw:
    """A protocol-conforming mechanism without a report law (delegates to RR + Laplace)."""

    def __init__(self, epsilon: float) -> None:
        self._inner = RRLaplaceMechanism(epsilon=epsilon, label_bound=(0.0, 1.0))
        self.epsilon = epsilon

    def privatize(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.privatize(*args, **kwargs)

    def summarize(self, *args: Any) -> Any:
        return self._inner.summarize(*args)

    def debias(self, *args: Any) -> Any:
        return self._inner.debias(*args)

    def log_prob(self, *args: Any) -> float:
        return self._inner.log_prob(*args)


def _data(n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=n)
    return X, y, X[:80], np.clip(y[:80], 0.0, 1.0)


def test_lpdt_charges_the_certificate_and_records_it():
    X, y, Xq, yq = _data()
    fit = LPDTRegressor(epsilon=2.0, max_depth=2, label_bound=(0.0, 1.0), random_state=0)
    fit.fit(X, y, X_public=Xq, y_public=yq)
    cert = fit.privacy_certificate_
    assert isinstance(cert, LDPCertificate) and cert.holds
    assert fit.privacy_.epsilon == cert.epsilon_claimed == 2.0
    # delta of the mechanism as sampled (float32 Laplace today; 0 for an exact sampler)
    assert fit.privacy_.delta == cert.delta and cert.delta is not None
    assert math.isclose(sum(e for _, e in fit.privacy_.parts), 2.0)


def test_a_self_declared_spend_is_not_charged():
    X, y, Xq, yq = _data()
    mech = LowDeclaredSpend(epsilon=4.0, label_bound=(0.0, 1.0))
    fit = LPDTRegressor(epsilon=4.0, max_depth=2, mechanism=mech, privacy_budget=0.5)
    with pytest.raises(ValueError, match=r"mechanism\.spend"):
        fit.fit(X, y, X_public=Xq, y_public=yq)
    # without a budget the same mechanism is refused as well: its spend misreports the claim
    with pytest.raises(ValueError, match=r"mechanism\.spend"):
        LPDTRegressor(epsilon=4.0, max_depth=2, mechanism=mech).fit(X, y, X_public=Xq, y_public=yq)


def test_a_mechanism_spending_twice_its_claim_is_refused():
    X, y, Xq, yq = _data()
    mech = SpendsTwiceItsClaim(epsilon=1.0, label_bound=(0.0, 1.0))
    with pytest.raises(ValueError, match="does not hold"):
        LPDTRegressor(epsilon=1.0, max_depth=2, mechanism=mech).fit(X, y, X_public=Xq, y_public=yq)
    # opted out: the fit runs and records that it is uncertified (charged the declared epsilon)
    fit = LPDTRegressor(
        epsilon=1.0, max_depth=2, mechanism=mech, allow_uncertified=True, random_state=0
    ).fit(X, y, X_public=Xq, y_public=yq)
    assert fit.privacy_certificate_ is None
    assert fit.privacy_.epsilon == 1.0
    assert "UNCERTIFIED" in fit.privacy_ledger_.entries[0].name


def test_a_mechanism_without_report_law_needs_the_opt_out():
    X, y, Xq, yq = _data()
    with pytest.raises(ValueError, match="report_law"):
        LPDTRegressor(epsilon=1.0, max_depth=2, mechanism=NoLaw(1.0)).fit(
            X, y, X_public=Xq, y_public=yq
        )
    fit = LPDTRegressor(
        epsilon=1.0, max_depth=2, mechanism=NoLaw(1.0), allow_uncertified=True, random_state=0
    ).fit(X, y, X_public=Xq, y_public=yq)
    assert fit.privacy_certificate_ is None and fit.privacy_.epsilon == 1.0
    assert "UNCERTIFIED" in str(fit.privacy_ledger_)


def test_classifiers_and_histograms_record_certificates():
    X, y, Xq, yq = _data()
    labels, labels_q = (y > 0.5).astype(int), (yq > 0.5).astype(int)
    fits = [
        LPCTClassifier(epsilon=1.0, max_depth=2, random_state=0).fit(
            X, labels, X_public=Xq, y_public=labels_q
        ),
        PHISTClassifier(epsilon=1.0, num_cell=3, random_state=0).fit(
            X, labels, X_public=Xq, y_public=labels_q
        ),
        PHISTRegressor(epsilon=1.0, num_cell=3, random_state=0).fit(X, y, X_public=Xq, y_public=yq),
        DECONVRegressor(1.0, random_state=0).fit(X, y, X_public=Xq, y_public=yq),
    ]
    for fit in fits:
        cert = fit.privacy_certificate_
        assert cert.holds and fit.privacy_.epsilon == 1.0 and fit.privacy_.delta == cert.delta


def test_lpct_refuses_an_uncertified_mechanism():
    X, y, Xq, yq = _data()
    labels, labels_q = (y > 0.5).astype(int), (yq > 0.5).astype(int)

    @attrs.frozen
    class HalfBeta(LaplaceCellClassMechanism):
        @property
        def noise(self) -> Geometric:
            return Geometric(self.epsilon / 2.0, span=1)  # half the noise the claim needs

    with pytest.raises(ValueError, match="does not hold"):
        LPCTClassifier(epsilon=1.0, max_depth=2, mechanism=HalfBeta(epsilon=1.0)).fit(
            X, labels, X_public=Xq, y_public=labels_q
        )


def test_certificates_are_cached_per_configuration():
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=(0.0, 1.0))
    a = certified_spend(mech, n_cells=8, label_bound=(0.0, 1.0))
    b = certified_spend(
        RRLaplaceMechanism(epsilon=1.0, label_bound=(0.0, 1.0)), n_cells=8, label_bound=(0.0, 1.0)
    )
    assert a.certificate is b.certificate  # equal mechanisms share one verification
    c = certified_spend(mech, n_cells=9, label_bound=(0.0, 1.0))
    assert c.certificate is not a.certificate
