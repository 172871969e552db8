"""Application signatures (seed 002, §2.2–2.3, Eq. 2–3) from counter time series or from a signatures table.

A signature of an application on a platform is the vector of Pearson
correlations between its CPI series and each of its stall-ratio series, one
point per sampling interval: CPI = cycles / instructions retired, stall ratio
= stall cycles / cycles.

Columns of a counter time-series table (contract 2 of DESIGN.md):

* application: ``application`` or ``workload`` (the first present); when a
  ``variant`` column holds more than one value, applications are
  ``workload[variant]``; replicates of the same application are pooled;
* ``platform`` (optional; without it every row belongs to platform ``default``);
* ``t_start``, ``t_end`` (intervals are ordered by ``t_start``);
* cycles: ``cycles``, ``CPU_CLK_UNHALTED.REF``, ``CPU_CLK_UNHALTED.CORE`` or
  ``CPU_CLK_UNHALTED.THREAD`` (the first present, or ``cycles=``);
* instructions: ``instructions`` or ``INST_RETIRED.ANY`` (or ``instructions=``);
* stall columns: given by ``stalls=``; by default the numeric columns whose name
  contains "stall" (any case), e.g. ``RESOURCE_STALLS.LD_ST``,
  ``RAT_STALLS.ANY``; if no column name contains "stall", every numeric column
  that is not an identifying, time, cycles or instructions column.

A platform's stall set is the stall columns that have values on that
platform (so one table can hold Harpertown's ``RESOURCE_STALLS.LD_ST`` and
Nehalem's ``RESOURCE_STALLS.LOAD`` side by side, empty where not measured).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import ModelInputError, shown

APPLICATION_COLUMNS = ("application", "workload")
PLATFORM_COLUMN = "platform"
DEFAULT_PLATFORM = "default"
TIME_COLUMNS = ("t_start", "t_end")
CYCLES_COLUMNS = ("cycles", "CPU_CLK_UNHALTED.REF", "CPU_CLK_UNHALTED.CORE", "CPU_CLK_UNHALTED.THREAD")
INSTRUCTIONS_COLUMNS = ("instructions", "INST_RETIRED.ANY")
IDENTIFYING_COLUMNS = ("application", "workload", "platform", "variant", "replicate", "run", "seed",
                       "interval", "sample", "time", "t_start", "t_end", "cpi", "CPI")
MIN_INTERVALS = 3
CONSTANT_POLICIES = ("zero", "error")


class SimilarityWarning(UserWarning):
    """A condition the engine handled in a documented way (e.g. an undefined correlation set to 0)."""


@dataclass(frozen=True)
class SignatureSet:
    """Signatures of the applications on one platform: ``values[i, j]`` = r(CPI, stall j) of application i."""

    platform: str
    applications: tuple
    stalls: tuple
    values: np.ndarray
    n_intervals: np.ndarray | None = None      # per application, when computed from time series

    def __post_init__(self):
        self.values.setflags(write=False)

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.values, columns=list(self.stalls))
        df.insert(0, "application", list(self.applications))
        return df


@dataclass(frozen=True)
class Signatures:
    """Signature sets per platform, plus the warnings raised while computing them."""

    platforms: Mapping[str, SignatureSet]
    warnings: tuple = ()
    series: pd.DataFrame | None = field(default=None, repr=False)   # per interval: CPI and stall ratios
    source: str = "table"


# --------------------------------------------------------------------------- helpers
def _where(source: str, index, csv_lines: bool) -> str:
    return f"{source} line {int(index) + 2}" if csv_lines else f"{source} row {index}"


def _application_column(df: pd.DataFrame, source: str) -> str:
    for c in APPLICATION_COLUMNS:
        if c in df.columns:
            return c
    raise ModelInputError(f"{source}: no application column; expected one of {', '.join(APPLICATION_COLUMNS)} "
                          f"(columns: {', '.join(map(str, df.columns))})")


def _labels(df: pd.DataFrame, app_col: str, source: str, csv_lines: bool) -> tuple[pd.Series, pd.Series]:
    apps = df[app_col]
    bad = apps.isna()
    if bad.any():
        raise ModelInputError(f"{_where(source, df.index[bad.to_numpy()][0], csv_lines)}: "
                              f"column '{app_col}' is empty")
    apps = apps.astype(str)
    if "variant" in df.columns and df["variant"].nunique(dropna=True) > 1:
        apps = apps + "[" + df["variant"].astype(str) + "]"
    if PLATFORM_COLUMN in df.columns:
        plats = df[PLATFORM_COLUMN]
        bad = plats.isna()
        if bad.any():
            raise ModelInputError(f"{_where(source, df.index[bad.to_numpy()][0], csv_lines)}: "
                                  f"column 'platform' is empty")
        plats = plats.astype(str)
    else:
        plats = pd.Series(DEFAULT_PLATFORM, index=df.index)
    return apps, plats


def _pick(df: pd.DataFrame, given: str | None, aliases: Sequence[str], what: str, source: str) -> str:
    if given is not None:
        if given not in df.columns:
            raise ModelInputError(f"{source}: {what} column '{given}' not found "
                                  f"(columns: {', '.join(map(str, df.columns))})")
        return given
    for c in aliases:
        if c in df.columns:
            return c
    raise ModelInputError(f"{source}: no {what} column; expected one of {', '.join(aliases)} "
                          f"(columns: {', '.join(map(str, df.columns))})")


def select_stall_columns(df: pd.DataFrame, stalls: Sequence[str] | None, exclude: Sequence[str],
                         source: str, csv_lines: bool = False) -> list[str]:
    """The stall columns: ``stalls`` if given (each must exist), else the default rule (module docstring).

    A column named like a stall is a stall column whatever its cells hold: a text cell in it is an error
    naming its line, never a reason to leave the column out.  Without such names, a column whose
    non-empty cells are mostly numbers is numeric too (its other cells are errors)."""
    if stalls is not None:
        stalls = list(stalls)
        missing = [s for s in stalls if s not in df.columns]
        if missing:
            raise ModelInputError(f"{source}: stall column '{missing[0]}' not found "
                                  f"(columns: {', '.join(map(str, df.columns))})")
        if len(set(stalls)) != len(stalls):
            raise ModelInputError(f"{source}: stall column listed twice in {stalls}")
        chosen = stalls
    else:
        skip = set(exclude) | set(IDENTIFYING_COLUMNS) | set(CYCLES_COLUMNS) | set(INSTRUCTIONS_COLUMNS)
        candidates = [c for c in df.columns if c not in skip]
        named = [c for c in candidates if "stall" in str(c).lower()]
        chosen = named or [c for c in candidates if _is_numeric(df[c]) or _mostly_numeric(df[c])]
    for c in chosen:
        _check_numeric(df, c, source, csv_lines)
    if len(chosen) < 2:
        raise ModelInputError(f"{source}: a signature needs at least 2 stall columns; found "
                              f"{len(chosen)} ({', '.join(map(str, chosen)) or 'none'}); name them with --stalls")
    return [str(c) for c in chosen]


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _mostly_numeric(s: pd.Series) -> bool:
    """Most non-empty cells of a text column parse as numbers: a numeric column with bad cells."""
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
        return False
    present = s.dropna()
    return len(present) > 0 and pd.to_numeric(present, errors="coerce").notna().mean() >= 0.5


def _check_numeric(df: pd.DataFrame, column, source: str, csv_lines: bool) -> None:
    """Every non-empty cell of ``column`` is a number; else the first that is not, by its line."""
    s = df[column]
    if pd.api.types.is_bool_dtype(s):
        raise ModelInputError(f"{source}: stall column '{column}' holds true/false values, not counts")
    if _is_numeric(s):
        return
    bad = (pd.to_numeric(s, errors="coerce").isna() & s.notna()).to_numpy()
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ModelInputError(f"{_where(source, df.index[pos], csv_lines)}: stall column '{column}' has a "
                              f"non-numeric value {shown(s.iloc[pos])}")


def _platform_stalls(block: pd.DataFrame, apps: pd.Series, stalls: list[str], platform: str,
                     source: str, csv_lines: bool) -> list[str]:
    """Stalls measured on this platform; every application must have the same set, with no gaps."""
    present = []
    for s in stalls:
        have = block[s].notna()
        if not have.any():
            continue
        per_app = have.groupby(apps.loc[block.index], sort=False).agg(["any", "all"])
        partial = per_app.index[per_app["any"] & ~per_app["all"]]
        if len(partial):
            rows = block.index[(~have).to_numpy() & (apps.loc[block.index] == partial[0]).to_numpy()]
            raise ModelInputError(f"{_where(source, rows[0], csv_lines)}: missing value in stall column '{s}' "
                                  f"(application '{partial[0]}', platform '{platform}')")
        lacking = per_app.index[~per_app["any"]]
        if len(lacking):
            with_it = int(per_app["any"].sum())
            raise ModelInputError(f"{source}: mismatched stall sets on platform '{platform}': application "
                                  f"'{lacking[0]}' has no '{s}' values but {with_it} other application(s) do; "
                                  f"every application on a platform needs the same stall columns")
        present.append(s)
    if len(present) < 2:
        raise ModelInputError(f"{source}: platform '{platform}' has {len(present)} stall column(s) with values; "
                              f"a signature needs at least 2")
    return present


def _select_platforms(plats: pd.Series, platforms: Sequence[str] | None, source: str) -> list[str]:
    known = list(dict.fromkeys(plats.tolist()))
    if platforms is None:
        return known
    for p in platforms:
        if p not in known:
            raise ModelInputError(f"{source}: platform '{p}' not in the table (platforms: {', '.join(known)})")
    return list(dict.fromkeys(platforms))


# --------------------------------------------------------------------------- time series
def signatures_from_time_series(df: pd.DataFrame, *, stalls: Sequence[str] | None = None,
                                cycles: str | None = None, instructions: str | None = None,
                                platforms: Sequence[str] | None = None, on_constant: str = "zero",
                                source: str = "table", csv_lines: bool = False) -> Signatures:
    """Signatures from a counter time-series table (see the module docstring for the columns).

    A constant CPI or stall-ratio series makes Pearson's r undefined: with ``on_constant="zero"`` the
    component is set to 0 ("no detectable relation", §2.3) and a warning names the application, platform
    and stall; with ``on_constant="error"`` it is an error.  Fewer than 3 intervals is an error.
    """
    if on_constant not in CONSTANT_POLICIES:
        raise ModelInputError(f"The 'on_constant' parameter must be one of {CONSTANT_POLICIES}. "
                              f"Got {on_constant!r} instead.")
    if len(df) == 0:
        raise ModelInputError(f"{source}: the table has no rows")
    if not df.index.is_unique:          # e.g. frames concatenated without ignore_index: rows by position
        df = df.reset_index(drop=True)
    app_col = _application_column(df, source)
    cyc = _pick(df, cycles, CYCLES_COLUMNS, "cycles", source)
    ins = _pick(df, instructions, INSTRUCTIONS_COLUMNS, "instructions", source)
    stall_cols = select_stall_columns(df, stalls, exclude=[app_col, cyc, ins], source=source, csv_lines=csv_lines)
    if cyc in stall_cols or ins in stall_cols:
        raise ModelInputError(f"{source}: the cycles/instructions columns cannot also be stall columns")
    apps, plats = _labels(df, app_col, source, csv_lines)
    for col in (cyc, ins):
        v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(v) | (v <= 0)
        if bad.any():
            raise ModelInputError(f"{_where(source, df.index[bad][0], csv_lines)}: column '{col}' must be a "
                                  f"positive number; got {shown(df[col].iloc[np.flatnonzero(bad)[0]])}")
    warnings: list[str] = []
    sets: dict[str, SignatureSet] = {}
    series_parts: list[pd.DataFrame] = []
    for platform in _select_platforms(plats, platforms, source):
        block = df.loc[(plats == platform).to_numpy()]
        present = _platform_stalls(block, apps, stall_cols, platform, source, csv_lines)
        stall_vals = block[present].apply(pd.to_numeric).to_numpy(dtype=np.float64)
        bad = ~np.isfinite(stall_vals) | (stall_vals < 0)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ModelInputError(f"{_where(source, block.index[r], csv_lines)}: stall column '{present[c]}' must "
                                  f"be a non-negative count; got {shown(stall_vals[r, c])}")
        app = apps.loc[block.index].to_numpy()
        t = _times(block, source, csv_lines) if "t_start" in block.columns else np.arange(len(block))
        codes, names = pd.factorize(app, sort=False)
        order = np.lexsort((np.arange(len(block)), t, codes))
        codes = codes[order]
        cyc_v = block[cyc].to_numpy(dtype=np.float64)[order]
        ins_v = block[ins].to_numpy(dtype=np.float64)[order]
        with np.errstate(over="ignore"):
            cpi = cyc_v / ins_v
            ratios = stall_vals[order] / cyc_v[:, None]
        overflow = ~(np.isfinite(cpi) & np.isfinite(ratios).all(axis=1))
        if overflow.any():                      # e.g. cycles = 1e-320: a stall ratio past the largest float
            i = int(np.flatnonzero(overflow)[0])
            raise ModelInputError(f"{_where(source, block.index[order[i]], csv_lines)}: {cyc} {shown(cyc_v[i])} "
                                  f"and {ins} {shown(ins_v[i])} give a CPI or stall ratio too large for a number")
        counts = np.bincount(codes, minlength=len(names))
        few = np.flatnonzero(counts < MIN_INTERVALS)
        if len(few):
            k = few[0]
            raise ModelInputError(f"{source}: application '{names[k]}' on platform '{platform}' has "
                                  f"{counts[k]} sampling interval(s); a signature needs at least {MIN_INTERVALS}")
        r, const_cpi, const_stall = _grouped_pearson(cpi, ratios, codes, len(names))
        for k in np.flatnonzero(const_cpi):
            msg = (f"application '{names[k]}' on platform '{platform}': the CPI series is constant over its "
                   f"{counts[k]} intervals, so its Pearson correlation with every stall ratio is undefined")
            _constant(msg, on_constant, warnings, "all its signature components are set to 0")
        for k, j in np.argwhere(const_stall & ~const_cpi[:, None]):
            msg = (f"application '{names[k]}' on platform '{platform}': the {present[j]}/cycles series is constant "
                   f"over its {counts[k]} intervals, so its Pearson correlation with CPI is undefined")
            _constant(msg, on_constant, warnings, "the signature component is set to 0")
        sets[platform] = SignatureSet(platform, tuple(str(x) for x in names), tuple(present), r, counts)
        part = pd.DataFrame(ratios, columns=present)
        part.insert(0, "cpi", cpi)
        part.insert(0, "t_start", t[order])
        part.insert(0, "application", np.asarray(names)[codes])
        part.insert(0, "platform", platform)
        series_parts.append(part)
    series = pd.concat(series_parts, ignore_index=True) if series_parts else None
    return Signatures(sets, tuple(warnings), series, source)


def _times(block: pd.DataFrame, source: str, csv_lines: bool) -> np.ndarray:
    """The ``t_start`` column as seconds: every cell a finite number, else the first that is not."""
    t = pd.to_numeric(block["t_start"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(t)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ModelInputError(f"{_where(source, block.index[pos], csv_lines)}: column 't_start' must be a time "
                              f"in seconds; got {shown(block['t_start'].iloc[pos])}")
    return t


def _constant(msg: str, policy: str, warnings: list[str], handling: str) -> None:
    if policy == "error":
        raise ModelInputError(msg + " (on_constant='error')")
    warnings.append(f"{msg}; {handling} (no detectable relation)")


def _grouped_pearson(x: np.ndarray, y: np.ndarray, codes: np.ndarray, n_groups: int, scaled: bool = False):
    """Pearson r(x, y[:, j]) within each group of sorted ``codes``; constant series flagged (r = 0 there).

    Values near the largest float (a CPI of 1e300) overflow the sums of squares; then r is computed again
    from every series divided by its largest magnitude (``scaled``), which leaves r as it is."""
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    counts = np.diff(np.r_[starts, len(codes)])
    if scaled:
        sx = np.maximum.reduceat(np.abs(x), starts)
        sy = np.maximum.reduceat(np.abs(y), starts, axis=0)
        x = x / np.repeat(np.where(sx > 0, sx, 1.0), counts)
        y = y / np.repeat(np.where(sy > 0, sy, 1.0), counts, axis=0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        xm = x - np.repeat(np.add.reduceat(x, starts) / counts, counts)
        ym = y - np.repeat(np.add.reduceat(y, starts, axis=0) / counts[:, None], counts, axis=0)
        sxx = np.add.reduceat(xm * xm, starts)
        syy = np.add.reduceat(ym * ym, starts, axis=0)
        sxy = np.add.reduceat(xm[:, None] * ym, starts, axis=0)
        r = sxy / (np.sqrt(sxx)[:, None] * np.sqrt(syy))
    const_x = np.maximum.reduceat(x, starts) == np.minimum.reduceat(x, starts)
    const_y = np.maximum.reduceat(y, starts, axis=0) == np.minimum.reduceat(y, starts, axis=0)
    undefined = const_x[:, None] | const_y
    if not scaled and not np.isfinite(r[~undefined]).all():
        return _grouped_pearson(x, y, codes, n_groups, scaled=True)
    r = np.where(undefined, 0.0, np.clip(r, -1.0, 1.0))
    out = np.zeros((n_groups, y.shape[1]))
    grp = codes[starts]
    out[grp] = r
    cx = np.zeros(n_groups, dtype=bool)
    cy = np.zeros((n_groups, y.shape[1]), dtype=bool)
    cx[grp] = const_x
    cy[grp] = const_y
    return out, cx, cy


# --------------------------------------------------------------------------- signatures table
def signatures_from_table(df: pd.DataFrame, *, stalls: Sequence[str] | None = None,
                          platforms: Sequence[str] | None = None, source: str = "table",
                          csv_lines: bool = False) -> Signatures:
    """Signatures typed into a table: application, platform, one column per stall (values in [-1, 1])."""
    if len(df) == 0:
        raise ModelInputError(f"{source}: the table has no rows")
    app_col = _application_column(df, source)
    stall_cols = select_stall_columns(df, stalls, exclude=[app_col], source=source, csv_lines=csv_lines)
    apps, plats = _labels(df, app_col, source, csv_lines)
    sets: dict[str, SignatureSet] = {}
    for platform in _select_platforms(plats, platforms, source):
        block = df.loc[(plats == platform).to_numpy()]
        present = _platform_stalls(block, apps, stall_cols, platform, source, csv_lines)
        app = apps.loc[block.index]
        dup = app.duplicated()
        if dup.any():
            raise ModelInputError(f"{_where(source, block.index[dup.to_numpy()][0], csv_lines)}: application "
                                  f"'{app[dup].iloc[0]}' appears twice on platform '{platform}'")
        values = block[present].apply(pd.to_numeric).to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values) | (np.abs(values) > 1.0)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ModelInputError(f"{_where(source, block.index[r], csv_lines)}: column '{present[c]}' must be a "
                                  f"correlation in [-1, 1]; got {shown(values[r, c])}")
        sets[platform] = SignatureSet(platform, tuple(app.tolist()), tuple(present), values.copy())
    return Signatures(sets, (), None, source)


def signatures_from_arrays(values: Mapping[str, tuple[Sequence[str], Sequence[str], np.ndarray]]) -> Signatures:
    """Signatures given directly: ``{platform: (applications, stalls, n x M array)}``."""
    sets = {}
    for platform, (apps, stalls, arr) in values.items():
        arr = np.array(arr, dtype=np.float64)
        if arr.shape != (len(apps), len(stalls)):
            raise ModelInputError(f"platform '{platform}': signature array has shape {arr.shape}, expected "
                                  f"({len(apps)}, {len(stalls)})")
        if not np.all(np.isfinite(arr)) or np.any(np.abs(arr) > 1.0):
            raise ModelInputError(f"platform '{platform}': signatures must be correlations in [-1, 1]")
        if len(set(apps)) != len(apps):
            raise ModelInputError(f"platform '{platform}': duplicate application names")
        sets[str(platform)] = SignatureSet(str(platform), tuple(map(str, apps)), tuple(map(str, stalls)), arr)
    return Signatures(sets, (), None, "arrays")
