"""One-hot levels (and the missing-value column) come from the public rows of a split only."""

from __future__ import annotations

import numpy as np

from ldptree.datasets import load_dataset
from ldptree.experiments import GivenPublicSplit, RandomSplit, public_levels
from ldptree.experiments._splits import Split

HEADER = "name,file,task,n,d,target_columns,categorical_feature_columns\n"


def test_levels_absent_from_public_rows_are_dropped_everywhere() -> None:
    # columns: x (numeric), c=a, c=b, c=<missing>
    public = np.array([[0.1, 1, 0, 0], [0.2, 0, 1, 0]])
    private = np.array([[0.3, 0, 0, 1], [0.4, 1, 0, 0]])  # a missing c only in private rows
    split = Split(public, np.zeros(2), private, np.zeros(2), private.copy(), np.zeros(2))
    out = public_levels(split, (("c", (1, 2, 3)),))
    np.testing.assert_array_equal(out.X_public, public[:, :3])
    np.testing.assert_array_equal(out.X_train, private[:, :3])  # first row: no level set
    np.testing.assert_array_equal(out.X_test, private[:, :3])
    assert public_levels(split, ()) is split


def test_random_and_given_splits_use_public_levels_only(tmp_path) -> None:
    rows = ["1,a,0.5", "2,a,0.6", "3,b,0.7", "4,a,0.8", "5,rare,0.9", "6,?,1.0"] * 1
    (tmp_path / "t.csv").write_text("x,c,y\n" + "\n".join(rows) + "\n")
    (tmp_path / "pub.csv").write_text("x,c,y\n1,a,0.5\n2,b,0.6\n")
    (tmp_path / "pri.csv").write_text("x,c,y\n3,rare,0.1\n4,a,0.2\n5,?,0.3\n6,b,0.4\n")
    (tmp_path / "manifest.csv").write_text(
        HEADER
        + "t,t.csv,regression,6,2,y,c\n"
        + "pub,pub.csv,regression,2,2,y,c\n"
        + "pri,pri.csv,regression,4,2,y,c\n"
    )
    data = load_dataset("t", tmp_path)
    assert data.n_features == 5  # x, c=a, c=b, c=rare, c=<missing>
    source = RandomSplit(data, (2, 2, 2))
    for seed in range(5):
        split = source.draw(np.random.default_rng(seed))
        levels = {row[1:].argmax() for row in split.X_public}  # public rows each have one level
        assert split.X_public.shape[1] == 1 + len(levels)
        assert split.X_train.shape[1] == split.X_test.shape[1] == 1 + len(levels)
    given = GivenPublicSplit(
        name="g", public=load_dataset("pub", tmp_path), private=load_dataset("pri", tmp_path)
    )
    split = given.draw(np.random.default_rng(0))
    assert split.X_public.shape[1] == 3  # x, c=a, c=b: no rare level, no missing column
    rows_all = np.vstack([split.X_train, split.X_test])
    assert rows_all.shape == (4, 3)
    # the private "rare" and missing rows have no level set; "a" and "b" keep theirs
    assert sorted(rows_all[:, 1:].sum(axis=1).tolist()) == [0.0, 0.0, 1.0, 1.0]


def test_lpct_public_files_keep_their_one_hot_groups(tmp_path) -> None:
    """The LPCT tables' public/private files cut from one dataset keep the categorical groups,
    so their splits drop the levels that only private rows have too."""
    from ldptree.experiments._lpct_table import _random_public

    rows = ["1,a,0", "2,b,1", "3,a,0", "4,b,1", "5,a,0", "6,rare,1"]
    (tmp_path / "t.csv").write_text("x,c,y\n" + "\n".join(rows) + "\n")
    (tmp_path / "manifest.csv").write_text(HEADER + "t,t.csv,classification,6,2,y,c\n")
    data = load_dataset("t", tmp_path)
    widths = []
    for seed in range(4):
        source = _random_public(data, "t", 3, seed)
        split = source.draw(np.random.default_rng(seed))
        public_levels_seen = int((split.X_public[:, 1:].sum(axis=0) > 0).sum())
        assert split.X_public.shape[1] == split.X_train.shape[1] == 1 + public_levels_seen
        widths.append(split.X_public.shape[1])
    assert min(widths) < data.n_features  # some public file lacks the rare level
