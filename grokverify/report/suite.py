"""A suite: the claims of one run side by side, one row per claim, and the helpers that read a
claim's result dict. Built from result dicts (result.json), never from pipeline objects, so a
suite can be rebuilt from any folder of reports and `grokverify diff` needs only results.json.
`report.index` writes the suite's files.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SUITE_VERSION = 1
SUITE_FILES = {"json": "results.json", "md": "index.md", "html": "index.html"}


class SuiteError(ValueError):
    """A suite or result file that cannot be read (the CLI says which, exit 2)."""


@dataclass(frozen=True)
class ClaimReport:
    """One claim's result dict and where its result.json lies (its figures are beside it)."""

    path: Path
    result: dict[str, Any]

    @property
    def folder(self) -> Path:
        return self.path.parent


def member_results(res: dict[str, Any]) -> dict[str, Any]:
    """Each family member's criterion result by member; {"": result} for a claim without one."""
    fam = res.get("family")
    return {m["member"]: m["result"] for m in fam["members"]} if fam else {"": res.get("result")}


def _effect(result: dict[str, Any]) -> dict[str, Any]:
    """A criterion result's effect, CI, claimed region and p's against θ (None where it gives
    none): what the table and the forest plots show."""
    return {"effect_label": result["effect_label"], "estimate": result["estimate"],
            "ci": result["ci"], "ci_level": result["ci_level"],
            "claimed_region": result.get("claimed_region"), "threshold": result.get("threshold"),
            "p_support": result.get("p_support"), "p_refute": result.get("p_refute")}


def _members(res: dict[str, Any]) -> list[dict[str, Any]] | None:
    fam = res.get("family")
    if not fam:
        return None
    return [{"member": m["member"], "verdict": m["verdict"], **_effect(m["result"])}
            for m in fam["members"]]


def _seeds_per_arm(res: dict[str, Any]) -> int:
    """The most seeds an arm has (every arm has as many in a run of the pipeline)."""
    return max((len(a["seeds"]) for a in res["arms"].values()), default=0)


def _command(res: dict[str, Any], verb: str, seeds: bool) -> list[str]:
    """`grokverify VERB` for this claim: its file and scale, its seeds per arm when `seeds`
    (not for sequential seeding, whose rounds `--seeds` would fix), the device type when not a
    CPU's (store keys hold it) and the data folder it read."""
    parts = ["grokverify", verb, res["claim"]["file"], "--scale", res["scale"]["name"]]
    if seeds and not res.get("sequential"):
        parts += ["--seeds", str(_seeds_per_arm(res))]
    device = str(res["provenance"].get("requested_device") or "cpu")
    if not device.startswith("cpu"):
        parts += ["--device", device.split(":")[0]]
    for data in res.get("data", [])[:1]:
        parts += ["--data-dir", data["folder"]]
    return parts


def reproduce_command(res: dict[str, Any]) -> str:
    """The `grokverify run` that trains (or reuses) the same records and writes this report."""
    return shlex.join(_command(res, "run", seeds=True))


def rebuild_command(res: dict[str, Any]) -> str:
    """The `grokverify report` that rebuilds this report from the store it was made from."""
    command = reproduce_command(res).replace("grokverify run ", "grokverify report ", 1)
    store = res["provenance"].get("store")
    return f"{command} --store {shlex.quote(store)}" if store else command


def plan_command(res: dict[str, Any]) -> str:
    """The `grokverify plan` that sizes the seeds for 80% power from the stored seeds."""
    store = res["provenance"].get("store")
    return shlex.join(_command(res, "plan", seeds=False) + (["--store", store] if store else []))


def sides(res: dict[str, Any]) -> dict[str, str]:
    """The claim's interpretation's sides: {"supported": side, "refuted": side} (or fewer)."""
    return dict((res.get("interpretation") or {}).get("favours") or {})


def side_of(verdict: str, claim_sides: dict[str, str]) -> str | None:
    """The side a verdict favours (paper, critic, neither); None for one that decides nothing
    or a claim that declares no side."""
    return claim_sides.get({"SUPPORTED": "supported", "REFUTED": "refuted"}.get(verdict, ""))


