"""Bit-identity of every built-in mechanism's reports and sums, pinned by fingerprints.

The digests below were recorded from the mechanisms before the kit's release kinds were
refactored into one class each; any change to a built-in's sampler, word layout, sums or
simulation changes a digest. A digest is the SHA-256 of each output array's dtype, shape and
bytes, in order. Inputs cover every label path (real labels outside the bound and infinite, class
codes outside the declared classes), cell counts whose padding differs (1, 5, 37 cells) and
budgets whose flip thresholds use 16-, 32- and 64-bit uniforms.
"""

from __future__ import annotations

import hashlib
from typing import Any

import jax
import numpy as np
import pytest

from ldptree.mechanisms import (
    DuchiMechanism,
    HadamardLaplaceMechanism,
    KRRCellClassMechanism,
    KRRJointMechanism,
    KRRLaplaceMechanism,
    LaplaceCellClassMechanism,
    LaplaceCellLabelMechanism,
    LaplaceFeatureLabelMechanism,
    OUECellClassMechanism,
    OUELaplaceMechanism,
    PiecewiseMechanism,
    RRLaplaceMechanism,
)

N_HOLDERS = 300
FIRST_HOLDER = 1000
CELL_COUNTS = (1, 5, 37)


def _mechanisms() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for eps in (0.3, 2.0, 9.0, 40.0):
        out[f"rr-{eps}"] = RRLaplaceMechanism(epsilon=eps, label_bound=(-1.0, 3.0))
        out[f"rr64-{eps}"] = RRLaplaceMechanism(epsilon=eps, label_bound=1.0, precision_bits=64)
        out[f"cell-label-{eps}"] = LaplaceCellLabelMechanism(epsilon=eps, label_bound=2.0)
        out[f"cell-class2-{eps}"] = LaplaceCellClassMechanism(epsilon=eps, n_classes=2)
        out[f"cell-class3-{eps}"] = LaplaceCellClassMechanism(epsilon=eps, n_classes=3)
        out[f"duchi-{eps}"] = DuchiMechanism(epsilon=eps, label_bound=(-1.0, 3.0))
        out[f"piecewise-{eps}"] = PiecewiseMechanism(epsilon=eps, label_bound=(-1.0, 3.0))
        out[f"oue-{eps}"] = OUELaplaceMechanism(epsilon=eps, label_bound=1.0)
        out[f"oue-class-{eps}"] = OUECellClassMechanism(epsilon=eps, n_classes=3)
        out[f"krr-{eps}"] = KRRLaplaceMechanism(epsilon=eps, label_bound=1.0)
        out[f"krr-joint-{eps}"] = KRRJointMechanism(epsilon=eps, label_bound=1.0, levels=4)
        out[f"krr-class-{eps}"] = KRRCellClassMechanism(epsilon=eps, n_classes=3)
        out[f"hadamard-{eps}"] = HadamardLaplaceMechanism(epsilon=eps, label_bound=(-1.0, 3.0))
        out[f"hadamard64-{eps}"] = HadamardLaplaceMechanism(
            epsilon=eps, label_bound=1.0, precision_bits=64
        )
    return out


def _records(integer: bool, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2024)
    cells = rng.integers(0, n_cells, N_HOLDERS).astype(np.int32)
    if integer:
        return cells, rng.integers(-1, 5, N_HOLDERS).astype(np.int32)
    labels = rng.normal(0.5, 2.5, N_HOLDERS).astype(np.float32)
    labels[::17] = np.inf
    labels[::23] = -np.inf
    return cells, labels


def _digest(values: Any) -> str:
    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(values):
        arr = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:24]


