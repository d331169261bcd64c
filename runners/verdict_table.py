"""Print the markdown table of verdicts of a reports folder (one result.json per claim), for the
library's README: claim, role, verdict, the estimate and CI (or each family member's verdict),
seeds, the run's wall time with how many seeds it trained and reused, and what the claim's paper
scale would cost: its arithmetic (`grokverify.budget.estimate`, every seed to the full budget)
and the CPU core-hours that is at 43 GFLOP/s a core, the rate measured for paper 1's MLP at
p = 97 (31.5 steps/s of 1.36 GFLOP, ../shared/perf-notes.md). No GPU rate has been measured.

Usage: python3 runners/verdict_table.py REPORTS_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grokverify.pipeline import scale_flops
from grokverify.spec import load_claim

CPU_FLOPS = 43e9  # a core, paper 1's MLP at p = 97 (perf-notes: 31.5 steps/s x 1.36 GFLOP)
REPO = Path(__file__).resolve().parent.parent


def _number(x: float | str | None) -> str:
    """A figure of result.json: a number, null, or a non-finite one written as a string."""
    if x is None:
        return "—"
    return x if isinstance(x, str) else f"{x:.3g}"


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
    seeds = len(result["per_seed"])
    minutes = prov["wall_s"] / 60
    work = f"{prov['seeds_trained_now']} trained, {prov['seeds_reused']} reused"
    loaded = load_claim(REPO / claim["file"])
    paper = "paper" if "paper" in loaded.claim.scales else None
    flops = scale_flops(loaded, paper) if paper else float("nan")
    cost = f"{flops / 1e15:.3g} PFLOP, {flops / CPU_FLOPS / 3600:.3g} core-h" if paper else "—"
    return (f"| {claim['id']} | {claim['source']['role']} | **{result['verdict']}** | {effect} "
            f"| {seeds} | {minutes:.1f} ({work}) | {cost} |")


def main(folder: str) -> int:
    results = sorted(Path(folder).glob("*/result.json"))
    if not results:
        print(f"no */result.json under {folder}", file=sys.stderr)
        return 1
    print("| claim | role | verdict | effect (quick scale) | seed runs | wall min | paper scale |")
    print("|---|---|---|---|---|---|---|")
    for path in results:
        print(row(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]) if len(sys.argv) == 2 else 2)
