"""Stored results for the suite, report and diff tests: the tiny fixture claim run once per test
process (about a second), and hand-made variants of its result.json."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from rich.console import Console

from grokverify.claim.load import load_claim
from grokverify.run.outcome import RunOptions
from grokverify.run.pipeline import run_claims

TINY = Path(__file__).parent / "fixtures" / "tiny_claim.yaml"
NASTY = "<script>alert(1)</script> & \"q\" 'a'"


def tiny_options(root: Path, **kw: Any) -> RunOptions:
    return RunOptions(store=root / "store", reports=root / "reports", executor="local",
                      device="cpu", **kw)


@lru_cache(maxsize=1)
def tiny_run() -> Path:
    """A folder with `store/` and `reports/tiny/` of the tiny claim (3 seeds an arm)."""
    root = Path(tempfile.mkdtemp(prefix="grokverify-suite-"))
    run_claims([load_claim(TINY)], tiny_options(root), Console(quiet=True))
    return root


def tiny_result() -> dict[str, Any]:
    return json.loads((tiny_run() / "reports" / "tiny" / "result.json").read_text())


def write_variant(reports: Path, claim_id: str, **changes: Any) -> Path:
    """A copy of tiny's report folder (figures included) as claim `claim_id`, its result dict
    changed by `changes` (top-level keys, or `claim`/`result` keys as claim__x / result__x)."""
    res = copy.deepcopy(tiny_result())
    res["claim"]["id"] = claim_id
    for key, value in changes.items():
        part, _, sub = key.partition("__")
        if sub:
            res[part][sub] = value
        else:
            res[key] = value
    folder = reports / claim_id.replace("/", "_")
    shutil.copytree(tiny_run() / "reports" / "tiny", folder)
    (folder / "result.json").write_text(json.dumps(res))
    return folder / "result.json"


def rename_arm(res: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The result dict with arm `old` called `new` everywhere the report reads arm names."""
    res = copy.deepcopy(res)
    res["arms"] = {(new if k == old else k): v for k, v in res["arms"].items()}
    for arm in res["result"]["arms"]:
        if arm["name"] == old:
            arm["name"] = new
    for row in res["per_seed"]:
        if row["arm"] == old:
            row["arm"] = new
    return res


class _Page(HTMLParser):
    """Every tag with its attributes, the text, and the inline script and style bodies."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.inline: dict[str, list[str]] = {"script": [], "style": []}
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._open = tag if tag in self.inline else None

    def handle_endtag(self, tag: str) -> None:
        self._open = None

    def handle_data(self, data: str) -> None:
        if self._open:
            self.inline[self._open].append(data)
        else:
            self.text.append(data)


def page_of(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text())
    return page
