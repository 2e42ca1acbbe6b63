"""The papers are cited as CITATION.cff says: titles and authors in docs/index.md and README.md.

CITATION.cff is the one record of the two papers (checked by hand against the papers' own title
pages); this test keeps the prose citations from drifting away from it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _references() -> list[dict[str, object]]:
    """``[{"title": ..., "authors": [(given, family), ...], "year": ...}]`` of CITATION.cff's
    ``references`` (a small reader for the file's own layout: one reference per ``- type:``)."""
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    block = text.split("\nreferences:\n", 1)[1]
    out = []
    for chunk in re.split(r"\n  - type: ", "\n" + block)[1:]:
        title = re.search(r'\n    title: "([^"]+)"', chunk)
        year = re.search(r"\n    year: (\d{4})", chunk)
        families = re.findall(r"- family-names: (.+)\n\s+given-names: (.+)", chunk)
        assert title and year and families, chunk
        out.append(
            {
                "title": title.group(1),
                "year": year.group(1),
                "authors": [(given.strip(), family.strip()) for family, given in families],
            }
        )
    return out


def _flat(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


REFERENCES = _references()


def test_citation_file_lists_both_papers():
    titles = [r["title"] for r in REFERENCES]
    assert titles == [
        "Decision Tree for Locally Private Estimation with Public Data",
        "Optimal Locally Private Nonparametric Classification with Public Data",
    ]


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda r: str(r["year"]))
def test_docs_index_cites_titles_and_authors(reference):
    text = _flat(ROOT / "docs" / "index.md")
    names = [f"{given} {family}" for given, family in reference["authors"]]
    authors = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    assert f'{authors}, "{reference["title"]}"' in text
    assert str(reference["year"]) in text.split(str(reference["title"]))[1][:200]


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda r: str(r["year"]))
def test_readme_bibtex_matches(reference):
    text = _flat(ROOT / "README.md")
    authors = " and ".join(f"{family}, {given}" for given, family in reference["authors"])
    entry = text.split(f"title = {{{reference['title']}}}")
    assert len(entry) == 2, "the title must appear once, as a bibtex title"
    assert f"author = {{{authors}}}" in entry[1][:200]
    assert f"year = {{{reference['year']}}}" in entry[1][:400]
