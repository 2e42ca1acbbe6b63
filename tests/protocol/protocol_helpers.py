"""A small published round shared by the protocol tests (curator side), and simulated holders."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ldptree.mechanisms import RRLaplaceMechanism
from ldptree.partitions import MaxEdgePartitioner, RangeScaler
from ldptree.protocol import HolderLedger, PrivacyPolicy, holder_report, publish

#: A holder's policy that accepts every round of these tests (epsilon <= 2).
POLICY = PrivacyPolicy(max_epsilon_per_round=4.0, max_epsilon_total=40.0)


def make_round(mechanism: Any = None) -> dict[str, Any]:
    """Curator side: an 8-cell data-free partition of a 2-feature box, as published JSON."""
    partition = MaxEdgePartitioner(max_depth=3).fit(np.empty((0, 2)))
    scaler = RangeScaler(lo=np.array([0.0, -1.0]), hi=np.array([10.0, 1.0]))
    if mechanism is None:
        mechanism = RRLaplaceMechanism(epsilon=2.0, label_bound=(0.0, 5.0))
    # through JSON text, as a holder receives it
    out: dict[str, Any] = json.loads(json.dumps(publish(partition, scaler, mechanism)))
    return out


def simulated_report(record_x: Any, label: Any, published: Any) -> dict[str, Any]:
    """The report of one simulated holder: its own fresh ledger, the tests' policy."""
    answer = holder_report(
        record_x, label, published, policy=POLICY, ledger=HolderLedger.in_memory()
    )
    return answer.report