def fingerprint(mechanism: Any, n_cells: int) -> str:
    """Digest of ``privatize``, ``privatize_summarize``, ``summarize`` and (where supported)
    ``simulate_summary`` on fixed records and keys, plus ``words_per_holder``."""
    cells, labels = _records(mechanism.labels().integer, n_cells)
    key = jax.random.key(7)
    reports = mechanism.privatize(key, cells, labels, n_cells, first_holder=FIRST_HOLDER)
    sums = mechanism.privatize_summarize(key, cells, labels, n_cells, first_holder=FIRST_HOLDER)
    parts: list[Any] = [
        reports,
        [sums[k] for k in sorted(sums)],
        [v for _, v in sorted(mechanism.summarize(reports, n_cells).items())],
        np.int64(mechanism.words_per_holder(n_cells)),
    ]
    try:
        simulated = mechanism.simulate_summary(jax.random.key(3), cells, labels, n_cells)
    except TypeError:
        pass
    else:
        parts.append([simulated[k] for k in sorted(simulated)])
    return _digest(parts)


def feature_fingerprint() -> str:
    """The feature-label mechanism (not kit-built) on fixed records, features and key."""
    mechanism = LaplaceFeatureLabelMechanism(epsilon=2.0, n_features=3, label_bound=1.0)
    rng = np.random.default_rng(5)
    labels = rng.normal(0.0, 1.0, N_HOLDERS).astype(np.float32)
    features = rng.uniform(-0.2, 1.2, (N_HOLDERS, 3)).astype(np.float32)
    cells = np.zeros(N_HOLDERS, np.int32)
    reports = mechanism.privatize(
        jax.random.key(7), cells, labels, 1, first_holder=FIRST_HOLDER, features=features
    )
    return _digest(reports)


