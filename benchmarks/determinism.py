"""Is a seed's record bit-identical run to run and whatever seeds share its chunk? (CPU or GPU)

    python benchmarks/determinism.py                       # CPU, ~2 min
    python benchmarks/determinism.py --device cuda         # the same checks on a GPU
    python benchmarks/determinism.py --device cuda --deterministic   # with torch's
        deterministic algorithms and CUBLAS_WORKSPACE_CONFIG=:4096:8

For every distinct quick-scale arm of claims/*.yaml and the two throughput workloads (paper 2's
toy, paper 1's MLP at p = 97), shortened to --steps steps without early stopping: 8 seeds are
trained as one chunk twice (run to run), then in other chunks ([3] alone, [2, 1, 0], [7, 6, 5,
4]) and compared with the first run record by record (curves, thresholds, summary). Prints, per
arm, whether the records are identical, the largest relative difference of a recorded loss and
how many seeds' threshold steps moved; the last line is
`run_to_run_identical=<arms>/<n> chunk_identical=<arms>/<n> max_rel_loss_diff=...`.

On a CPU everything must be identical (tests/test_train.py asserts it on small models; this
checks the claims' own shapes). docs/determinism.md says what to expect on a GPU.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any

import torch
from throughput import quick_arms, workloads

from grokverify.spec import ExperimentSpec
from grokverify.train import train_seeds

SEEDS = list(range(8))
CHUNKS = ([3], [2, 1, 0], [7, 6, 5, 4])


def _shortened(exp: ExperimentSpec, steps: int) -> ExperimentSpec:
    training = exp.training.model_copy(update={
        "steps": steps, "eval_interval": min(exp.training.eval_interval, steps),
        "early_stop": False})
    return exp.model_copy(update={"training": training})


def _records(exp: ExperimentSpec, seeds: list[int], device: str) -> dict[int, dict[str, Any]]:
    return {r.seed: r.to_dict() for r in train_seeds(exp, seeds, device)}


def _loss_diff(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Largest relative difference between two records' recorded losses."""
    worst = 0.0
    for key in ("train_loss", "val_loss"):
        for x, y in zip(a["curves"][key]["values"], b["curves"][key]["values"], strict=False):
            if x is not None and y is not None and x != y:
                worst = max(worst, abs(x - y) / max(abs(y), 1e-30))
    return worst


def _compare(ref: dict[int, dict[str, Any]], got: dict[int, dict[str, Any]]) \
        -> tuple[bool, float, int]:
    """(identical, max relative loss difference, seeds whose threshold steps differ)."""
    same, worst, moved = True, 0.0, 0
    for seed, rec in got.items():
        base = ref[seed]
        same &= rec == base
        worst = max(worst, _loss_diff(rec, base))
        moved += (rec["summary"]["train_step"], rec["summary"]["val_step"]) != \
            (base["summary"]["train_step"], base["summary"]["val_step"])
    return same, worst, moved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--steps", type=int, default=1000, help="training steps per run")
    parser.add_argument("--deterministic", action="store_true",
                        help="torch.use_deterministic_algorithms(True), cuBLAS workspace pinned")
    parser.add_argument("--quick", action="store_true", help="two arms, 200 steps")
    args = parser.parse_args(argv)
    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA starts
        torch.use_deterministic_algorithms(True)
    steps = 200 if args.quick else args.steps
    cases = [(label, exp) for label, exp, _ in quick_arms(args.quick)]
    cases += [(f"throughput/{w.name}", w.exp) for w in workloads(quick=True)]
    cases = cases[:2] if args.quick else cases
    name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else \
        torch.backends.cpu.get_cpu_capability()
    print(f"torch {torch.__version__}, device {args.device} ({name}), {steps} steps, seeds "
          f"{SEEDS}, deterministic algorithms: {args.deterministic}")
    run_ok = chunk_ok = 0
    overall = 0.0
    for label, exp in cases:
        exp = _shortened(exp, steps)
        start = time.perf_counter()
        ref = _records(exp, SEEDS, args.device)
        same_run, diff_run, moved_run = _compare(ref, _records(exp, SEEDS, args.device))
        same_chunk, diff_chunk, moved_chunk = True, 0.0, 0
        for chunk in CHUNKS:
            same, diff, moved = _compare(ref, _records(exp, chunk, args.device))
            same_chunk, diff_chunk, moved_chunk = same_chunk and same, max(diff_chunk, diff), \
                moved_chunk + moved
        run_ok += same_run
        chunk_ok += same_chunk
        overall = max(overall, diff_run, diff_chunk)
        print(f"  {label}: run to run {'identical' if same_run else 'DIFFERENT'} "
              f"(max rel loss diff {diff_run:.1e}, thresholds moved: {moved_run}); across chunks "
              f"{'identical' if same_chunk else 'DIFFERENT'} (max rel loss diff "
              f"{diff_chunk:.1e}, thresholds moved: {moved_chunk}/{sum(map(len, CHUNKS))}) "
              f"[{time.perf_counter() - start:.0f} s]")
    n = len(cases)
    print(f"run_to_run_identical={run_ok}/{n} chunk_identical={chunk_ok}/{n} "
          f"max_rel_loss_diff={overall:.1e}")
    return 0 if math.isfinite(overall) else 1


if __name__ == "__main__":
    sys.exit(main())
