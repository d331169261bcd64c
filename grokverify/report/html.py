"""index.html of a suite: one self-contained file, readable offline and in print.

The verdict table (sortable by a click on a header, filtered by paper and verdict by a few lines
of inline script), then each claim's section: the Markdown of `report.suite_md`, rendered with
raw HTML off (claim text is already inert: `report.escape`), and its figures embedded as base64
data URIs. A Content-Security-Policy allows nothing but the inline style, the inline script and
data: images, so the page fetches nothing from anywhere even if something slipped in.
"""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from grokverify.report.cells import FOREST, cells, columns, details
from grokverify.report.forest import (
    MARKER_GLYPHS,
    axis_svg,
    paper_markers,
    row_entries,
    strip_svg,
)
from grokverify.report.markdown import figure_caption
from grokverify.report.png import palette_png
from grokverify.report.suite import ClaimReport
from grokverify.report.suite_md import section_head, section_tail

_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")
_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
         ".webp": "image/webp"}

_CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;color:#111;background:#fff;max-width:72rem;
margin:1.5rem auto;padding:0 1rem}
h1,h2,h3,h4{line-height:1.2}h2{margin-top:2.5rem;border-top:2px solid #444;padding-top:.8rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.88rem}
th,td{border:1px solid #999;padding:.2rem .45rem;text-align:left;vertical-align:top}
thead th{background:#e8e8e8}#verdicts thead th{cursor:pointer;user-select:none}
#verdicts td,#verdicts th{white-space:nowrap}.wide{overflow-x:auto}
#verdicts td{padding-top:.1rem;padding-bottom:.1rem}th.forest svg{display:block}
td svg{display:block}.legend{font-size:.82rem;color:#333;margin:.3rem 0}
#verdicts th[aria-sort=ascending]::after{content:" \\25B2"}
#verdicts th[aria-sort=descending]::after{content:" \\25BC"}
td.v,span.v{font-weight:700;white-space:nowrap}
.v-SUPPORTED{background:#d7f0d7}.v-REFUTED{background:#f6d2d2}
.v-INCONCLUSIVE,.v-PARTIAL{background:#f8ecc4}.v-FINDING{background:#d4e8f4}
.v-NOT_TESTED{background:#e0e0e0}
blockquote{margin:.6rem 0;padding:.2rem .8rem;border-left:4px solid #888;background:#f4f4f4}
section.not-paper blockquote:first-of-type{border-left:6px solid #b00;background:#fbeaea}
code{font:.85em ui-monospace,monospace;background:#f0f0f0;padding:0 .2em;word-break:break-all}
figure{margin:.8rem 0}figure img{max-width:100%;height:auto;border:1px solid #ccc}
figcaption{font-size:.85rem;color:#444}.controls{margin:.5rem 0}.controls label{margin-right:1rem}
.missing{color:#b00;font-weight:700}small{color:#444}
@media print{.controls{display:none}body{max-width:none;margin:0;font-size:10pt}
a{color:inherit;text-decoration:none}h2{break-before:page}table,figure{break-inside:avoid}
#verdicts thead th::after{content:""}}
"""

# Sort by a header's column (numbers before words; a second click reverses); filter by the
# paper and verdict selects. No data is inside the script: rows carry it in data- attributes.
_SCRIPT = """
(function(){var t=document.getElementById('verdicts'),b=t.tBodies[0],hs=t.tHead.rows[0].cells;
function k(r,i){var v=r.cells[i].getAttribute('data-sort'),n=Number(v);
return v!==''&&!isNaN(n)?[0,n]:[1,v.toLowerCase()];}
Array.prototype.forEach.call(hs,function(h,i){h.addEventListener('click',function(){
var d=h.getAttribute('aria-sort')==='ascending'?-1:1;
Array.prototype.forEach.call(hs,function(o){o.removeAttribute('aria-sort');});
h.setAttribute('aria-sort',d>0?'ascending':'descending');
var rs=Array.prototype.slice.call(b.rows);rs.sort(function(x,y){var p=k(x,i),q=k(y,i);
return p[0]!==q[0]?p[0]-q[0]:p[1]<q[1]?-d:p[1]>q[1]?d:0;});
rs.forEach(function(r){b.appendChild(r);});});});
var fp=document.getElementById('f-paper'),fv=document.getElementById('f-verdict');
function f(){Array.prototype.forEach.call(b.rows,function(r){
r.hidden=!((!fp.value||r.getAttribute('data-paper')===fp.value)&&
(!fv.value||r.getAttribute('data-verdict')===fv.value));});}
fp.addEventListener('change',f);fv.addEventListener('change',f);})();
"""


def data_uri(path: Path) -> str | None:
    """The image file as a data: URI (a PNG palette-reduced, to keep the page small); None
    when it cannot be read or is not an image."""
    mime = _MIME.get(path.suffix.lower())
    try:
        raw = path.read_bytes() if mime else None
    except OSError:
        return None
    if not raw:
        return None
    if mime == "image/png":
        raw = palette_png(raw)
    return f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}"


def _anchor(claim_id: str) -> str:
    return escape(f"claim-{claim_id}", quote=True)


def _sort_value(key: float | str) -> str:
    if isinstance(key, float):
        return "1e999" if key == float("inf") else "-1e999" if key == float("-inf") else repr(key)
    return key


def _options(label: str, ident: str, values: list[str]) -> str:
    options = "".join(f'<option value="{escape(v, quote=True)}">{escape(v)}</option>'
                      for v in values)
    return (f'<label>{escape(label)} <select id="{ident}"><option value="">all</option>'
            f"{options}</select></label>")


def _table(rows: list[dict[str, Any]]) -> str:
    shown_columns = columns(rows)
    head = "".join(f'<th scope="col">{escape(c)}</th>' if c != FOREST else
                   f'<th scope="col" class="forest">{escape(c)}{axis_svg()}</th>'
                   for c in shown_columns)
    markers = paper_markers([r["arxiv"] for r in rows])
    body = []
    for row in rows:
        shown, more = cells(row), details(row)
        more = {**more, FOREST: shown[FOREST][0]}
        tds = []
        for column in shown_columns:
            words, key = shown[column]
            inner = escape(words)
            if column == "claim":
                inner = f'<a href="#{_anchor(row["id"])}">{inner}</a>'
            elif column == FOREST:
                inner = strip_svg(row_entries(row), markers)
            css = row["verdict"].replace(" ", "_")
            cls = f' class="v v-{escape(css, quote=True)}"' if column == "verdict" else ""
            tip = f' title="{escape(more[column], quote=True)}"' if more.get(column) else ""
            tds.append(f'<td{cls}{tip} data-sort="{escape(_sort_value(key), quote=True)}">'
                       f"{inner}</td>")
        body.append(f'<tr data-paper="{escape(row["arxiv"], quote=True)}" '
                    f'data-verdict="{escape(row["verdict"], quote=True)}">{"".join(tds)}</tr>')
    shapes = " ".join(f"{MARKER_GLYPHS[m]} arXiv:{escape(a)}" for a, m in markers.items())
    legend = (f'<p class="legend"><b>{escape(FOREST)}</b>: each estimate and CI on one axis, '
              "its distance beyond the claimed region's boundary (0; shaded: inside, where a "
              "CI supports; right of 0 it refutes; docs/verdicts.md, \"The forest plot's "
              f"axis\"). Colour: the verdict. Marker: {shapes}; hollow: not the paper's "
              "setting. Dashed: a critic's claim (falsifier, skeptic, referee, inference).</p>")
    controls = (legend + '<div class="controls">'
                + _options("paper", "f-paper", sorted({r["arxiv"] for r in rows}))
                + _options("verdict", "f-verdict", sorted({r["verdict"] for r in rows}))
                + "<small>click a column's header to sort by it; hover a cell for its details"
                "</small></div>")
    return (f'{controls}<div class="wide"><table id="verdicts"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _figures(report: ClaimReport) -> str:
    out = []
    for name, file in report.result.get("figures", {}).items():
        caption = escape(figure_caption(name, report.result.get("figure_captions")))
        uri = data_uri(report.folder / file)
        if uri is None:
            out.append(f'<p class="missing">figure missing: {caption} ({escape(file)})</p>')
        else:
            out.append(f'<figure><img src="{uri}" alt="{escape(caption, quote=True)}">'
                       f"<figcaption>{caption}</figcaption></figure>")
    return "\n".join(out)


def _section(report: ClaimReport, row: dict[str, Any]) -> str:
    res = report.result
    cls = "claim" if res["scale"]["paper_setting"] else "claim not-paper"
    return (f'<section id="{_anchor(row["id"])}" class="{cls}">\n'
            f'{_MARKDOWN.render(chr(10).join(section_head(res)))}{_figures(report)}\n'
            f'{_MARKDOWN.render(chr(10).join(section_tail(res)))}</section>')


def _page(title: str, body: str) -> str:
    """A self-contained page in the suite's style (its policy allows no outside resource)."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{_STYLE}</style></head>
<body>
{body}</body></html>
"""


def render_index_html(suite: dict[str, Any], reports: list[ClaimReport],
                      forest: str | None = None) -> str:
    """index.html; `forest`: the library's forest plot as a data: URI (None: not drawn)."""
    rows = suite["claims"]
    plot = "" if not forest else (
        f'<figure><img src="{forest}" alt="the library\'s forest plot"><figcaption>The '
        "library's forest plot: every claim (a family: each member) on its claimed region, "
        "as in the table's strips</figcaption></figure>")
    sections = "\n".join(_section(r, row) for r, row in zip(reports, rows, strict=True))
    return _page(f"grokverify verdicts ({len(rows)} claims)", f"""<h1>Verdicts</h1>
<p>{len(rows)} claim(s); generated {escape(suite["generated"])}. Each claim's full report (setup,
per-seed results, provenance) is report.md in its folder.</p>
{_table(rows)}
{plot}
{sections}
<script>{_SCRIPT}</script>
""")


def render_page(title: str, markdown_text: str) -> str:
    """A standalone page (a paper's referee report) in the suite's style, from its Markdown."""
    return _page(title, _MARKDOWN.render(markdown_text))
