"""The protocols' types catch mismatched components under ``mypy --strict``.

``tests/typing_snippets/good_mechanism.py`` (a user mechanism whose ``privatize`` -> ``summarize``
-> ``debias`` types fit together) must type-check cleanly; ``bad_mechanism.py`` has one mismatch
per marked line and each must be reported. mypy runs with the project's configuration and its
cache (the first run on a fresh checkout analyses the dependencies: tens of seconds).
"""

from __future__ import annotations

from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "tests" / "typing_snippets"


def _mypy(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    monkeypatch.chdir(ROOT)  # this checkout's ldptree is the one type-checked
    out, err, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "--no-error-summary",
            "--hide-error-context",
            str(SNIPPETS / name),
        ]
    )
    return out + err, status


def test_matching_mechanism_type_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    out, status = _mypy("good_mechanism.py", monkeypatch)
    assert status == 0, out


def test_mismatched_components_are_type_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    out, status = _mypy("bad_mechanism.py", monkeypatch)
    assert status == 1, out
    lines = [line for line in out.splitlines() if ": error:" in line]
    by_line = {int(line.split(":")[1]): line for line in lines}
    source = (SNIPPETS / "bad_mechanism.py").read_text().splitlines()
    marked = {i + 1: text for i, text in enumerate(source) if "# error:" in text}
    assert set(by_line) == set(marked), out
    expect = {
        "ReportT": 'Cannot infer value of type parameter "ReportT" of "LPDTRegressor"',
        "StatsT": 'Cannot infer value of type parameter "StatsT" of "LPCTClassifier"',
        "rule": 'Argument "rule" to "LPCTClassifier" has incompatible type "int"',
        "no report_law": '"verify_ldp" has incompatible type "DebiasesOtherStats"',
        "fitted": 'expression has type "float", variable has type "str"',
    }
    for number, text in marked.items():
        what = text.split("# error: ")[1]
        assert expect[what] in by_line[number], by_line[number]
