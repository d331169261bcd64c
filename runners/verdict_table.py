"""Print the markdown table of verdicts of a reports folder (one result.json per claim), for the
library's README: claim, role, verdict, the estimate and CI (or each family member's verdict),
seeds, and the run's wall time with how many seeds it trained and reused.

Usage: python3 runners/verdict_table.py REPORTS_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _number(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def row(result: dict) -> str:
    claim, prov = result["claim"], result["provenance"]
    if result.get("family"):
        members = result["family"]["members"]
        effect = "; ".join(f"{m['member']}: {m['verdict']}" for m in members)
    else:
        r = result["result"]
        effect = (f"{r['effect_label']} {_number(r['estimate'])}, "
                  f"{round(r['ci_level'] * 100)}% CI [{_number(r['ci'][0])}, "
                  f"{_number(r['ci'][1])}]")
    seeds = len({(s["arm"], s["seed"]) for s in result["per_seed"]})
    minutes = prov["wall_s"] / 60
    work = f"{prov['seeds_trained_now']} trained, {prov['seeds_reused']} reused"
    return (f"| {claim['id']} | {claim['source']['role']} | **{result['verdict']}** | {effect} "
            f"| {seeds} | {minutes:.1f} ({work}) |")


def main(folder: str) -> int:
    results = sorted(Path(folder).glob("*/result.json"))
    if not results:
        print(f"no */result.json under {folder}", file=sys.stderr)
        return 1
    print("| claim | role | verdict | effect (quick scale) | seed-arms | wall min |")
    print("|---|---|---|---|---|---|")
    for path in results:
        print(row(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]) if len(sys.argv) == 2 else 2)
