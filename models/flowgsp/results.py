"""The immutable results of a FlowGSP run: kept sequences with their supports, per-generation figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Callable, Mapping

import pandas as pd

from whatif.models.flowgsp.sequences import format_sequence
from whatif.models.summary import Summary


@dataclass(frozen=True)
class SequenceSupport:
    """One kept sequence (attribute names per element) with S_f and S_w (§3.3.2)."""

    elements: tuple[tuple[str, ...], ...]
    sf: float
    sw: float
    generation: int

    @property
    def sm(self) -> float:
        return max(self.sf, self.sw)

    @property
    def sd(self) -> float:
        return abs(self.sf - self.sw)

    @property
    def text(self) -> str:
        return format_sequence(self.elements)

    def as_dict(self) -> dict[str, Any]:
        return {"sequence": [list(e) for e in self.elements], "sf": self.sf, "sw": self.sw, "sm": self.sm,
                "sd": self.sd}


@dataclass(frozen=True)
class GenerationStats:
    n: int
    candidates: int
    kept: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "candidates": self.candidates, "kept": self.kept, "seconds": round(self.seconds, 4)}


@dataclass(frozen=True)
class FlowGSPResults:
    """Kept sequences ordered by S_M descending (ties: S_D descending, then text), and generation figures."""

    sequences: tuple[SequenceSupport, ...]
    generations: tuple[GenerationStats, ...]
    parameters: Mapping[str, Any] = field(default_factory=dict)
    graph: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))
        object.__setattr__(self, "graph", MappingProxyType(dict(self.graph)))

    @cached_property
    def n_candidates(self) -> int:
        return sum(g.candidates for g in self.generations)

    def table(self, top: int | None = None) -> pd.DataFrame:
        """Kept sequences as a DataFrame (a fresh copy each call)."""
        rows = self.sequences if top is None else self.sequences[:top]
        return pd.DataFrame({"sequence": [s.text for s in rows],
                             "items": [sum(len(e) for e in s.elements) for s in rows],
                             "elements": [len(s.elements) for s in rows],
                             "sf": [s.sf for s in rows], "sw": [s.sw for s in rows],
                             "sm": [s.sm for s in rows], "sd": [s.sd for s in rows]},
                            columns=["sequence", "items", "elements", "sf", "sw", "sm", "sd"])

    def generations_table(self) -> pd.DataFrame:
        return pd.DataFrame([g.as_dict() for g in self.generations], columns=["n", "candidates", "kept", "seconds"])

    def summary(self, top: int = 20) -> Summary:
        """Graph, parameters and counts (aligned ``field  value`` lines), the ``top`` sequences by S_M and the
        generations; tables ``parameters`` (those lines), ``sequences`` and ``generations``."""
        p = self.parameters
        header = (
            ("graph", f"{self.graph.get('methods', '?')} methods, {self.graph.get('vertices', '?')} vertices, "
                      f"{self.graph.get('edges', '?')} edges, {self.graph.get('attributes', '?')} attributes"),
            ("parameters", f"g_max={p.get('gap')} w_max={p.get('window')} n_gen={p.get('n_generations')} "
                           f"S_M>={p.get('min_support')} or S_D>={p.get('min_diff_support')}"),
            ("kept", f"{len(self.sequences)} sequences of {self.n_candidates} candidates "
                     f"in {len(self.generations)} generations, {self.seconds:.2f} s"),
            ("shown", f"top {min(top, len(self.sequences))} by S_M"),
        )
        sequences, generations = self.table(top), self.generations_table()
        width = max(len(k) for k, _ in header)
        lines = [f"{k:<{width}}  {v}" for k, v in header]
        lines.append("")
        lines.append(sequences.to_string(index=False, float_format=lambda x: f"{x:.5f}")
                     if len(sequences) else "(no sequence met the thresholds)")
        lines.append("")
        lines.append(generations.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        return Summary("FlowGSP results", "\n".join(lines),
                       {"parameters": pd.DataFrame(list(header), columns=["field", "value"]),
                        "sequences": sequences, "generations": generations})

    def tables(self) -> dict[str, pd.DataFrame]:
        """``sequences`` (every kept one) and ``generations``, by file stem."""
        return {"sequences": self.table(), "generations": self.generations_table()}

    def figures(self) -> dict[str, Callable[[], Any]]:
        """The supports scatter and the generations bars, by file stem, as functions that draw them."""
        return {"supports": self.plot_supports, "generations": self.plot_generations}

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """The ``whatif mine --json`` document."""
        rows = self.sequences if top is None else self.sequences[:top]
        return {"sequences": [s.as_dict() for s in rows], "generations": [g.as_dict() for g in self.generations]}

    # ------------------------------------------------------------------ plots
    def plot_supports(self):
        """S_w against S_f of every kept sequence, with the S_M threshold and the S_f = S_w diagonal."""
        return supports_figure(self.table(), float(self.parameters.get("min_support", 0.0)))

    def plot_generations(self):
        """Candidates and kept sequences per generation (log scale) and seconds per generation."""
        return generations_figure(self.generations_table())


# the figures as functions of plain tables, so that another process can draw them
def supports_figure(df: pd.DataFrame, min_support: float):
    """S_w against S_f of the sequences of ``df`` (columns sf, sw, items), with the S_M threshold and the
    S_f = S_w diagonal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5))
    if len(df):
        sc = ax.scatter(df.sf, df.sw, c=df["items"], s=14, cmap="viridis", alpha=0.8)
        fig.colorbar(sc, ax=ax, label="items")
        hi = float(max(df.sf.max(), df.sw.max())) * 1.05
    else:
        hi = 1.0
    t = min_support
    ax.plot([0, hi], [0, hi], color="grey", lw=0.8, ls=":")
    ax.plot([0, t, t], [t, t, 0], color="red", lw=0.8, ls="--", label=f"S_M threshold {t:g}")
    ax.set_xlabel("frequency support S_f")
    ax.set_ylabel("weight support S_w")
    ax.set_title("Kept sequences")
    ax.legend(loc="upper right", fontsize=8)
    return fig


def generations_figure(g: pd.DataFrame):
    """Candidates and kept sequences per generation of ``g`` (log scale) and seconds per generation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.bar(g.n - 0.2, g.candidates, width=0.4, label="candidates")
    a1.bar(g.n + 0.2, g.kept, width=0.4, label="kept")
    if len(g) and g.candidates.max() > 0:
        a1.set_yscale("log")
    a1.set_xlabel("generation")
    a1.set_ylabel("sequences")
    a1.legend()
    a2.bar(g.n, g.seconds, color="tab:green")
    a2.set_xlabel("generation")
    a2.set_ylabel("seconds")
    fig.suptitle("FlowGSP generations")
    fig.tight_layout()
    return fig
