"""``assert_ldp``: fail a test when a mechanism's epsilon-LDP claim cannot be certified.

A thin assertion around :func:`~ldptree.accounting.verify_ldp`. The report law, with the
sampling caveats it declares, must meet the mechanism's own claim (``law_holds``: ``delta``
defaults to 0, a pure claim); with ``max_delta`` the test accepts a sampler that only
approximates its declared law: the declared law must hold and the certified ``delta`` as sampled
must not exceed ``max_delta``.

What that proves depends on where the sampler comes from (``cert.provenance``). For a mechanism
built on the kit it is a proof about the code that runs (``cert.holds``). A hand-written
mechanism's sampler is not derived from its law: ``assert_ldp`` then also runs
:func:`~ldptree.accounting.check_sampler` against the law (when its channels are finite) and
fails when it rejects; passing is statistical evidence, never a proof, and the certificate says
so ("law certified, sampler tested, not proven").

The failure message is the certificate itself: the claim, the certified bound, the witness
records and report with the per-block split of the ratio, and every caveat.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import jax

from ldptree.accounting._admit import _untestable
from ldptree.accounting._sampler import check_sampler
from ldptree.accounting._verify import LDPCertificate, verify_ldp


def assert_ldp(
    mechanism: Any,
    *,
    n_cells: int,
    label_bound: Any = None,
    labels: Sequence[Any] | None = None,
    tolerance: float = 1e-9,
    max_delta: float | None = None,
    sampler_n: int = 5_000,
    key: Any = None,
) -> LDPCertificate:
    """Return the certificate, or raise ``AssertionError`` showing it (module docstring).

    ``sampler_n`` and ``key`` (default ``jax.random.key(0)``) are the sampler check's size and
    PRNG key for a hand-written mechanism.
    """
    cert = verify_ldp(
        mechanism, n_cells=n_cells, label_bound=label_bound, labels=labels, tolerance=tolerance
    )
    name = type(mechanism).__name__
    ok = cert.law_holds if max_delta is None else cert.declared_holds
    if not ok:
        raise AssertionError(
            f"{name} is not certified {cert.epsilon_claimed:.12g}-LDP with {n_cells} cells:\n{cert}"
        )
    if max_delta is not None and (cert.delta is None or cert.delta > max_delta):
        raise AssertionError(
            f"{name} as sampled has certified delta {cert.delta} > max_delta={max_delta:g}:\n{cert}"
        )
    if cert.proven or _untestable(mechanism.report_law(n_cells)):
        return cert
    bound = label_bound
    check = check_sampler(
        mechanism,
        n_cells,
        label_bound=bound,
        labels=labels,
        n=sampler_n,
        key=jax.random.key(0) if key is None else key,
    )
    cert = attrs.evolve(cert, sampler_check=check)
    if check.rejected:
        raise AssertionError(
            f"{name}'s hand-written sampler does not sample its certified law:\n{check}"
        )
    return cert
