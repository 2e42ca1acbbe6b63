"""A small published round shared by the protocol tests (curator side)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ldptree.mechanisms import RRLaplaceMechanism
from ldptree.partitions import MaxEdgePartitioner, RangeScaler
from ldptree.protocol import publish


def make_round(mechanism: Any = None) -> dict[str, Any]:
    """Curator side: an 8-cell data-free partition of a 2-feature box, as published JSON."""
    partition = MaxEdgePartitioner(max_depth=3).fit(np.empty((0, 2)))
    scaler = RangeScaler(lo=np.array([0.0, -1.0]), hi=np.array([10.0, 1.0]))
    if mechanism is None:
        mechanism = RRLaplaceMechanism(epsilon=2.0, label_bound=(0.0, 5.0))
    # through JSON text, as a holder receives it
    out: dict[str, Any] = json.loads(json.dumps(publish(partition, scaler, mechanism)))
    return out
