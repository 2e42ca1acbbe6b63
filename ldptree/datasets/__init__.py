"""Synthetic generators of both papers and (later) real-data loaders."""

from ldptree.datasets._lpdt import lpdt_figure1, lpdt_uniform, sine_regression_function

__all__ = ["lpdt_figure1", "lpdt_uniform", "sine_regression_function"]
