"""Published numbers of the LPDT paper (Table 2 + Table 5), for comparison columns.

Average test MSE over 50 repetitions; ``M`` = LPDT-M, ``V`` = LPDT-V, ``A`` = APHIST,
``P`` = PHIST, ``D`` = DECONV, ``DT`` = the non-private tree (epsilon-free). A trailing ``*`` in
the source marks a result the paper reports as significantly better (Wilcoxon signed-rank, 0.05);
``-`` marks a run that ran out of memory. The epsilon 4 and 8 rows were reconstructed from an
OCR-garbled copy by column alignment. The table text below is that reconstruction, verbatim;
:data:`LPDT_DATASETS` maps the paper's abbreviations to the manifest names of the shared data.
"""

from __future__ import annotations

import attrs

_LPDT_TABLE = """
data  DT       | eps=0.5: M        V        A        P        D        | eps=1: M        V        A        P        D
ABA 5.67e0   | 1.10e1   1.07e1   1.12e1   1.16e1   1.05e7  | 1.06e1   1.01e1*  1.06e1   1.07e1   3.06e6
AIR 2.26e1   | 3.79e2   1.29e2*  2.10e2*  3.10e2   1.19e6  | 1.67e2   1.17e2*  9.25e1*  1.26e2   5.64e7
ALG 2.12e-2  | 2.59e-1* 2.59e-1* 2.74e-1  2.83e-1  8.81e2  | 2.40e-1* 2.40e-1* 2.56e-1  2.59e-1  1.73e2
AQU 1.92e0   | 1.35e1   3.01e0*  3.68e0*  4.06e0   6.02e4  | 3.06e0   3.63e0   2.99e0*  3.11e0   9.55e3
BUI 1.75e5   | 3.54e6*  1.70e6*  -        -        1.20e9  | 2.46e6*  1.54e6*  -        -        3.30e9
CBM 4.08e-27 | 6.96e0   6.64e0*  6.96e0*  6.99e0   9.69e6  | 2.46e0*  1.90e0*  6.91e0   6.92e0   1.58e6
CCP 2.19e1   | 4.52e2*  4.89e2*  6.79e2   9.31e2   1.23e10 | 4.72e2   4.72e2   4.15e2*  4.82e2   1.43e7
CON 9.38e1   | 4.56e2   4.56e2   3.24e2*  3.38e2*  3.33e8  | 3.08e2   3.42e2   2.99e2   3.03e2   3.18e7
CPU 2.15e1   | 3.56e2   3.56e2   3.56e2   3.68e2   6.61e7  | 3.41e2   9.37e1*  3.41e2   3.43e2   9.37e7
FIS 1.07e0   | 3.66e0   3.66e0   2.62e0*  2.81e0*  1.68e5  | 2.48e0   2.48e0   2.24e0*  2.30e0   1.57e4
HOU 2.11e1   | 1.05e2*  1.04e2   1.08e2   1.17e2   2.34e5  | 8.56e1*  8.56e1*  9.00e1*  9.32e1   1.55e7
MUS 3.00e2   | 6.21e2*  6.21e2*  -        -        2.18e5* | 4.26e2*  4.26e2*  -        -        1.29e6*
RED 4.76e-1  | 8.78e-1* 8.94e-1* 1.09e0   1.30e0   2.74e6  | 7.67e-1* 7.04e-1* 8.01e-1  8.69e-1  1.15e5
WHI 5.77e-1  | 8.77e-1* 8.69e-1* 9.45e-1  1.03e0   1.28e9  | 8.68e-1  8.48e-1  8.32e-1* 8.56e-1  1.58e6

data | eps=2: M        V        A        P        D        | eps=4: M        V        A        P        D
ABA  | 1.01e1   1.01e1   1.89e1   1.06e1   1.01e7  | 9.46e0*  9.54e0*  2.00e1   1.05e1   1.14e1
AIR  | 4.80e1*  4.69e1*  1.31e3   6.80e1   3.00e2  | 4.67e1*  4.15e1*  1.52e3   5.28e1   4.85e1
ALG  | 2.57e-1  2.43e-1  2.52e-1  2.52e-1  9.26e4  | 2.40e-1* 2.42e-1* 2.59e-1  2.48e-1  2.03e3
AQU  | 2.99e0*  2.99e0*  4.01e0   2.93e0*  5.74e3  | 2.81e0   2.77e0*  4.54e0   2.85e0   5.23e0
BUI  | 1.50e6*  1.64e6*  -        -        1.20e9  | 1.49e6*  1.35e6*  -        -        3.90e7
CBM  | 2.12e0*  1.65e0*  9.53e0   6.97e0   2.37e3  | 9.34e-1* 5.10e-1* 7.45e0   6.48e0   1.41e5
CCP  | 1.50e2*  1.06e2*  2.07e4   3.64e2   3.03e2  | 9.08e1*  6.78e1*  2.20e4   3.34e2   2.86e2
CON  | 2.94e2*  2.89e2*  3.81e2   3.00e2   2.24e7  | 2.70e2*  2.54e2*  4.06e2   2.97e2   3.93e2
CPU  | 3.41e2   9.00e1*  9.26e2   3.42e2   2.15e5  | 3.05e2*  8.36e1*  9.65e2   3.40e2   3.93e5
FIS  | 2.15e0*  2.14e0*  3.14e0   2.22e0   3.47e3  | 1.90e0*  2.07e0   3.47e0   2.17e0   2.40e0
HOU  | 8.10e1*  8.22e1*  1.06e2   8.52e1   1.92e4  | 7.80e1*  7.37e1*  1.18e2   8.27e1   1.31e3
MUS  | 3.47e2*  3.46e2*  -        -        9.50e3  | 3.33e2*  3.46e2*  -        -        8.03e4
RED  | 7.08e-1* 7.03e-1* 3.18e0   7.57e-1  1.23e8  | 7.13e-1  6.92e-1  3.63e0   7.19e-1  4.03e2
WHI  | 8.30e-1  8.42e-1  4.01e0   8.15e-1  1.64e7  | 7.39e-1* 7.50e-1* 4.34e0   8.05e-1  1.88e4

data | eps=6: M        V        A        P        D        | eps=8: M        V        A        P        D
ABA  | 8.38e0*  7.34e0*  2.05e1   1.05e1   1.09e1  | 7.96e0*  6.94e0*  2.07e1   1.05e1   1.05e1
AIR  | 4.49e1*  3.60e1*  1.60e3   4.98e1   4.72e1  | 4.45e1*  3.47e1*  1.64e3   4.87e1   4.71e1
ALG  | 2.44e-1  2.46e-1  2.63e-1  2.47e-1  3.14e-1 | 2.43e-1  2.46e-1  2.64e-1  2.46e-1  2.54e-1
AQU  | 2.73e0*  2.67e0*  4.75e0   2.83e0   2.96e0  | 2.71e0*  2.63e0*  4.86e0   2.83e0   2.85e0
BUI  | 1.44e6*  1.31e6*  -        -        2.04e7  | 1.40e6*  1.28e6*  -        -        1.38e7
CBM  | 7.62e-1* 1.23e-1* 4.94e0   3.21e0   1.23e5  | 7.08e-1* 3.77e-2* 4.49e0   2.00e0   6.44e0
CCP  | 8.42e1*  5.18e1*  2.24e4   3.28e2   2.56e2  | 8.22e1*  4.76e1*  2.26e4   3.26e2   2.10e2
CON  | 2.44e2*  2.13e2*  4.16e2   2.96e2   3.13e2  | 2.34e2*  2.04e2*  4.21e2   2.96e2   2.91e2
CPU  | 3.02e2*  6.15e1*  9.98e2   3.40e2   3.98e2  | 3.01e2*  4.85e1*  1.02e3   3.40e2   3.42e2
FIS  | 1.65e0*  1.76e0*  3.60e0   2.16e0   2.21e0  | 1.55e0*  1.65e0*  3.67e0   2.15e0   2.17e0
HOU  | 7.43e1*  7.10e1*  1.23e2   8.21e1   2.44e2  | 7.32e1*  7.02e1*  1.26e2   8.19e1   1.27e2
MUS  | 3.27e2*  3.27e2*  -        -        8.09e3  | 3.21e2*  3.26e2*  -        -        2.25e4
RED  | 6.75e-1* 6.12e-1* 3.80e0   7.12e-1  8.66e-1 | 6.14e-1* 5.79e-1* 3.88e0   7.09e-1  6.94e-1
WHI  | 7.03e-1* 6.61e-1* 4.45e0   8.03e-1  1.47e0  | 6.93e-1* 6.40e-1* 4.50e0   8.02e-1  8.21e-1
"""

