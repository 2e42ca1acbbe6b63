"""The manifest loader on folders it has never seen, and on the shared data when present."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import threading
from pathlib import Path

import numpy as np
import pytest

from ldptree.datasets import (
    ChecksumError,
    download_file,
    load_dataset,
    read_manifest,
    resolve_data_dir,
)

HEADER = "name,file,task,n,d,target_columns,categorical_feature_columns"
TOY = """a,color,b,y
1.5,red,10,3.0
2.5,?,,4.0
-1,blue,30,
4,red,40,6.5
0,green,NA,7.0
"""
MULTI = """x,t1,t2
1,10,100
2,20,200
3,30,300
"""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_folder(root: Path, *, url: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "toy.csv").write_text(TOY)
    (root / "toy.csv.gz").write_bytes(gzip.compress(TOY.encode()))
    (root / "multi.csv").write_text(MULTI)
    header = HEADER + (",url" if url else "")
    extra = "," if url else ""
    rows = [
        f"toy,toy.csv,regression,5,3,y,color{extra}",
        f"toy_gz,toy.csv.gz,regression,5,3,y,color{extra}",
        f"multi,multi.csv,regression,3,1,t1;t2,{extra}",
    ]
    if url:
        rows.append(f"remote,remote.csv,regression,3,1,t1;t2,,{url}")
    (root / "manifest.csv").write_text("\n".join([header, *rows]) + "\n")
    files = ["toy.csv", "toy.csv.gz", "multi.csv", "manifest.csv"]
    lines = [f"{_sha(root / f)}  {f}" for f in files]
    if url:
        lines.append(f"{hashlib.sha256(MULTI.encode()).hexdigest()}  remote.csv")
    (root / "CHECKSUMS").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return _write_folder(tmp_path / "data")


def test_categoricals_missing_values_and_dropped_targets(folder):
    data = load_dataset("toy", folder)
    # "blue" only occurs in the dropped row, so it is no level of the loaded data
    assert data.feature_names == ("a", "color=green", "color=red", "color=<missing>", "b")
    assert data.n_dropped == 1  # the row without a target
    np.testing.assert_array_equal(data.y, [3.0, 4.0, 6.5, 7.0])
    np.testing.assert_array_equal(data.X[:, 0], [1.5, 2.5, 4.0, 0.0])
    np.testing.assert_array_equal(data.X[:, 1:4], [[0, 1, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]])
    assert np.isnan(data.X[1, 4]) and np.isnan(data.X[3, 4]) and data.X[0, 4] == 10.0
    assert data.has_missing and dict(data.categorical) == {"color": (1, 2, 3)}


def test_gzip_file_loads_like_the_plain_one(folder):
    plain, packed = load_dataset("toy", folder), load_dataset("toy_gz", folder)
    np.testing.assert_array_equal(plain.X, packed.X)
    np.testing.assert_array_equal(plain.y, packed.y)


def test_target_choice_drops_every_target_column_from_features(folder):
    first = load_dataset("multi", folder)
    second = load_dataset("multi", folder, target="t2")
    assert first.feature_names == second.feature_names == ("x",)
    np.testing.assert_array_equal(first.y, [10, 20, 30])
    np.testing.assert_array_equal(second.y, [100, 200, 300])
    with pytest.raises(ValueError, match="target='x'"):
        load_dataset("multi", folder, target="x")


def test_checksum_mismatch_is_an_error(folder):
    (folder / "toy.csv").write_text(TOY.replace("1.5", "1.6"))
    with pytest.raises(ChecksumError, match=r"toy.csv"):
        load_dataset("toy", folder)
    assert load_dataset("toy", folder, verify=False).X[0, 0] == 1.6


def test_unlisted_file_and_missing_checksums(folder):
    (folder / "CHECKSUMS").write_text(f"{_sha(folder / 'multi.csv')}  multi.csv\n")
    with pytest.raises(ValueError, match=r"no line for 'toy.csv'"):
        load_dataset("toy", folder)
    (folder / "CHECKSUMS").unlink()
    assert load_dataset("toy", folder).n == 4
    with pytest.raises(ValueError, match="verify=True"):
        load_dataset("toy", folder, verify=True)


def test_data_dir_from_environment(folder, monkeypatch):
    monkeypatch.setenv("LDPTREE_DATA", str(folder))
    assert load_dataset("multi").n == 3
    monkeypatch.delenv("LDPTREE_DATA")
    with pytest.raises(ValueError, match="LDPTREE_DATA"):
        resolve_data_dir(None)


def test_errors_name_the_argument_or_field(folder, tmp_path):
    with pytest.raises(ValueError, match=r"name='nope'.*known datasets"):
        load_dataset("nope", folder)
    with pytest.raises(ValueError, match="data_dir"):
        load_dataset("toy", tmp_path / "absent")
    (folder / "multi.csv").unlink()
    with pytest.raises(ValueError, match=r"'multi.csv' of dataset 'multi' is missing"):
        load_dataset("multi", folder)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("toy,toy.csv,regression,6,3,y,color", "n=6"),
        ("toy,toy.csv,regression,5,4,y,color", "d=4"),
        ("toy,toy.csv,ranking,5,3,y,color", "task must be one of"),
        ("toy,../toy.csv,regression,5,3,y,color", "relative path"),
        ("toy,toy.csv,regression,five,3,y,color", "n must be an integer"),
        ("toy,toy.csv,regression,5,3,y,colour", r"\['colour'\] are not in the header"),
        ("toy,toy.csv,regression,5,3,,color", "target_columns is empty"),
    ],
)
def test_bad_manifest_rows(folder, row, message):
    (folder / "manifest.csv").write_text(f"{HEADER}\n{row}\n")
    with pytest.raises(ValueError, match=message):
        load_dataset("toy", folder, verify=False)


def test_manifest_without_required_columns(folder):
    (folder / "manifest.csv").write_text("name,file\ntoy,toy.csv\n")
    with pytest.raises(ValueError, match="missing column"):
        read_manifest(folder)


def test_undeclared_text_column_is_an_error(folder):
    (folder / "manifest.csv").write_text(f"{HEADER}\ntoy,toy.csv,regression,5,3,y,\n")
    with pytest.raises(ValueError, match=r"'color'.*categorical_feature_columns"):
        load_dataset("toy", folder, verify=False)


def test_download_from_file_url_checks_the_digest(tmp_path):
    source = tmp_path / "origin.csv"
    source.write_text(MULTI)
    good = hashlib.sha256(MULTI.encode()).hexdigest()
    out = download_file(source.as_uri(), tmp_path / "copy" / "multi.csv", sha256=good)
    assert out.read_text() == MULTI
    with pytest.raises(ChecksumError, match="was not written"):
        download_file(source.as_uri(), tmp_path / "bad.csv", sha256="0" * 64)
    assert not (tmp_path / "bad.csv").exists() and not (tmp_path / "bad.csv.part").exists()
    with pytest.raises(ValueError, match="sha256"):
        download_file(source.as_uri(), tmp_path / "x.csv", sha256="abc")


def test_load_dataset_downloads_from_a_loopback_server(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    (served / "remote.csv").write_text(MULTI)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/remote.csv"
        folder = _write_folder(tmp_path / "data", url=url)
        with pytest.raises(ValueError, match="download=True"):
            load_dataset("remote", folder)
        data = load_dataset("remote", folder, download=True)
        np.testing.assert_array_equal(data.y, [10, 20, 30])
        assert (folder / "remote.csv").is_file()
    finally:
        server.shutdown()
        server.server_close()


def test_every_shared_regression_dataset_loads_verified(data_dir):
    entries = {k: e for k, e in read_manifest(data_dir).items() if e.task == "regression"}
    assert len(entries) >= 14
    for name, entry in entries.items():
        data = load_dataset(name, data_dir)
        assert data.n == entry.n - data.n_dropped
        assert data.n_features >= entry.d and data.X.shape == (data.n, data.n_features)
        assert data.y.dtype == np.float64 and np.all(np.isfinite(data.y))
        if not entry.categorical:
            assert data.n_features == entry.d
