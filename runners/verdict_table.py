"""Print the markdown table of verdicts of a reports folder (one result.json per claim), for
reports/README.md: claim, role, verdict, the estimate and CI (or the family members'), seeds, the
training time of its records, and what the claim's paper scale would cost: its arithmetic
(`grokverify.claim.budget.estimate`, every seed to the full budget, probes not counted) in CPU
core-hours and in H200 GPU-hours at the engine's measured step times (benchmarks/README.md,
"GPU"; one arm's seeds as one batched model).

Usage: python3 runners/verdict_table.py REPORTS_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grokverify.claim.budget import scale_flops
from grokverify.claim.load import LoadedClaim, load_claim

CPU_FLOPS = 43e9  # a core, measured for paper 1's MLP at p = 97 (31.5 steps/s x 1.36 GFLOP)
# H200 seconds a training step of one arm takes, by the arm's seed count (benchmarks/README.md)
GPU_STEP_S = ((8, 8 / 4151), (32, 32 / 12966), (128, 128 / 41845), (512, 512 / 44719))
REPO = Path(__file__).resolve().parent.parent


def _number(x: float | str | None) -> str:
    """A figure of result.json: a number, null, or a non-finite one written as a string."""
    if x is None:
        return "—"
    return x if isinstance(x, str) else f"{x:.3g}"


def gpu_step_seconds(seeds: int) -> float:
    """A step's time at `seeds` batched: the measured points, linear between them, flat below
    the first (the step is launch-bound there) and linear in the seeds above the last."""
    (n0, t0), *rest = GPU_STEP_S
    if seeds <= n0:
        return t0
    for n1, t1 in rest:
        if seeds <= n1:
            return t0 + (t1 - t0) * (seeds - n0) / (n1 - n0)
        n0, t0 = n1, t1
    return t0 * seeds / n0


def gpu_hours(loaded: LoadedClaim, scale: str) -> float:
    """Every arm of the scale to its full budget, one arm's seeds batched, on one H200."""
    n = loaded.max_seeds(scale)
    return sum(exp.training.steps * gpu_step_seconds(n)
               for _, _, _, exp in loaded.experiments([scale])) / 3600


def row(result: dict) -> str:
    claim, prov = result["claim"], result["provenance"]
    if result.get("family") and result["verdict"] == "FINDING":  # an open question's estimates
        members = result["family"]["members"]
        effect = "; ".join(f"{m['member']}: {_number(m['result']['estimate'])} "
                           f"[{_number(m['result']['ci'][0])}, {_number(m['result']['ci'][1])}]"
                           for m in members)
        trend = result["family"].get("trend")
        if trend and trend["fitted"]:
            effect += (f"; {trend['fit']} trend exponent {_number(trend['slope'])} "
                       f"[{_number(trend['slope_ci'][0])}, {_number(trend['slope_ci'][1])}], "
                       f"fit p {_number(trend['p_fit'])}")
    elif result.get("family"):
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
    if "records_train_s" in prov:  # a rebuilt report's wall is the rebuild's: show the records'
        minutes = prov["records_train_s"] / 60
    loaded = load_claim(REPO / claim["file"])
    paper = "paper" if "paper" in loaded.claim.scales else None
    flops = scale_flops(loaded, paper) if paper else float("nan")
    cost = (f"{flops / 1e15:.3g} PFLOP, {flops / CPU_FLOPS / 3600:.3g} core-h, "
            f"{gpu_hours(loaded, paper):.2g} H200-h") if paper else "—"
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