#: paper abbreviation -> manifest dataset name
LPDT_DATASETS = {
    "ABA": "abalone",
    "AIR": "airfoil_self_noise",
    "ALG": "algerian_forest_fires",
    "AQU": "qsar_aquatic_toxicity",
    "BUI": "residential_building",
    "CBM": "naval_propulsion",
    "CCP": "ccpp_power_plant",
    "CON": "concrete",
    "CPU": "cpusmall",
    "FIS": "qsar_fish_toxicity",
    "HOU": "boston_housing",
    "MUS": "geographical_origin_music",
    "RED": "wine_quality_red",
    "WHI": "wine_quality_white",
}


@attrs.frozen
class Published:
    """One published value: ``value`` (``None`` for an out-of-memory ``-``) and its star;
    ``certain`` is ``False`` where the paper's epsilon of the value is a guess (LPCT blocks A/B)."""

    value: float | None
    significant: bool
    certain: bool = True


def _parse(text: str) -> dict[tuple[str, str, float | None], Published]:
    """``{(dataset, column, epsilon): Published}``; ``DT`` has ``epsilon=None``."""
    table: dict[tuple[str, str, float | None], Published] = {}
    columns: list[tuple[str, float]] = []
    for line in text.strip().splitlines():
        if not line.strip():
            continue
        blocks = [b.strip() for b in line.split("|")]
        if blocks[0].startswith("data"):
            columns = []
            for block in blocks[1:]:
                head, names = block.split(":")
                eps = float(head.split("=")[1])
                columns.extend((name, eps) for name in names.split())
            continue
        first = blocks[0].split()
        name = LPDT_DATASETS[first[0]]
        if len(first) == 2:
            table[(name, "DT", None)] = Published(float(first[1]), False)
        cells = " ".join(blocks[1:]).split()
        if len(cells) != len(columns):
            raise ValueError(f"published table row {first[0]!r} has {len(cells)} cells")
        for cell, (column, eps) in zip(cells, columns, strict=True):
            star = cell.endswith("*")
            number = cell.rstrip("*")
            table[(name, column, eps)] = Published(None if number == "-" else float(number), star)
    return table


