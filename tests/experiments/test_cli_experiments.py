"""``ldptree reproduce lpdt-table --quick`` and ``ldptree run CONFIG.toml`` end to end."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest

from ldptree.cli import main
from ldptree.experiments import read_records


def quiet(argv: list[str]) -> int:
    """``main(argv)`` with warnings as errors (the library's quick runs must not warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return main(argv)


HEADER = "name,file,task,n,d,target_columns,categorical_feature_columns\n"


def _csv(n: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    lines = ["x1,x2,kind,target"]
    for _ in range(n):
        x1, x2 = rng.uniform(size=2)
        kind = rng.choice(["a", "b", "?"])
        y = np.sin(6 * x1) + (kind == "a") + rng.normal(0, 0.3)
        x2_text = "" if rng.uniform() < 0.05 else f"{x2:.4f}"
        lines.append(f"{x1:.4f},{x2_text},{kind},{y:.4f}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def unseen_folder(tmp_path: Path) -> Path:
    root = tmp_path / "unseen"
    root.mkdir()
    (root / "alpha.csv").write_text(_csv(400, 0))
    (root / "beta.csv.gz").write_bytes(gzip.compress(_csv(500, 1).encode()))
    (root / "big.csv").write_text(_csv(900, 2))
    (root / "manifest.csv").write_text(
        HEADER
        + "alpha,alpha.csv,regression,400,3,target,kind\n"
        + "beta,beta.csv.gz,regression,500,3,target,kind\n"
        + "big,big.csv,regression,900,3,target,kind\n"
    )
    return root


@pytest.mark.slow
def test_reproduce_quick_on_a_folder_never_seen(unseen_folder, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["reproduce", "lpdt-table", "--quick", "--reps", "2", "--data-dir", str(unseen_folder)]
    assert quiet([*argv, "--out", str(out)]) == 0
    records = read_records(out / "runs.csv")
    # quick: the two smallest datasets, epsilon 2, two grid points (2 repetitions asked), and
    # both LPDT variants (max-edge and CART)
    assert {r.dataset for r in records} == {"alpha", "beta"}
    assert {r.method for r in records} == {"lpdt-m", "lpdt-v"}
    assert len(records) == 2 * 2 * 2 * 2 and {r.epsilon for r in records} == {2.0}
    assert (out / "privacy_utility.png").stat().st_size > 5_000
    assert (out / "lpdt-m_max_depth.png").is_file()
    assert main([*argv, "--out", str(out)]) == 0
    assert "nothing to do" in capsys.readouterr().err
    assert quiet([*argv, "--out", str(out), "--tuning", "private"]) == 0
    report = (out / "results.md").read_text()
    assert "LPDT-M (oracle, non-private tuning)" in report and "LPDT-M (private tuning)" in report
    assert "| alpha |" in report and "| beta |" in report


def test_reproduce_quick_on_real_data(data_dir, tmp_path):
    argv = ["reproduce", "lpdt-table", "--quick", "--datasets", "algerian_forest_fires"]
    assert quiet([*argv, "--reps", "2", "--data-dir", str(data_dir), "--out", str(tmp_path)]) == 0
    records = read_records(tmp_path / "runs.csv")
    assert len(records) == 2 * 4 and all(r.n_public == 24 and r.n_test == 48 for r in records)
    assert "paper lpdt-m" in (tmp_path / "results.md").read_text()


def test_run_config_with_unseen_dataset_and_synthetic_source(unseen_folder, tmp_path):
    config = tmp_path / "exp.toml"
    config.write_text(
        f"""
name = "custom"
reps = 5
epsilons = [2, 8]
methods = ["lpdt-m"]
data_dir = "{unseen_folder}"
out = "results"

[[sources]]
dataset = "big"
ratios = [2, 6, 2]

[[sources]]
synthetic = "lpdt-uniform"
d = 2
sizes = [100, 600, 200]

[tuning]
mode = "fixed"
params = {{ max_depth = 2, min_samples_leaf = 5 }}
"""
    )
    assert main(["run", str(config), "--quick"]) == 0
    records = read_records(tmp_path / "results" / "runs.csv")
    # quick: 2 repetitions, the first epsilon
    assert sorted((r.dataset, r.rep) for r in records) == [
        ("big", 0),
        ("big", 1),
        ("lpdt-uniform", 0),
        ("lpdt-uniform", 1),
    ]
    assert {r.n_public for r in records if r.dataset == "big"} == {180}
    assert all(r.epsilon == 2.0 and r.tuning == "fixed" for r in records)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('methods = ["lpdt-m"]\n', "'sources' is required"),
        (
            'methods = ["lpdt-m"]\nsurprise = 1\n[[sources]]\nsynthetic = "lpdt-figure1"\n',
            "unknown",
        ),
        ('methods = ["lpdt-m"]\n[[sources]]\nsynthetic = "x"\n', "synthetic must be"),
        (
            'methods = ["lpdt-m"]\n[[sources]]\nsynthetic = "lpdt-figure1"\n'
            '[tuning]\nmode = "cv"\n',
            "mode",
        ),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path, capsys, text, message):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    assert main(["run", str(config), "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err


def test_reproduce_rejects_bad_arguments():
    for argv in (
        ["reproduce", "lpdt-figure9"],
        ["reproduce", "lpdt-table", "--reps", "1"],
        ["reproduce", "lpdt-table", "--epsilons", "0"],
        ["reproduce", "lpdt-table", "--tuning", "cv"],
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2


@pytest.mark.parametrize("name", ["lpdt-figure2a.toml", "lpdt-figure2b.toml"])
def test_example_configs_parse(name):
    from ldptree.experiments import load_config

    path = Path(__file__).resolve().parents[2] / "docs" / "examples" / name
    experiment, out = load_config(path)
    assert experiment.epsilons == (3.0, 4.0, 6.0, 8.0) and experiment.reps == 20
    assert out is None and experiment.sources[0].describe()["sizes"] == [2000, 6000, 2000]
