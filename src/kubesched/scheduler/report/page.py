"""The page every report is: one HTML file, plotly.js inlined once, no request to anything else.

Charts are plotly figures (``plotly.graph_objects``) drawn by the inlined plotly.js; tables are plain HTML.
Every text that comes from the input (pod and node names, messages) is escaped: a name is data, never markup.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d2733;max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d8dee6}
h3{font-size:15px;margin:18px 0 6px}
.sub{color:#5b6877;margin:0 0 16px} .note{color:#5b6877;font-size:13px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.facts dt{font-weight:600} dl.facts dd{margin:0;word-break:break-word}
.msg{font-family:ui-monospace,Menlo,Consolas,monospace;background:#fff4f2;border-left:4px solid #c83a2a;padding:8px}
table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border:1px solid #d8dee6;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f1f4f8;position:sticky;top:0;white-space:nowrap} td:first-child{white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.pass{background:#e8f6ec;color:#1f7a3a;text-align:center}
td.fail{background:#fde7e4;color:#a8281a;text-align:center;cursor:help}
td.reported{background:#c83a2a;color:#fff;font-weight:700;text-align:center;cursor:help}
td.skip{background:#f4f5f7;color:#8a96a3;text-align:center}
tr.chosen td:first-child{font-weight:700} tr.chosen td:first-child::after{content:" \\2605";color:#c98a00}
.scroll{max-height:640px;overflow:auto;border:1px solid #d8dee6;display:inline-block;max-width:100%}
.chart{margin:8px 0 20px}
ol.help li{margin:3px 0}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border-radius:3px;font-size:12px}
"""

# Nothing phones home: no "Produced with plotly" link, no editing in the chart studio, no MathJax fetch.
PLOTLY_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "showLink": False,
    "showEditInChartStudio": False,
    "responsive": True,
    "modeBarButtonsToRemove": ["sendDataToCloud"],
}


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


class Page:
    """A report being written: sections of HTML and charts, then ``html()`` for the whole file."""

    def __init__(self, title: str, subtitle: str = "") -> None:
        self.title = title
        self.subtitle = subtitle
        self.parts: list[str] = []
        self.charts = 0

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def heading(self, text: str, level: int = 2) -> None:
        self.add(f"<h{level}>{esc(text)}</h{level}>")

    def paragraph(self, text: str, cls: str = "") -> None:
        self.add(f'<p class="{esc(cls)}">{esc(text)}</p>' if cls else f"<p>{esc(text)}</p>")

    def facts(self, rows: Iterable[tuple[str, str]]) -> None:
        items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows)
        self.add(f'<dl class="facts">{items}</dl>')

    def table(
        self, header: list[str], rows: Iterable[list[object]], numeric: frozenset[int] = frozenset(), name: str = ""
    ) -> None:
        """A plain table; the columns numbered in ``numeric`` are right-aligned; ``name`` is its id."""
        head = "".join(f"<th>{esc(h)}</th>" for h in header)
        body = []
        for row in rows:
            cells = "".join(
                f'<td class="num">{esc(v)}</td>' if i in numeric else f"<td>{esc(v)}</td>" for i, v in enumerate(row)
            )
            body.append(f"<tr>{cells}</tr>")
        ident = f' id="{esc(name)}"' if name else ""
        self.add(
            f'<div class="scroll"><table{ident}><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>"
        )

    def chart(self, figure: Any, name: str) -> None:
        """A plotly figure, drawn by the inlined plotly.js when the page loads. ``name`` labels it for the
        tests (``data-chart``): each chart must have drawn marks."""
        self.charts += 1
        div_id = f"chart-{self.charts}"
        spec = figure.to_plotly_json()
        payload = json.dumps(
            {"data": spec.get("data", []), "layout": spec.get("layout", {}), "config": PLOTLY_CONFIG},
            default=_plain,
            separators=(",", ":"),
        )
        # "</" inside a <script> would end it: a node named "</script>" stays data.
        payload = payload.replace("</", "<\\/")
        self.add(
            f'<div class="chart" data-chart="{esc(name)}" id="{div_id}"></div>'
            f'<script>(function(){{var s={payload};Plotly.newPlot("{div_id}",s.data,s.layout,s.config);}})();</script>'
        )

    def html(self) -> str:
        script = ""
        if self.charts:
            from plotly.offline import get_plotlyjs  # the bundled plotly.js, ~4.6 MB: only for a page with charts

            script = get_plotlyjs()
        sub = f'<p class="sub">{esc(self.subtitle)}</p>' if self.subtitle else ""
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            # The page may load nothing from anywhere: a browser that honours this refuses any request.
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data: blob:; "
            'font-src data:">'
            f"<title>{esc(self.title)}</title><style>{CSS}</style>"
            f"<script>{script}</script></head><body>"
            f"<h1>{esc(self.title)}</h1>{sub}{''.join(self.parts)}"
            '<p class="note">Written by kubesched; self-contained (charts by plotly.js, inlined): works offline.</p>'
            "</body></html>\n"
        )


def _plain(value: Any) -> Any:
    """numpy arrays and scalars plotly may leave in a figure's JSON, as lists and numbers."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"not JSON: {type(value).__name__}")
