"""The command line: ``ldptree demo`` writes its table, plot and the plot's numbers, which make
its point; every command's help is plain text that describes every option."""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
import pytest

from ldptree.cli import main


@pytest.mark.slow
def test_demo_writes_table_and_plot(tmp_path, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the demo runs the library's defaults: no warning
        assert main(["demo", "--reps", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| public |" in out and "| no public |" in out
    assert "compiling kernels on the first fit" in out
    assert (tmp_path / "figure1.png").stat().st_size > 10_000
    assert "test MSE mean" in (tmp_path / "figure1.md").read_text()
    # the claim of the figure, read from its numbers: with public data the excess risk is lower,
    # and the plotted fit follows the truth where the data are, with cells there (not flat)
    data = json.loads((tmp_path / "figure1.json").read_text())
    assert data["settings"] == "defaults" and data["epsilon"] == 4.0 and data["reps"] == 2
    public, alone = data["arms"]["public"], data["arms"]["no public"]
    assert public["excess_risk"] < 0.85 * alone["excess_risk"]
    assert public["test_mse"] < alone["test_mse"]
    x, truth = np.asarray(data["x"]), np.asarray(data["truth"])
    dense = (x >= 0.25) & (x <= 0.75)  # within 1.6 sd of the mean 0.5: 89% of the data
    error = {
        arm: float(np.mean((np.asarray(data["arms"][arm]["curve"])[dense] - truth[dense]) ** 2))
        for arm in ("public", "no public")
    }
    assert error["public"] < error["no public"]
    left = (x >= 0.25) & (x < 0.5)
    assert len(set(np.asarray(public["curve"])[left].tolist())) >= 4


@pytest.mark.parametrize("argv", [["demo", "--reps", "1"], ["demo", "--epsilon", "0"], []])
def test_bad_arguments_exit_with_usage(argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


@pytest.mark.parametrize("command", [[], ["demo"], ["reproduce"], ["run"]])
def test_help_is_plain_text_describing_every_option(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for markup in ("``", ":func:", ":class:", ":mod:", ":data:"):
        assert markup not in text
    if command == ["reproduce"]:
        assert "--tuning" in text and "privatized validation losses" in text


def test_every_option_has_help_text():
    from ldptree.cli import build_parser

    parsers = _parsers(build_parser())
    assert len(parsers) == 4  # ldptree, demo, reproduce, run
    for p in parsers:
        for action in p._actions:
            if not isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                assert action.help, f"{p.prog} {action.option_strings or action.dest} has no help"
