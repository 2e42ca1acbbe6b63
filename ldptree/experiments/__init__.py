"""Experiment protocols of the papers (more arrive with the experiments issue)."""

from ldptree.experiments._figure1 import Figure1Result, plot_figure1, run_figure1

__all__ = ["Figure1Result", "plot_figure1", "run_figure1"]
