"""The command line: ``ldptree demo`` writes its table and plot."""

from __future__ import annotations

import pytest

from ldptree.cli import main


@pytest.mark.slow
def test_demo_writes_table_and_plot(tmp_path, capsys):
    assert main(["demo", "--reps", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| public |" in out and "| no public |" in out
    assert (tmp_path / "figure1.png").stat().st_size > 10_000
    assert "test MSE mean" in (tmp_path / "figure1.md").read_text()


@pytest.mark.parametrize("argv", [["demo", "--reps", "1"], ["demo", "--epsilon", "0"], []])
def test_bad_arguments_exit_with_usage(argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
