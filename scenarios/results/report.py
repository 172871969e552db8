"""Self-contained HTML reports: headings, text, tables and embedded PNG figures, plus provenance.

A report is built section by section and rendered to one HTML file with no
external references (figures are embedded as base64 data URIs), so it can be
mailed or archived on its own.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from whatif.models.summary import display_table
from whatif.scenarios.results.writer import to_json

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;
     padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #446;padding-bottom:.2em} h2{margin-top:1.6em;color:#335}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #bbc;padding:.25em .6em;text-align:right}
th{background:#eef} td:first-child,th:first-child{text-align:left}
figure{margin:1em 0} figcaption{font-size:.9em;color:#555}
img{max-width:100%} .note{color:#555;font-size:.9em} pre{background:#f6f6f9;padding:.6em;overflow-x:auto}
.scroll{overflow-x:auto}
"""


def figure_png(fig, dpi: int = 110) -> bytes:
    """PNG bytes of a matplotlib figure (the figure is closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


@dataclass
class Report:
    """An HTML report assembled from sections in order."""

    title: str
    _parts: list[str] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> "Report":
        self._parts.append(f"<h{level}>{html.escape(text)}</h{level}>")
        return self

    def paragraph(self, text: str, note: bool = False) -> "Report":
        cls = ' class="note"' if note else ""
        self._parts.append(f"<p{cls}>{html.escape(text)}</p>")
        return self

    def notes(self, label: str, items: list[str], open_up_to: int = 3) -> "Report":
        """A list of notes (warnings, exclusions) under ``label`` with their count; longer lists than
        ``open_up_to`` start folded, so they do not push the results off the first screen."""
        if not items:
            return self
        opened = " open" if len(items) <= open_up_to else ""
        rows = "".join(f"<li>{html.escape(item)}</li>" for item in items)
        self._parts.append(f'<details class="note"{opened}><summary>{html.escape(label)} ({len(items)})</summary>'
                           f"<ul>{rows}</ul></details>")
        return self

    def preformatted(self, text: str) -> "Report":
        self._parts.append(f"<pre>{html.escape(text)}</pre>")
        return self

    def table(self, df: pd.DataFrame, caption: str | None = None, index: bool = False,
              float_format: str | None = None) -> "Report":
        """A table, each numeric column in one format (:func:`whatif.models.summary.display_table`;
        ``float_format`` for the columns that are not all whole numbers, else chosen per column), in a box
        that scrolls sideways when the table is wider than the page."""
        frame = df.reset_index() if index else df
        body = display_table(frame, float_format).to_html(index=False, border=0, na_rep="–", escape=True)
        cap = f"<p><b>{html.escape(caption)}</b></p>" if caption else ""
        self._parts.append(f'{cap}<div class="scroll">{body}</div>')
        return self

    def figure(self, fig_or_png: Any, caption: str | None = None) -> "Report":
        png = fig_or_png if isinstance(fig_or_png, (bytes, bytearray)) else figure_png(fig_or_png)
        data = base64.b64encode(png).decode("ascii")
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        self._parts.append(f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption or "")}">'
                           f"{cap}</figure>")
        return self

    def summary(self, summary: Any) -> "Report":
        """An engine's :class:`~whatif.models.summary.Summary`: its text and the tables behind it."""
        self._parts.append(summary.as_html())
        return self

    def extend(self, other: "Report") -> "Report":
        """Append the sections of ``other`` (built ahead of time, e.g. by a study); its title is dropped."""
        self._parts.extend(other._parts)
        return self

    def provenance(self, manifest: dict) -> "Report":
        """A closing section listing seed, versions, host time and the resolved parameters."""
        self.heading("Provenance")
        rows = []
        for key in ("study", "seed", "command_line", "git_commit", "created_utc", "host_seconds", "whatif_version"):
            if manifest.get(key) is not None:
                value = manifest[key]
                rows.append((key, " ".join(value) if isinstance(value, list) else str(value)))
        for key, value in manifest.get("rates", {}).items():
            rows.append((key, f"{value:,.0f}" if isinstance(value, (int, float)) else str(value)))
        self.table(pd.DataFrame(rows, columns=["field", "value"]))
        if "versions" in manifest:
            self.table(pd.DataFrame(sorted(manifest["versions"].items()), columns=["package", "version"]),
                       caption="Package versions")
        for key, label in (("scenario", "Scenario"), ("parameters", "Resolved parameters"),
                           ("platforms", "Resolved platforms")):
            if manifest.get(key):
                self._parts.append(f"<details><summary>{label}</summary><pre>"
                                   + html.escape(to_json(manifest[key])) + "</pre></details>")
        return self

    def html(self) -> str:
        return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
                f"<title>{html.escape(self.title)}</title><style>{_CSS}</style></head><body>"
                f"<h1>{html.escape(self.title)}</h1>" + "\n".join(self._parts) + "</body></html>\n")