def favours(res: dict[str, Any]) -> str | None:
    """The side the claim's verdict favours by its interpretation."""
    return side_of(res["verdict"], sides(res))


def suite_row(res: dict[str, Any], result_json: str) -> dict[str, Any]:
    """The verdict table's row of one claim, with what `diff` needs (per-member effects of a
    family, so a member's move outside its CI is seen too)."""
    claim, prov = res["claim"], res["provenance"]
    single = _effect(res["result"]) if res.get("result") else dict.fromkeys(
        ("effect_label", "estimate", "ci", "ci_level", "claimed_region", "threshold",
         "p_support", "p_refute"))
    return {
        "id": claim["id"], "title": claim["title"], "arxiv": claim["source"]["arxiv"],
        "where": claim["source"]["where"], "role": claim["source"]["role"],
        "scale": res["scale"]["name"], "paper_setting": res["scale"]["paper_setting"],
        "metric": res["metric"]["label"], **single, "members": _members(res),
        "verdict": res["verdict"], "favours": favours(res), "sides": sides(res),
        "reason": res["reason"],
        "seeds_per_arm": _seeds_per_arm(res),
        "seed_runs": len(res["per_seed"]),
        "wall_s": prov["wall_s"], "records_train_s": prov.get("records_train_s"),
        "trained": prov["seeds_trained_now"],
        "reused": prov["seeds_reused"], "claim_file": claim["file"],
        "command": reproduce_command(res), "result_json": result_json,
    }


def relative_path(path: Path, folder: Path) -> str:
    """A result.json's path as the suite names it: relative to the suite's folder (so a suite
    moves with its claim folders), absolute when on another drive."""
    try:
        return Path(os.path.relpath(path.resolve(), folder.resolve())).as_posix()
    except ValueError:
        return str(path.resolve())


def build_suite(reports: list[ClaimReport], folder: Path,
                beside: Path | None = None) -> dict[str, Any]:
    """results.json's content for a suite written to `folder`; `beside`: another suite (e.g.
    the paper scale's) whose row of the same claim each row carries as `beside`."""
    rows = [suite_row(r.result, relative_path(r.path, folder)) for r in reports]
    if beside is not None:
        other = load_suite(beside)
        base = beside.parent if beside.is_file() else beside
        by_id = {row["id"]: row for row in other["claims"]}
        for row in rows:
            twin = by_id.get(row["id"])
            if twin is not None and twin.get("scale") != row["scale"]:
                row["beside"] = {**{k: v for k, v in twin.items() if k != "beside"},
                                 "result_json": relative_path(base / twin["result_json"],
                                                              folder)}
    return {"suite_version": SUITE_VERSION,
            "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "claims": rows}


def read_report(path: Path) -> ClaimReport:
    """One claim's result.json (a file, or a claim folder holding one)."""
    path = path / "result.json" if path.is_dir() else path
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SuiteError(f"{path}: cannot read a claim's result: {exc}") from None
    if not isinstance(result, dict) or "claim" not in result or "verdict" not in result:
        raise SuiteError(f"{path}: not a claim's result.json (no claim or verdict)")
    return ClaimReport(path, result)


def load_suite(path: Path) -> dict[str, Any]:
    """A suite to compare: a results.json, a folder holding one, or a folder of claim folders
    only (`*/result.json`), whose rows are built here."""
    if path.is_dir():
        if (path / SUITE_FILES["json"]).is_file():
            path = path / SUITE_FILES["json"]
        else:
            results = sorted(path.glob("*/result.json"))
            if not results:
                raise SuiteError(f"{path}: neither a {SUITE_FILES['json']} nor claim folders "
                                 f"(*/result.json) in it")
            return build_suite([read_report(p) for p in results], path)
    try:
        suite = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SuiteError(f"{path}: cannot read a suite: {exc}") from None
    if not isinstance(suite, dict) or not isinstance(suite.get("claims"), list) or not all(
            isinstance(row, dict) and {"id", "verdict"} <= row.keys() for row in suite["claims"]):
        raise SuiteError(f"{path}: not a suite's {SUITE_FILES['json']} (a list of claims, each "
                         f"with an id and a verdict)")
    return suite
