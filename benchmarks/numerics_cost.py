"""What the pinned CPU numerics cost: a claim's quick-scale arm trained (8 seeds, one thread) with
MKL on its COMPATIBLE branch (pinned) and on AUTO, ATen on AVX2 in both, in fresh processes
taking turns, so the ratio is measured side by side (docs/determinism.md).

    python benchmarks/numerics_cost.py [--claims claims/adam_lr.yaml ...] [--steps 400]
        [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ONE = """
import json, os, sys, time
os.environ["ATEN_CPU_CAPABILITY"] = "avx2"
if sys.argv[1] == "auto":
    os.environ.update(GROKVERIFY_NUMERICS="native", MKL_CBWR="AUTO")
else:
    from grokverify.engine.numerics import pin_environment
    pin_environment()
import torch
torch.set_num_threads(1)
from grokverify.claim.load import load_claim
from grokverify.engine import numerics
from grokverify.engine.loop import SeedTrainer
steps = int(sys.argv[3])
exp = next(e for (_, _, _, e) in load_claim(sys.argv[2]).experiments(["quick"]))
exp = exp.model_copy(update={"training": exp.training.model_copy(
    update={"steps": steps, "early_stop": False})})
with SeedTrainer(exp, list(range(8)), workers=1) as trainer:
    trainer.train(20)
    start = time.perf_counter()
    trainer.train(steps - 20)
    wall = time.perf_counter() - start
print(json.dumps({"rate": (steps - 20) * 8 / wall, "mkl": numerics.mkl_branch()}))
"""


def rate(mode: str, claim: str, steps: int) -> float:
    out = subprocess.run([sys.executable, "-c", ONE, mode, claim, str(steps)],
                         capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["rate"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", nargs="+",
                        default=["claims/adam_lr.yaml", "claims/p2_alexander_principle.yaml"])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"host: {os.uname().machine}, load {os.getloadavg()[0]:.1f}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    for claim in args.claims:
        pinned, auto = [], []
        for _ in range(args.rounds):
            pinned.append(rate("pinned", claim, args.steps))
            auto.append(rate("auto", claim, args.steps))
        ratio = max(pinned) / max(auto)
        print(f"{claim}: pinned (MKL COMPATIBLE) {max(pinned):,.0f}, MKL AUTO {max(auto):,.0f} "
              f"model-steps/s (best of {args.rounds}); pinned_share={ratio:.2f}")


if __name__ == "__main__":
    main()