LPDT_PUBLISHED = _parse(_LPDT_TABLE)


def lpdt_published(dataset: str, column: str, epsilon: float | None) -> Published | None:
    """The paper's value for a manifest dataset name, a column key and epsilon, if any."""
    return LPDT_PUBLISHED.get((dataset, column, epsilon))


# --- LPCT Table 2 -----------------------------------------------------------------
# Mean test accuracy over 20 repetitions, best grid point by mean test accuracy (oracle), stored
# as a fraction (the paper prints x10: 8.346 = 0.8346). Block C is epsilon = 8 (its rank sums
# match the authors' notebook run at epsilon = 8). Blocks A and B are two smaller budgets whose
# symbols were lost in text extraction; the LPCT budget grid suggests 0.5 and 2, and they are
# stored under those values with ``certain=False`` (tables mark them "?").
LPCT_COLUMNS = (
    "CT-W",
    "LPCT-M",
    "LPCT-V",
    "prune-M",
    "prune-V",
    "CT-Q",
    "PHIST",
    "LPDT",
    "PGLM",
    "PSGD-L",
    "PSGD-N",
)
_LPCT_BLOCKS = {
    (0.5, False): """
Diabetes  9.964 7.067 7.590* 6.489 7.398 7.301 6.676 6.305 5.499 6.582 6.448
Rice      8.992 9.039 9.183* 8.983 9.183* 9.117 5.467 6.583 4.886 8.517 8.142
Census    8.685 8.539 8.743* 8.017 8.440 8.285 -     7.195 5.104 8.310 8.405
""",
    (2.0, False): """
Diabetes  9.964 7.274 7.590* 6.529 7.401 7.301 6.676 6.676 5.499 6.653 6.674
Rice      8.992 9.027 9.183* 8.983 9.183* 9.117 5.467 8.458 4.886 9.050 8.750
Census    8.685 8.537 8.743* 8.017 8.440 8.285 -     8.017 5.104 8.432 8.471
""",
    (8.0, True): """
Diabetes  9.964 7.503 7.930* 6.628 7.410 7.301 6.676 7.496 5.588 7.244 7.101
Rice      8.992 9.011 9.183* 8.983 9.181 9.117 8.858 9.017 6.283 9.017 8.875
Census    8.685 8.557 8.743* 8.017 8.440 8.285 -     8.527 5.389 8.530 8.154
""",
}
#: paper dataset -> our source name (lpct-table); the paper's other eight datasets are not in
#: the shared data folder
LPCT_DATASETS = {"Diabetes": "diabetes", "Rice": "rice", "Census": "adult-census"}


def _parse_lpct() -> dict[tuple[str, str, float], Published]:
    table: dict[tuple[str, str, float], Published] = {}
    for (eps, certain), text in _LPCT_BLOCKS.items():
        for line in text.strip().splitlines():
            name, *cells = line.split()
            if len(cells) != len(LPCT_COLUMNS):
                raise ValueError(f"LPCT published row {name!r} has {len(cells)} cells")
            for column, cell in zip(LPCT_COLUMNS, cells, strict=True):
                number = cell.rstrip("*")
                value = None if number == "-" else float(number) / 10.0
                table[(LPCT_DATASETS[name], column, eps)] = Published(
                    value, cell.endswith("*"), certain
                )
    return table


LPCT_PUBLISHED = _parse_lpct()


def published(dataset: str, column: str, epsilon: float | None) -> Published | None:
    """The value of either paper's table (the dataset names do not overlap)."""
    if epsilon is not None and (dataset, column, epsilon) in LPCT_PUBLISHED:
        return LPCT_PUBLISHED[(dataset, column, epsilon)]
    return lpdt_published(dataset, column, epsilon)
