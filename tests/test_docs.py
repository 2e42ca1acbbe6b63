"""Every ```python block of README.md and docs/**/*.md runs as written.

The blocks of one page share a namespace and run in order, in a temporary working directory (a
block may write files). The README and the tutorials run with warnings as errors: the library's
defaults, used as the tutorials use them, must not warn. A block fenced as ```python and
preceded by the line ``<!-- no-test -->`` is skipped (for a sketch that cannot run on its own,
e.g. it needs external data). Pages in ``SKETCH_PAGES`` are skipped whole until their blocks are
made runnable or marked.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Pages skipped whole (none: every page's blocks run, or are marked ``<!-- no-test -->``).
SKETCH_PAGES: set[str] = set()
PAGES = [
    page
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    if str(page.relative_to(ROOT)) not in SKETCH_PAGES
]
_BLOCK = re.compile(r"(<!-- no-test -->\n)?```python\n(.*?)```", flags=re.S)


def python_blocks(page: Path) -> list[str]:
    """The page's python blocks that are meant to run, in order."""
    return [code for skip, code in _BLOCK.findall(page.read_text()) if not skip]


PAGES_WITH_CODE = [p for p in PAGES if python_blocks(p)]


def must_be_quiet(page: Path) -> bool:
    """Pages whose code must emit no warning: the README and every tutorial."""
    return page.name == "README.md" or page.parent.name == "tutorials"


def test_pages_with_code_are_found() -> None:
    names = {p.name for p in PAGES_WITH_CODE}
    assert {"README.md", "figure1.md", "sklearn-pipeline.md", "inspect-and-save.md"} <= names
    assert {"configuration.md", "test-mechanism.md"} <= names
    assert sum(must_be_quiet(p) for p in PAGES_WITH_CODE) >= 9  # README and 8 tutorials


#: Pages whose code fits and audits many estimators (each tens of seconds on a fresh clone, where
#: every kernel shape compiles): with the tutorials, they run in the slow group.
LONG_PAGES = {
    "configuration.md",
    "writing-mechanisms.md",
    "privacy.md",
    "sklearn.md",
    "distributed.md",
    "mechanisms.md",
}


def _page_param(page: Path) -> Any:
    long = page.parent.name == "tutorials" or page.name in LONG_PAGES
    return pytest.param(
        page, id=str(page.relative_to(ROOT)), marks=pytest.mark.slow if long else ()
    )


def test_long_pages_exist() -> None:
    names = {p.name for p in PAGES_WITH_CODE}
    assert names >= LONG_PAGES, f"stale entries in LONG_PAGES: {sorted(LONG_PAGES - names)}"


@pytest.mark.parametrize("page", [_page_param(p) for p in PAGES_WITH_CODE])
def test_page_code_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    with warnings.catch_warnings():
        if must_be_quiet(page):
            warnings.simplefilter("error")
        for index, code in enumerate(python_blocks(page)):
            where = f"{page.relative_to(ROOT)} block {index + 1}"
            exec(compile(code, where, "exec"), namespace)
    assert os.getcwd() == str(tmp_path)