#: Recorded from the mechanisms before the refactor (module docstring).
RECORDED: dict[str, str] = {
    "cell-class2-0.3-L1": "75d0db2eafbfd5c2a989df7d",
    "cell-class2-0.3-L5": "e64a262d26ce7971e0c8d0f6",
    "cell-class2-0.3-L37": "25f11fe2d5bec24bcb1fe3f3",
    "cell-class2-2.0-L1": "541c79a696bf21236c1490e5",
    "cell-class2-2.0-L5": "a7be0f621487fc0375a205ee",
    "cell-class2-2.0-L37": "1018f2a2c3101a0fccbbd8e9",
    "cell-class2-40.0-L1": "00fcc7c8560ea4227af73c10",
    "cell-class2-40.0-L5": "33b7b72a38a20a1120628294",
    "cell-class2-40.0-L37": "6d24259ef79a7ee04cf76abd",
    "cell-class2-9.0-L1": "55ab441551b66ce969c98a69",
    "cell-class2-9.0-L5": "a8485e325eff3fe960fb3a7d",
    "cell-class2-9.0-L37": "cd4354812f1a3e47a83b265d",
    "cell-class3-0.3-L1": "c6780fe081b03ddc83202cfc",
    "cell-class3-0.3-L5": "989988bca1a00cc461958c27",
    "cell-class3-0.3-L37": "f92f507df8a99857bdfa05bd",
    "cell-class3-2.0-L1": "75359d393e68483c84dc2908",
    "cell-class3-2.0-L5": "49634edc5f53d12f6bf97db1",
    "cell-class3-2.0-L37": "68a6ae18edac67e0f065d2e3",
    "cell-class3-40.0-L1": "052ccd8dc31d0c41467e0bdd",
    "cell-class3-40.0-L5": "d235c7ef5047639e5dfdb377",
    "cell-class3-40.0-L37": "a7d0ac40c129d2466e33e68a",
    "cell-class3-9.0-L1": "a5ea92b3035af71709b72007",
    "cell-class3-9.0-L5": "0f27fa2a8e89e543e19d2640",
    "cell-class3-9.0-L37": "89932472075bd5dd6f1235fb",
    "cell-label-0.3-L1": "4adc5e5e4e66a865995f84c2",
    "cell-label-0.3-L5": "62ee11f8391f2938d4a79f9c",
    "cell-label-0.3-L37": "420ce09f9e7138a757797039",
    "cell-label-2.0-L1": "860e53f2580f563a613d8b5f",
    "cell-label-2.0-L5": "57084bcf4d712b4b39219849",
    "cell-label-2.0-L37": "e211d6d20b6a15ed7a82ddfd",
    "cell-label-40.0-L1": "176f42e37522728b0cb6dc59",
    "cell-label-40.0-L5": "f1572572e18f9d7d654cf322",
    "cell-label-40.0-L37": "021b929fd89297c9c3c8d516",
    "cell-label-9.0-L1": "617fd8abc501589743059a30",
    "cell-label-9.0-L5": "78e9202154e9825621bcd1ff",
    "cell-label-9.0-L37": "8669b3f9867374ec3c84e2ad",
    "duchi-0.3-L1": "7c3af72600c563674f649189",
    "duchi-0.3-L5": "085d4a5ae99637b8feeb6da4",
    "duchi-0.3-L37": "f85ce7e2127b36a946957e48",
    "duchi-2.0-L1": "e7bb3d911e9d2efcc9db003a",
    "duchi-2.0-L5": "b35048871005a2c80ca9e9e0",
    "duchi-2.0-L37": "9e6f130caafca7783fd40af2",
    "duchi-40.0-L1": "7275adf3107c0590e04da001",
    "duchi-40.0-L5": "e9463eb882f7b2e720745e00",
    "duchi-40.0-L37": "7a2b4f6f84b777e0732898b4",
    "duchi-9.0-L1": "f6fbe8506b00279ae43faafd",
    "duchi-9.0-L5": "a65289f8ca4b38f363fac8e3",
    "duchi-9.0-L37": "a2e6bee89e54060ca9428ddd",
    "hadamard-0.3-L1": "150054034eecdaf51c692237",
    "hadamard-0.3-L5": "03b452e64a47df2ae72e2b7d",
    "hadamard-0.3-L37": "39c44e5c0bae55999c6b3ee1",
    "hadamard-2.0-L1": "19916edf7d169bf7c9e42ea4",
    "hadamard-2.0-L5": "74ffa7351167c9878e0ceb1e",
    "hadamard-2.0-L37": "cbba7d65601c0856a4a14a61",
    "hadamard-40.0-L1": "ba32113f86ed593052900402",
    "hadamard-40.0-L5": "4ba7113e2bbc4fc737d54499",
    "hadamard-40.0-L37": "a8ec13c211c17590fad31758",
    "hadamard-9.0-L1": "6135905bc7ebe3c895037f8e",
    "hadamard-9.0-L5": "6ea0bd4e79d8c7cd77aa071e",
    "hadamard-9.0-L37": "2e6eddcb3c1823ccb2927e53",
    "hadamard64-0.3-L1": "57c23839ea26a421bb9e9967",
    "hadamard64-0.3-L5": "5e0941555bc34f7e987f550d",
    "hadamard64-0.3-L37": "cb18f8dd3ae2e5edb792bdd4",
    "hadamard64-2.0-L1": "e63e1a13ebaf742f8261bbe3",
    "hadamard64-2.0-L5": "be3b9706cf82b15f9e562058",
    "hadamard64-2.0-L37": "586a30fd47a2e4288c98a823",
    "hadamard64-40.0-L1": "84b50b9de41a7438eeaa8e36",
    "hadamard64-40.0-L5": "8bc12071fad4a964ccb5c4eb",
    "hadamard64-40.0-L37": "233d89f71ccad64066ea48c2",
    "hadamard64-9.0-L1": "cf373441fdb8cd3e08c1670f",
    "hadamard64-9.0-L5": "9651799b83bb46115323bf5b",
    "hadamard64-9.0-L37": "1ba8b3a7fac4256bd7573900",
    "krr-0.3-L1": "e0484d0efde1550336d5659e",
    "krr-0.3-L5": "f7cca9393d32e76e18d944e5",
    "krr-0.3-L37": "610a40e091ab5f14d1a24078",
    "krr-2.0-L1": "a595d1712f308665b09bf357",
    "krr-2.0-L5": "91bc6ea804d8a529d32067e8",
    "krr-2.0-L37": "98ba541fbac4c09220805d6e",
    "krr-40.0-L1": "75dce2c91bd4b0a0e6249aea",
    "krr-40.0-L5": "bf0f8baf393d0bb1dc93317a",
    "krr-40.0-L37": "e169346b7ae75378ded35841",
    "krr-9.0-L1": "5491f8ad2806efcf6bccea1a",
    "krr-9.0-L5": "40163281e8b26d0568ad53a9",
    "krr-9.0-L37": "ba8be7b20ca02bff3bdfadb1",
    "krr-class-0.3-L1": "e01ad5401b6b44a892e410b0",
    "krr-class-0.3-L5": "9ed6137ff3a7eb6a52526d43",
    "krr-class-0.3-L37": "3f6336e1c64603eb96d997e3",
    "krr-class-2.0-L1": "b516573bf01acda266f88eee",
    "krr-class-2.0-L5": "9a38309fcd8c8b08f0e9dd8d",
    "krr-class-2.0-L37": "0c07ba306ce5f8d45ea41833",
    "krr-class-40.0-L1": "5ab4deab124c39c8f2f12d9e",
    "krr-class-40.0-L5": "a19839fd02792554b799dc80",
    "krr-class-40.0-L37": "e28bdc52d6a1d60c0fe62bf5",
    "krr-class-9.0-L1": "6cbc0bc7bde888523be7e83d",
    "krr-class-9.0-L5": "b42319d13bbb102ecb3845b2",
    "krr-class-9.0-L37": "d8cf304c22d1157bc5d902d0",
    "krr-joint-0.3-L1": "3da5d3c8ebdb2d0acddb1b81",
    "krr-joint-0.3-L5": "cc3c4d8ba760d4a6895c2034",
    "krr-joint-0.3-L37": "5d332d552fe68531786ca5b9",
    "krr-joint-2.0-L1": "2383d30b6492ba2be11a6502",
    "krr-joint-2.0-L5": "568a89a2b5853f2fe36830bb",
    "krr-joint-2.0-L37": "10b05a06dac6b5d866bd3008",
    "krr-joint-40.0-L1": "8de32b6d6b15cba1eebe34cd",
    "krr-joint-40.0-L5": "1e2f56395ead44d70454c50a",
    "krr-joint-40.0-L37": "2b33bd764c3234749b79c417",
    "krr-joint-9.0-L1": "06562dafe89298084a861d01",
    "krr-joint-9.0-L5": "c6c8c2c7f2a3ae21b084100f",
    "krr-joint-9.0-L37": "29739a468331e5e547a4d165",
    "oue-0.3-L1": "3d9fc242359c13a96724f3d5",
    "oue-0.3-L5": "dc0a73d999b6595fbb2abb01",
    "oue-0.3-L37": "7dd50cc63fec2f983e53ac90",
    "oue-2.0-L1": "2724ad19e40a12701eb59bb3",
    "oue-2.0-L5": "67a8c27a6985dca9a029c0a1",
    "oue-2.0-L37": "0deac7d937a88bcfb3e61855",
    "oue-40.0-L1": "dab611b9f9046b204a9d934b",
    "oue-40.0-L5": "1c5d509ae892aec6b2224063",
    "oue-40.0-L37": "d3c2e185f7c0a8698d33ff48",
    "oue-9.0-L1": "96861236463073970aec44e0",
    "oue-9.0-L5": "15448f8f1521c564d733c55d",
    "oue-9.0-L37": "46463520d3633527f662a655",
    "oue-class-0.3-L1": "3a88623a24c45a72b2548849",
    "oue-class-0.3-L5": "a31806249284b7f3ffc2b742",
    "oue-class-0.3-L37": "ddfaa0b8f0b1c2eb4640de0e",
    "oue-class-2.0-L1": "f0dd373912a27a4087cbb97d",
    "oue-class-2.0-L5": "df04a5947a91f98fd5d7d0a0",
    "oue-class-2.0-L37": "d1424a4d28e5f489064f2fa4",
    "oue-class-40.0-L1": "aa429bf1ff7b731e7685d228",
    "oue-class-40.0-L5": "6cf3964e8b9ffae1ed80191c",
    "oue-class-40.0-L37": "2c47961909594c1fc31ddfa5",
    "oue-class-9.0-L1": "9a0116bc53554b7cd3f77f2a",
    "oue-class-9.0-L5": "dabf774570b93317bf362219",
    "oue-class-9.0-L37": "16d7722886ced8872d04317d",
    "piecewise-0.3-L1": "50066ce1db0d5f1e943fe690",
    "piecewise-0.3-L5": "4e27d28d20ce1625a34e69c0",
    "piecewise-0.3-L37": "90d2d91209a1ff305b10af33",
    "piecewise-2.0-L1": "e931a2e584474f5c693bab08",
    "piecewise-2.0-L5": "c6b4290dfa8d34bb1c9de08a",
    "piecewise-2.0-L37": "0a4f747c3f2b99ea0b18cd91",
    "piecewise-40.0-L1": "47a9adca81e6b54f22c049d7",
    "piecewise-40.0-L5": "a3ec79256f1eb1448f09762f",
    "piecewise-40.0-L37": "89801000db42d230f7d9cd9e",
    "piecewise-9.0-L1": "b90c3dfd98431581ecf09cfc",
    "piecewise-9.0-L5": "5b319e4565d0543b98d8ace8",
    "piecewise-9.0-L37": "68a8dd7868a91e71f03ceec8",
    "rr-0.3-L1": "abf3c5928522c55a3c818ba8",
    "rr-0.3-L5": "3ec7cc7d9c429a9e001e6527",
    "rr-0.3-L37": "8a418a490eb036bf295b3905",
    "rr-2.0-L1": "61febb02d9cd201c8e81cfed",
    "rr-2.0-L5": "423a1f277869005f272bf48c",
    "rr-2.0-L37": "7d4af749ee178a1995bf838c",
    "rr-40.0-L1": "f02a7068d8334aba1609e113",
    "rr-40.0-L5": "a356340a20b48663193a4c99",
    "rr-40.0-L37": "ea207b135919818a3ec9eb9c",
    "rr-9.0-L1": "4c91147fabd22516ba84f511",
    "rr-9.0-L5": "9cc489781ec936c4aa0133e5",
    "rr-9.0-L37": "b97ab89149d03b1341e9f54c",
    "rr64-0.3-L1": "953d8aec5cc4e6baf0e4c28e",
    "rr64-0.3-L5": "5b83000e87f3f08645e07cf2",
    "rr64-0.3-L37": "d6afad4448ca1a483f1e29a3",
    "rr64-2.0-L1": "62c53c9e776f1d5058b817a9",
    "rr64-2.0-L5": "4eaf0f10ed026875cbc4287b",
    "rr64-2.0-L37": "1a2baf7bcb2d94e057395dab",
    "rr64-40.0-L1": "023817a490a3b0203232a8a2",
    "rr64-40.0-L5": "d4f154a64df48b4a8cf8d6ba",
    "rr64-40.0-L37": "5a40af32eec086a1d7ec3dbc",
    "rr64-9.0-L1": "547fa1d0eed4194194caa7ca",
    "rr64-9.0-L5": "bc85586e293ac918b947ed91",
    "rr64-9.0-L37": "4fecbee1009e6524bdcbf7c9",
    "features": "f5e5de6ca1bec14f836053f3",
}


def _cases() -> list[Any]:
    """Every mechanism at ``epsilon = 2`` and 5 cells; the other budgets and cell counts (one
    compiled shape each, together minutes on a fresh clone) run with the slow group."""
    cases = []
    for name in sorted(_mechanisms()):
        for n_cells in CELL_COUNTS:
            quick = n_cells == 5 and name.endswith("-2.0")
            marks = () if quick else (pytest.mark.slow,)
            cases.append(pytest.param(name, n_cells, id=f"{name}-L{n_cells}", marks=marks))
    return cases


@pytest.mark.parametrize(("name", "n_cells"), _cases())
def test_builtin_reports_are_bit_identical(name: str, n_cells: int) -> None:
    mechanism = _mechanisms()[name]
    assert fingerprint(mechanism, n_cells) == RECORDED[f"{name}-L{n_cells}"]


def test_feature_mechanism_reports_are_bit_identical() -> None:
    assert feature_fingerprint() == RECORDED["features"]
