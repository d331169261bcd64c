"""Print, for reports/README.md's paper-scale plan, each claim's paper scale as arms × seeds,
budgets and batch sizes, model-steps with every seed run to its budget, and the hours that is
on a 2-core CPU at the engine's measured rate for paper 1's MLP at p = 97, batch 512.

Usage: python3 runners/paper_plan.py CLAIM.yaml...
"""

from __future__ import annotations

import sys
from pathlib import Path

from grokverify.claim.budget import estimate, scale_flops
from grokverify.claim.load import load_claim

# benchmarks/README.md: 326 model-steps/s (8 seeds, 2 threads, training only), eval ~5% more
P97_MODEL_STEPS_S, EVAL_SHARE = 326, 0.05


def cpu_rate() -> float:
    """Estimated flop/s of the 2-core CPU: the p = 97 benchmark's rate in estimate()'s units."""
    ref = load_claim(Path(__file__).resolve().parent.parent / "claims" / "adam_lr.yaml",
                     limits=None)
    exp = next(e for *_, e in ref.experiments(["paper"]))
    per_step = estimate(exp, 8).flops / (8 * exp.training.steps)
    return P97_MODEL_STEPS_S * per_step / (1 + EVAL_SHARE)


def main(paths: list[str]) -> None:
    rate = cpu_rate()
    print("| claim | arms × seeds | budget, batch | model-steps to budget | worst case, "
          "2-core CPU |")
    print("|---|---|---|---|---|")
    for path in paths:
        loaded = load_claim(path, limits=None)
        n = loaded.max_seeds("paper")
        exps = [e for *_, e in loaded.experiments(["paper"])]
        steps = "/".join(f"{s:,}" for s in sorted({e.training.steps for e in exps}))
        batch = "/".join(sorted({str(e.training.batch_size or "full") for e in exps}))
        msteps = sum(n * e.training.steps for e in exps)
        hours = scale_flops(loaded, "paper") / rate / 3600
        print(f"| {loaded.claim.id} | {len(exps)} × {n} | {steps}, {batch} | "
              f"{msteps / 1e6:.1f} M | {hours:.1f} h |")


if __name__ == "__main__":
    main(sys.argv[1:])
