"""A holder process of the end-to-end test: reads only the published file and its own records.

Usage: ``python holder_worker.py PUBLISHED RECORDS.npz OUT.jsonl`` (one report per line). Each
record is a simulated holder with its own in-memory ledger.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from protocol_helpers import simulated_report

from ldptree.protocol import load_published


def main(published_path: str, records_path: str, out_path: str) -> None:
    with open(published_path) as f:
        published = load_published(json.load(f))  # validated and re-certified once
    records = np.load(records_path)
    with open(out_path, "w") as out:
        for x, y in zip(records["x"], records["y"], strict=True):
            out.write(json.dumps(simulated_report(x, float(y), published)) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
