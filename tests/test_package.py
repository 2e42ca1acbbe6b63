"""The package orients: subpackages are reachable lazily from ``import ldptree``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ldptree

SUBPACKAGES = [
    "accounting",
    "baselines",
    "datasets",
    "ensembles",
    "experiments",
    "inspection",
    "preprocessing",
    "rounds",
    "testing",
]


@pytest.mark.slow
def test_subpackages_reachable_after_import_ldptree() -> None:
    code = "import ldptree\n" + "\n".join(
        f"assert ldptree.{name}.__name__ == 'ldptree.{name}'" for name in SUBPACKAGES
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ldptree.nope  # type: ignore[attr-defined]
    assert "datasets" in dir(ldptree)
    assert ldptree.__doc__ is not None and "Partitioner" in ldptree.__doc__


def test_package_is_typed() -> None:
    from pathlib import Path

    assert (Path(ldptree.__file__).parent / "py.typed").is_file()
