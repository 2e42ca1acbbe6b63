"""The curator's collector process of the end-to-end test.

Usage: ``python collector_worker.py STORE PUBLISHED STALL FILE...``: ingests the files in order,
printing ``committed NAME`` after each (``skipped NAME`` for one committed before). With
``STALL >= 0`` it stops after committing ``STALL`` files, submits half of the next file's
reports without committing them, prints ``stalled`` and waits to be killed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ldptree.protocol import Collector


def main(store: str, published_path: str, stall: str, *files: str) -> None:
    collector = Collector(store, json.loads(Path(published_path).read_text()))
    for i, name in enumerate(files):
        if i == int(stall):
            lines = Path(name).read_bytes().split(b"\n")
            for line in lines[: len(lines) // 2]:
                collector.submit(line)
            print("stalled", flush=True)
            time.sleep(600)
        accepted = collector.ingest_file(name)
        print("skipped" if accepted is None else "committed", Path(name).name, flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
