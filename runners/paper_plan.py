"""Print, for reports/README.md's paper-scale plan, each claim's paper scale as arms × seeds,
budgets and batch sizes, model-steps with every seed run to its budget, and the hours that is
on a 2-core CPU (`grokverify.claim.budget.cpu_seconds`, checked by benchmarks/cpu_rates.py).

Usage: python3 runners/paper_plan.py [--seeds N] CLAIM.yaml...
"""

from __future__ import annotations

import argparse

from grokverify.claim.budget import scale_cpu_seconds
from grokverify.claim.load import load_claim


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=None, help="seeds an arm (default: the scale's)")
    ap.add_argument("claims", nargs="+")
    args = ap.parse_args(argv)
    print("| claim | arms × seeds | budget, batch | model-steps to budget | worst case, "
          "2-core CPU |")
    print("|---|---|---|---|---|")
    for path in args.claims:
        loaded = load_claim(path, limits=None)
        n = args.seeds or loaded.max_seeds("paper")
        exps = [e for *_, e in loaded.experiments(["paper"])]
        steps = "/".join(f"{s:,}" for s in sorted({e.training.steps for e in exps}))
        batch = "/".join(sorted({str(e.training.batch_size or "full") for e in exps}))
        msteps = sum(n * e.training.steps for e in exps)
        hours = scale_cpu_seconds(loaded, "paper", n) / 3600
        print(f"| {loaded.claim.id} | {len(exps)} × {n} | {steps}, {batch} | "
              f"{msteps / 1e6:.1f} M | {hours:.1f} h |")


if __name__ == "__main__":
    main()
