"""Experiment protocols of the papers (more arrive with the experiments issue)."""

from ldptree.experiments._figure1 import Figure1Result, plot_figure1, run_figure1

__all__ = ["Figure1Result", "plot_figure1", "run_figure1"]
from ldptree.experiments._config import load_config
from ldptree.experiments._grids import Grid, grid_names, grid_preset
from ldptree.experiments._lpct_figure4 import Figure4Config, run_lpct_figure4
from ldptree.experiments._lpct_table import lpct_source, lpct_table_experiment
from ldptree.experiments._lpdt_figure2 import run_lpdt_figure2
from ldptree.experiments._methods import DEFAULT_METHODS
from ldptree.experiments._metrics import ACCURACY, MSE, Metric
from ldptree.experiments._private_validation import loss_release_certificate, privatize_losses
from ldptree.experiments._published import LPDT_PUBLISHED, lpdt_published
from ldptree.experiments._records import RunRecord, read_records
from ldptree.experiments._registry import Estimator, MethodRegistry, MethodSpec
from ldptree.experiments._report import write_report
from ldptree.experiments._reproduce import lpdt_table_experiment
from ldptree.experiments._runner import Experiment, run_experiment
from ldptree.experiments._seeds import derive_seed
from ldptree.experiments._splits import (
    DataSource,
    GivenPublicSplit,
    RandomSplit,
    Split,
    SyntheticSource,
    impute_from_public,
    public_levels,
)
from ldptree.experiments._summary import Entry, summarize
from ldptree.experiments._tables import markdown_report, markdown_table, wilcoxon_p
from ldptree.experiments._tuning import FixedParams, OracleTuning, PrivateTuning

__all__ += [
    "ACCURACY",
    "DEFAULT_METHODS",
    "LPDT_PUBLISHED",
    "MSE",
    "DataSource",
    "Entry",
    "Estimator",
    "Experiment",
    "Figure4Config",
    "FixedParams",
    "GivenPublicSplit",
    "Grid",
    "MethodRegistry",
    "MethodSpec",
    "Metric",
    "OracleTuning",
    "PrivateTuning",
    "RandomSplit",
    "RunRecord",
    "Split",
    "SyntheticSource",
    "derive_seed",
    "grid_names",
    "grid_preset",
    "impute_from_public",
    "load_config",
    "loss_release_certificate",
    "lpct_source",
    "lpct_table_experiment",
    "lpdt_published",
    "lpdt_table_experiment",
    "markdown_report",
    "markdown_table",
    "privatize_losses",
    "public_levels",
    "read_records",
    "run_experiment",
    "run_lpct_figure4",
    "run_lpdt_figure2",
    "summarize",
    "wilcoxon_p",
    "write_report",
]
