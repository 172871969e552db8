"""Seed 002's published figures (Cammarota et al.): Tables 1, 5-8 and the §4.3 mean speedups, typed in for the
similarity study's report, which sets the simulated analogues next to them.  Table 9 is
``models.similarity.evaluation.SEED002_TABLE9``.  Values exactly as printed (application names as in SPEC).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PLATFORMS = ("harpertown", "nehalem", "westmere")
# Table 4: the stall counters sampled on each platform, in Table 1's column order
STALLS = {
    "harpertown": ("RESOURCE_STALLS.LD_ST", "RESOURCE_STALLS.BR_MISS_CLEAR", "RAT_STALLS.ANY",
                   "RESOURCE_STALLS.ROB_FULL", "RESOURCE_STALLS.RS_FULL"),
    "nehalem": ("RESOURCE_STALLS.LOAD", "RESOURCE_STALLS.STORE", "RAT_STALLS.ANY", "RESOURCE_STALLS.ROB_FULL",
                "RESOURCE_STALLS.RS_FULL"),
}
STALLS["westmere"] = STALLS["nehalem"]

APPS = ("400.perlbench", "483.xalancbmk", "403.gcc", "429.mcf", "401.bzip2", "445.gobmk", "456.hmmer", "458.sjeng", "462.libquantum", "464.h264ref", "471.omnetpp", "473.astar")

# Table 1, one tuple per application: Harpertown (5 values), Nehalem (5), Westmere (5), stalls as in STALLS
TABLE1 = {
    "400.perlbench": (0.30, 0.71, 0.56, 0.42, -0.61, 0.29, -0.38, -0.14, 0.28, -0.46, 0.14, 0.14, 0.23, 0.15, -0.06),
    "483.xalancbmk": (0.71, 0.37, 0.15, 0.45, 0.87, -0.07, 0.50, 0.39, -0.05, 0.79, -0.16, 0.31, 0.32, -0.03, 0.37),
    "403.gcc": (-0.50, 0.37, -0.42, -0.12, 0.60, 0.07, -0.09, 0.02, 0.09, 0.73, -0.07, -0.07, -0.12, -0.16, -0.19),
    "429.mcf": (0.44, 0.65, 0.40, 0.03, -0.39, 0.26, -0.15, -0.03, -0.25, 0.26, -0.01, -0.02, 0.05, 0.14, -0.02),
    "401.bzip2": (-0.01, 0.23, 0.01, -0.10, 0.09, -0.14, -0.22, -0.23, -0.24, 0.10, 0.08, 0.12, 0.08, -0.07, -0.05),
    "445.gobmk": (0.48, -0.20, 0.16, -0.03, -0.22, 0.00, 0.03, 0.04, -0.03, -0.03, 0.15, 0.11, 0.16, 0.25, 0.24),
    "456.hmmer": (0.41, 0.24, 0.57, 0.17, 0.99, -0.02, 0.08, -0.07, 0.01, -0.04, 0.23, 0.11, 0.22, 0.34, 0.36),
    "458.sjeng": (0.81, 0.28, 0.49, 0.58, 0.27, 0.06, -0.13, 0.01, 0.06, -0.18, 0.08, 0.15, 0.17, 0.20, 0.23),
    "462.libquantum": (0.99, 0.08, 0.38, -0.93, -0.75, 0.05, -0.09, -0.03, -0.09, -0.07, -0.01, -0.01, -0.02, -0.04, -0.04),
    "464.h264ref": (0.77, 0.25, -0.08, 0.01, -0.08, 0.62, 0.19, 0.10, 0.17, 0.60, 0.27, 0.16, 0.26, 0.30, 0.32),
    "471.omnetpp": (0.57, 0.56, 0.56, 0.55, 0.55, 0.49, 0.51, 0.50, 0.54, 0.51, 0.21, 0.18, 0.21, 0.31, 0.31),
    "473.astar": (0.94, 0.96, 0.80, -0.24, -0.88, 0.51, 0.15, 0.16, -0.38, -0.66, 0.03, 0.41, 0.33, 0.21, 0.34),
}

# Tables 5, 6, 7: lower triangles of the Spearman similarity matrices, rows and columns in APPS order
LOWER = {
    "harpertown": (
        (1,),
        (-0.8, 1,),
        (-0.1, -0.1, 1,),
        (0.7, -0.2, -0.4, 1,),
        (0.3, -0.3, 0.6, 0.3, 1,),
        (0.1, 0.1, -1, 0.4, -0.6, 1,),
        (-0.5, 0.1, 0.2, -0.4, 0.4, -0.2, 1,),
        (0, 0.3, -0.9, 0.3, -0.8, 0.9, -0.5, 1,),
        (0.1, 0.1, -0.7, 0.6, 0.1, 0.7, 0.3, 0.4, 1,),
        (0.3, 0.3, -0.6, 0.8, -0.2, 0.6, -0.6, 0.7, 0.5, 1,),
        (0.2, 0.2, -0.5, 0.8, 0.3, 0.5, 0.1, 0.3, 0.9, 0.7, 1,),
        (0.7, -0.2, -0.4, 1, 0.3, 0.4, -0.4, 0.3, 0.6, 0.8, 0.8, 1,),
    ),
    "nehalem": (
        (1,),
        (-1, 1,),
        (-0.1, 0.1, 1,),
        (-0.3, 0.3, 0.4, 1,),
        (-0.4, 0.4, 0.3, 0.9, 1,),
        (-0.1, 0.1, -0.8, 0.1, 0, 1,),
        (0.1, -0.1, -0.3, -0.6, -0.2, -0.3, 1,),
        (1, -1, -0.1, -0.3, -0.4, -0.1, 0.1, 1,),
        (0.3, -0.3, -0.1, 0.7, 0.5, 0.5, -0.6, 0.3, 1,),
        (0.1, -0.1, 0.3, 0.6, 0.8, -0.3, 0.2, 0.1, 0.4, 1,),
        (-0.3, 0.3, 0.1, -0.7, -0.5, -0.5, 0.6, -0.3, -1, -0.4, 1,),
        (0.7, -0.7, -0.6, 0, -0.1, 0.6, -0.1, 0.7, 0.7, 0.1, -0.7, 1,),
    ),
    "westmere": (
        (1,),
        (-0.3, 1,),
        (-0.2, 0.3, 1,),
        (0.8, -0.3, 0.2, 1,),
        (0.5, -0.1, -0.9, 0.1, 1,),
        (0.1, -0.1, 0.9, 0.5, -0.8, 1,),
        (-0.5, 0.1, 0.9, -0.1, -1.0, 0.8, 1,),
        (-0.1, 0.4, 0.9, 0.4, -0.7, 0.8, 0.7, 1,),
        (0.2, 0.0, 0.8, 0.7, -0.6, 0.9, 0.6, 0.9, 1,),
        (-0.5, 0.1, 0.9, -0.1, -1.0, 0.8, 1.0, 0.7, 0.6, 1,),
        (-0.2, 0.3, 1.0, 0.2, -0.9, 0.9, 0.9, 0.9, 0.8, 0.9, 1,),
        (-0.1, 0.6, -0.1, 0.1, 0.3, -0.3, -0.3, 0.3, 0.1, -0.3, -0.1, 1,),
    ),
}

# Table 8: the cluster holding the reference Y (Algorithm 2, 3-means, 5-means) per platform
TABLE8 = pd.DataFrame([
    {"method": "Algorithm 2", "harpertown": "Y, 462.libquantum, 471.omnetpp", "nehalem": "Y, 445.gobmk",
     "westmere": "Y, 473.astar, 483.xalancbmk, 458.sjeng, 471.omnetpp, 464.h264ref, 445.gobmk, 456.hmmer, 429.mcf"},
    {"method": "3-means", "harpertown": "Y, 400.perlbench, 429.mcf, 462.libquantum, 464.h264ref, 471.omnetpp, 473.astar",
     "nehalem": "Y, 400.perlbench, 462.libquantum, 445.gobmk, 458.sjeng, 473.astar",
     "westmere": "Y, 473.astar, 483.xalancbmk"},
    {"method": "5-means", "harpertown": "Y, 462.libquantum, 471.omnetpp", "nehalem": "Y, 445.gobmk",
     "westmere": "Y, 473.astar, 483.xalancbmk"},
])

# §4.3: from Harpertown, mean improvement of the applications similar to Y vs the whole suite (%)
MEAN_IMPROVEMENT_PCT = {"harpertown->nehalem": {"similar to Y": 23.0, "suite": 6.0},
                        "harpertown->westmere": {"similar to Y": 39.0, "suite": 33.0}}


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
