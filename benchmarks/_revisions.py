"""Shared by the before/after benchmarks: another revision's sources, and fresh child processes.

``export(rev, folder)`` unpacks ``git archive rev`` (no worktree to clean up);
``run_json_child(tree, code, *args)`` runs ``code`` in a fresh interpreter that imports ldptree
from ``tree`` (JAX's persistent cache off unless asked, so every process compiles) and returns the
JSON object the child prints last.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def export(rev: str, folder: Path) -> Path:
    """Unpack ``git archive rev`` into ``folder / "src"`` and return that folder."""
    archive = folder / "baseline.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "src", filter="data")
    return folder / "src"


def run_json_child(tree: Path, code: str, *args: object, cache: str = "off") -> dict[str, Any]:
    """The last stdout line of ``python -c code args...`` run against ``tree``, parsed as JSON;
    ``cache`` is the child's ``LDPTREE_JAX_CACHE`` (off by default, or a cache folder)."""
    # the tree first; a PYTHONPATH already set (packages installed beside, e.g. a peer) after it
    paths = [str(tree), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), LDPTREE_JAX_CACHE=cache)
    out = subprocess.run(
        [sys.executable, "-c", code, *(str(a) for a in args)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result
