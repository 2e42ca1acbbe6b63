"""ldptree.testing imports without hypothesis; a strategy then names the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

_SCRIPT = """
import sys
sys.modules["hypothesis"] = None  # as if not installed
import ldptree.testing as t
assert callable(t.assert_ldp)
try:
    t.partitions
except ImportError as err:
    assert "ldptree[testing]" in str(err), err
else:
    raise AssertionError("no ImportError")
"""


@pytest.mark.slow
def test_testing_imports_without_hypothesis() -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_strategies_available_with_hypothesis() -> None:
    import ldptree.testing as t

    assert callable(t.partitions)
