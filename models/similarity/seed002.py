"""Seed 002's published figures (Cammarota et al.): Tables 1, 4, 5-9, the §4.1 sensitivity and the §4.3 mean
improvements, read from the shipped data file ``data/seed002.toml`` (values exactly as printed, with their
source) for the similarity study's fidelity tables, which set the simulated analogues next to them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from whatif.models.seed_data import load_seed_data

DATA_FILE = Path(__file__).parent / "data" / "seed002.toml"
SCHEMA_VERSION = 1

_DOC = load_seed_data(DATA_FILE, SCHEMA_VERSION)
SOURCE: str = _DOC["source"]
PLATFORMS: tuple[str, ...] = tuple(_DOC["platforms"])
APPS: tuple[str, ...] = tuple(_DOC["applications"])
# Table 4: the stall counters sampled on each platform, in Table 1's column order
STALLS: dict[str, tuple[str, ...]] = {p: tuple(_DOC["stalls"][p]) for p in PLATFORMS}
# Table 1, one tuple per application: Harpertown (5 values), Nehalem (5), Westmere (5), stalls as in STALLS
TABLE1: dict[str, tuple[float, ...]] = {a: tuple(float(v) for p in PLATFORMS for v in _DOC["table1"][p][a])
                                        for a in APPS}
# Tables 5, 6, 7: lower triangles of the Spearman similarity matrices, rows and columns in APPS order
LOWER: dict[str, tuple[tuple[float, ...], ...]] = {p: tuple(tuple(r) for r in _DOC["similarity"][p]["lower"])
                                                   for p in PLATFORMS}
# Table 8: the cluster holding the reference Y (Algorithm 2, 3-means, 5-means) per platform
TABLE8 = pd.DataFrame([{"method": t["method"], **{p: t[p] for p in PLATFORMS}} for t in _DOC["table8"].values()])
# Table 9: per current -> candidate pair, % correct / incorrect / unpredictable
TABLE9 = pd.DataFrame([(pair, *map(float, v)) for pair, v in _DOC["table9"].items()],
                      columns=["current -> candidate", "% correct", "% incorrect", "% unpredictable"])
# §4.3: from Harpertown, mean improvement of the applications similar to Y vs the whole suite (%)
MEAN_IMPROVEMENT_PCT = {pair: {"similar to Y": float(v["similar_to_reference"]), "suite": float(v["suite"])}
                        for pair, v in _DOC["improvement_pct"].items()}
# §4.1: the three sampling settings [s_i, s_p] (s), the delay, and the mean CPI change between consecutive ones (%)
SENSITIVITY = {"settings": [tuple(float(x) for x in s) for s in _DOC["sensitivity"]["settings"]],
               "delay_s": float(_DOC["sensitivity"]["delay_s"]),
               "printed_ratios_pct": [float(x) for x in _DOC["sensitivity"]["printed_ratios_pct"]],
               "mean_cpi_change_pct": [float(x) for x in _DOC["sensitivity"]["mean_cpi_change_pct"]]}


def signatures(platform: str) -> pd.DataFrame:
    """Table 1 for one platform: application x stall."""
    k = PLATFORMS.index(platform)
    return pd.DataFrame([TABLE1[a][5 * k:5 * k + 5] for a in APPS], index=list(APPS), columns=list(STALLS[platform]))


def similarity(platform: str) -> pd.DataFrame:
    """Table 5, 6 or 7 as a full symmetric matrix."""
    n = len(APPS)
    m = np.eye(n)
    for i, row in enumerate(LOWER[platform]):
        m[i, :len(row)] = row
    m = np.tril(m) + np.tril(m, -1).T
    return pd.DataFrame(m, index=list(APPS), columns=list(APPS))
