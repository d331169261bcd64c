"""CPU time estimates against the engine: `budget.cpu_seconds` (each model kind's
`cpu_flop_rate` and the per-parameter step cost), which the paper-scale warning and a report's
"about N h of a 2-core CPU" use, over the measured time of the same training.

    python benchmarks/cpu_rates.py            # up to 4 shapes a model kind, ~4 minutes
    python benchmarks/cpu_rates.py --quick    # the first shape of each kind, short segments

For distinct training shapes among the shipped claims' paper-scale arms (model kind and batch;
the paper's seed count, at most --max-seeds), the engine trains as `grokverify run --executor
local --cpus-per-task 2` does (two torch threads, two shards) for whole evaluation intervals
plus one evaluation each, until --seconds have passed. Printed per shape: seconds a step,
measured and estimated, and their ratio; per kind the median ratio. The last line is
`cpu_estimate_ratio_min=... cpu_estimate_ratio_max=...` (measured / estimated, per kind: 1 is
exact; the estimates are meant to be within ~1.5x).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

import torch  # noqa: E402

from grokverify.engine.numerics import pin_environment  # noqa: E402

pin_environment()  # before torch computes anything
from grokverify.claim.budget import cpu_seconds  # noqa: E402
from grokverify.claim.experiment import ExperimentSpec  # noqa: E402
from grokverify.claim.load import load_claim  # noqa: E402
from grokverify.engine.loop import SeedTrainer  # noqa: E402
from grokverify.run.preflight import data_problems  # noqa: E402

THREADS = 2


def paper_arms(max_seeds: int, per_kind: int) -> list[tuple[str, ExperimentSpec, int]]:
    """(label, experiment, seeds) of up to `per_kind` shapes (model kind and batch) a model kind
    among the claims' paper-scale arms that train; claims whose data files are missing are left
    out, and said so."""
    claims = [load_claim(p) for p in sorted((REPO / "claims").glob("*.yaml"))]
    claims = [c for c in claims if "paper" in c.claim.scales]
    skipped = data_problems(claims, "paper")
    for claim_id, why in skipped.items():
        print(f"  (left out: {claim_id}: {why.split(':')[0]})")
    out, seen, kinds = [], set(), defaultdict(int)
    for loaded in (c for c in claims if c.claim.id not in skipped):
        n = min(loaded.max_seeds("paper"), max_seeds)
        for member, arms in loaded.members("paper").items():
            for arm, exp in arms.items():
                shape = (exp.model.model_dump_json(), exp.task.sizes(), exp.training.batch_size)
                kind = exp.model.kind
                if exp.training.steps > 0 and shape not in seen and kinds[kind] < per_kind:
                    seen.add(shape)
                    kinds[kind] += 1
                    label = "/".join(x for x in (loaded.claim.id, member, arm) if x)
                    out.append((label, exp, n))
    return out


def measured_step_s(exp: ExperimentSpec, seeds: int, seconds: float) -> float:
    """Seconds a training step with its share of one evaluation every eval_interval steps:
    training timed in blocks for about `seconds` after a warm-up, one evaluation timed alone."""
    torch.set_num_threads(THREADS)
    tr = exp.training
    with SeedTrainer(exp, list(range(seeds))) as trainer:
        warm = time.perf_counter()
        trainer.train(3)
        step_s = (time.perf_counter() - warm) / 3
        block = max(1, min(tr.eval_interval, int(seconds / 10 / step_s)))
        steps, start = 0, time.perf_counter()
        while steps == 0 or time.perf_counter() - start < seconds:
            trainer.train(block)
            steps += block
        train_s = (time.perf_counter() - start) / steps
        start = time.perf_counter()
        trainer.record()
        return train_s + (time.perf_counter() - start) / tr.eval_interval


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one shape a kind, 3 s each")
    ap.add_argument("--seconds", type=float, default=None, help="timed seconds a shape")
    ap.add_argument("--max-seeds", type=int, default=20)
    args = ap.parse_args(argv)
    seconds = args.seconds or (3.0 if args.quick else 8.0)
    by_kind: dict[str, list[float]] = defaultdict(list)
    for label, exp, n in paper_arms(args.max_seeds, 1 if args.quick else 4):
        measured = measured_step_s(exp, n, seconds)
        estimated = cpu_seconds(exp, n) / exp.training.steps
        by_kind[exp.model.kind].append(measured / estimated)
        print(f"  {label}: {exp.model.kind}, {n} seeds, batch {exp.training.batch_size}: "
              f"{measured * 1e3:.3g} ms a step, estimated {estimated * 1e3:.3g} ms "
              f"(ratio {measured / estimated:.2f})")
    ratios = {kind: statistics.median(r) for kind, r in by_kind.items()}
    for kind, ratio in ratios.items():
        print(f"{kind}: median ratio {ratio:.2f} over {len(by_kind[kind])} shape(s)")
    print(f"cpu_estimate_ratio_min={min(ratios.values()):.2f} "
          f"cpu_estimate_ratio_max={max(ratios.values()):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
