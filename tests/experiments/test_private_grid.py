"""Private tuning's default LPDT grid (size from n and eps) and the too-fine-grid warning."""

from __future__ import annotations

import json
import warnings

import pytest
from exp_helpers import source

from ldptree.experiments import (
    Experiment,
    Grid,
    PrivateTuning,
    grid_preset,
    read_records,
    run_experiment,
)
from ldptree.experiments._guards import disabled_guards
from ldptree.experiments._methods import DEFAULT_METHODS
from ldptree.experiments._private_grid import (
    affordable_candidates,
    grid_warning,
    lpdt_private_grid,
    selection_noise,
)


def test_candidates_grow_with_validation_holders_and_epsilon():
    # sigma_k / B = 2 k / (eps sqrt(n_v)) must be <= 1/200
    assert selection_noise(3, 10_000, 2.0) == pytest.approx(0.03)
    assert affordable_candidates(1_000, 2.0) == 1  # the LPDT paper's dataset sizes
    assert affordable_candidates(160_000, 8.0) == 3  # 6 / (8 * 400) = 0.0019
    assert affordable_candidates(160_000, 2.0) == 2  # k = 2: 4 / 800 = 0.005; k = 3: 0.0075
    assert affordable_candidates(40_000, 2.0) == 1  # k = 2: 4 / 400 = 0.01
    assert affordable_candidates(0, 8.0) == 1


def test_default_grid_is_one_guarded_depth_at_paper_sizes_and_three_when_affordable():
    small = lpdt_private_grid(720, 8, 2.0, 0.2)
    assert small.size == 1 and small.name == "lpdt-private-auto"
    (point,) = small.points()
    assert point["readout"] == "auto" and point["max_depth"] >= 1
    big = lpdt_private_grid(5_000_000, 4, 8.0, 0.2)
    depths = [p["max_depth"] for p in big.points()]
    assert len(depths) == 3 and depths == list(range(depths[0], depths[0] + 3))
    # more holders or budget never make the default tree shallower
    assert next(lpdt_private_grid(72_000, 8, 2.0, 0.2).points())["max_depth"] >= point["max_depth"]


def test_private_tuning_without_a_grid_fits_the_default_on_all_holders(tmp_path):
    experiment = Experiment("t", [source()], ["lpdt-m"], (2.0,), 2, PrivateTuning())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the default grid never warns about itself
        rows = read_records(run_experiment(experiment, tmp_path, progress=False))
    for row in rows:
        assert row.n_validation == 0 and row.n_train == 900 and row.private_pipeline
        ledger = json.loads(row.privacy)
        assert ledger["groups"] == {"training-0": 2.0}
        assert ledger["holder_epsilon"] == row.holder_epsilon == 2.0
    spec = DEFAULT_METHODS.get("lpdt-m")
    assert PrivateTuning().describe(spec, 900)["grid"].startswith("lpdt-private-auto")


def test_a_grid_too_fine_for_its_holders_warns_with_the_sizes(tmp_path):
    grid = Grid({"max_depth": (1, 2, 3, 4)})
    experiment = Experiment("t", [source()], ["lpdt-m"], (2.0,), 2, PrivateTuning({"lpdt-m": grid}))
    with pytest.warns(UserWarning, match=r"4-point grid .* 180 validation holders") as caught:
        run_experiment(experiment, tmp_path, progress=False)
    texts = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert any("4-point grid" in t and "180 validation holders" in t for t in texts)


def test_grid_warning_names_small_groups_and_is_silent_when_affordable():
    text = grid_warning(2, 1_000_000, 20, 1.0, "g")
    assert text is not None and "trains on 20 holders" in text and "validation" not in text
    assert grid_warning(2, 1_000_000, 100_000, 8.0, "g") is None
    assert grid_warning(1, 10, 10, 1.0, "g") is None


def test_methods_start_from_the_defaults_and_paper_presets_name_the_papers_settings():
    for name in ("lpdt-m", "lpdt-v"):
        spec = DEFAULT_METHODS.get(name)
        # a grid that names only the depth keeps the estimator's guarded defaults
        model = spec.build(2.0, {"max_depth": 2}, 0)
        assert (model.readout, model.mechanism, model.budget_split) == ("auto", "auto", "auto")
        # the presets that reproduce the papers' numbers name the papers' settings
        for preset in ("lpdt-real", "lpdt-taxi", "lpdt-depth", "lpdt-leaf"):
            point = next(grid_preset(preset).configurations())
            model = spec.build(2.0, point, 0)
            assert (model.readout, model.mechanism) == ("ratio", "paper")
            assert disabled_guards(model)
        assert not disabled_guards(spec.build(2.0, {}, 0))
