"""Open a suite's index.html in headless Chromium at 1280 × 800 and say what a reader sees:
the verdict table's columns, each row's height against two text lines, which claims' names,
verdicts and forest strips are on the first screen, and whether the page prints to PDF with
every figure. Prints JSON; exit 1 when a check fails, 2 without a browser.

    python runners/browser_check.py reports/reference/quick/index.html
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

WIDTH, HEIGHT = 1280, 800
FIRST_CLAIMS = 10  # claims whose name, verdict and strip the first screen must show
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")

# runs at the end of the page: measures the table as laid out and writes it into the page
_MEASURE = """<script>(function(){var t=document.getElementById('verdicts'),b=t.tBodies[0];
function box(e){var r=e.getBoundingClientRect();return {top:r.top,bottom:r.bottom,left:r.left,
right:r.right,height:r.height};}
var line=parseFloat(getComputedStyle(b.rows[0].cells[0]).lineHeight);
var out={viewport:[innerWidth,innerHeight],line:line,
columns:Array.prototype.map.call(t.tHead.rows[0].cells,function(c){return c.textContent;}),
rows:Array.prototype.map.call(b.rows,function(r){return {claim:r.cells[0].textContent,
verdict:r.cells[1].textContent,row:box(r),name:box(r.cells[0]),verdict_box:box(r.cells[1]),
strip:box(r.cells[2]),svg:r.cells[2].getElementsByTagName('svg').length};})};
var p=document.createElement('pre');p.id='grokverify-measure';p.textContent=JSON.stringify(out);
document.body.appendChild(p);})();</script>"""


def browser() -> str | None:
    """The first Chromium-like browser on PATH."""
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def _run(exe: str, *args: str) -> str:
    done = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                           f"--window-size={WIDTH},{HEIGHT}", *args], capture_output=True,
                          text=True, timeout=300)
    return done.stdout


def measure(exe: str, page: Path) -> dict[str, Any]:
    """The table as Chromium lays it out at WIDTH × HEIGHT (a copy of the page that measures
    itself; the page is not changed)."""
    html = page.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / page.name
        copy.write_text(html.replace("</body>", _MEASURE + "</body>", 1))
        dom = _run(exe, "--dump-dom", copy.as_uri())
    found = re.search(r'<pre id="grokverify-measure">(.*?)</pre>', dom, re.S)
    if found is None:
        raise RuntimeError("the browser wrote no measurement (did the page load?)")
    return json.loads(found[1].replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def pdf_images(exe: str, page: Path) -> tuple[int, int]:
    """(distinct images the page shows, image objects in its printed PDF)."""
    html = page.read_text()
    shown = len(set(re.findall(r'<img src="([^"]+)"', html)))
    with tempfile.TemporaryDirectory() as tmp:
        pdf = Path(tmp) / "page.pdf"
        _run(exe, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.resolve().as_uri())
        printed = len(re.findall(rb"/Subtype\s*/Image", pdf.read_bytes())) if pdf.exists() \
            else 0
    return shown, printed


def checks(m: dict[str, Any], images: tuple[int, int]) -> dict[str, bool]:
    """The reader's checks, each true or false."""
    width, height = m["viewport"]
    first = m["rows"][:FIRST_CLAIMS]
    return {
        "columns start claim, verdict, forest strip": m["columns"][:3] == [
            "claim", "verdict", m["columns"][2]] and m["columns"][2].startswith("on its region"),
        "no row taller than two text lines": all(r["row"]["height"] <= 2 * m["line"]
                                                 for r in m["rows"]),
        f"first screen shows the first {FIRST_CLAIMS} claims' names, verdicts and strips":
            len(first) >= FIRST_CLAIMS and all(
                r["row"]["bottom"] <= height and r["strip"]["right"] <= width
                and r["verdict_box"]["right"] <= width and r["svg"] == 1 for r in first),
        "every figure prints to PDF": images[0] > 0 and images[1] >= images[0],
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    exe = browser()
    if exe is None:
        print("no Chromium on PATH (apt-get install chromium)", file=sys.stderr)
        return 2
    page = Path(argv[0])
    m = measure(exe, page)
    images = pdf_images(exe, page)
    result = checks(m, images)
    rows = m["rows"]
    print(json.dumps({"viewport": m["viewport"], "line_px": m["line"],
                      "columns": m["columns"],
                      "tallest_row_px": max(r["row"]["height"] for r in rows),
                      "rows_on_first_screen": sum(r["row"]["bottom"] <= m["viewport"][1]
                                                  for r in rows),
                      "images_shown": images[0], "images_in_pdf": images[1],
                      "checks": result}, indent=2))
    return 0 if all(result.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
