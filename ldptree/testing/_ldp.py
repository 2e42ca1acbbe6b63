"""``assert_ldp``: fail a test when a mechanism's epsilon-LDP claim cannot be certified.

A thin assertion around :func:`~ldptree.accounting.verify_ldp`. By default the certificate must
*hold*: the mechanism as implemented (what it samples) is ``(epsilon, delta)``-LDP at its own
claim (``delta`` defaults to 0, a pure claim). With ``max_delta`` the test accepts a sampler that
only approximates its declared law: the declared law must hold and the certified ``delta`` as
sampled must not exceed ``max_delta``. The failure message is the certificate itself: the claim,
the certified bound, the witness records and report with the per-block split of the ratio, and
every caveat.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ldptree.accounting._verify import LDPCertificate, verify_ldp


def assert_ldp(
    mechanism: Any,
    *,
    n_cells: int,
    label_bound: Any = None,
    labels: Sequence[Any] | None = None,
    tolerance: float = 1e-9,
    max_delta: float | None = None,
) -> LDPCertificate:
    """Return the certificate, or raise ``AssertionError`` showing it (module docstring)."""
    cert = verify_ldp(
        mechanism, n_cells=n_cells, label_bound=label_bound, labels=labels, tolerance=tolerance
    )
    name = type(mechanism).__name__
    ok = cert.holds if max_delta is None else cert.declared_holds
    if not ok:
        raise AssertionError(
            f"{name} is not certified {cert.epsilon_claimed:.12g}-LDP with {n_cells} cells:\n{cert}"
        )
    if max_delta is not None and (cert.delta is None or cert.delta > max_delta):
        raise AssertionError(
            f"{name} as sampled has certified delta {cert.delta} > max_delta={max_delta:g}:\n{cert}"
        )
    return cert
