"""Is a seed's record bit-identical run to run, in any chunk, on any number of threads, and on
other CPU kernel paths? (CPU; `--device cuda` checks run to run and chunks on a GPU.)

    python benchmarks/determinism.py            # CPU, ~4 min
    python benchmarks/determinism.py --quick    # two arms, 200 steps, ~1 min
    python benchmarks/determinism.py --device cuda [--deterministic]

For every distinct quick-scale arm of claims/*.yaml and the two throughput workloads (paper 2's
toy, paper 1's MLP at p = 97), shortened to --steps steps without early stopping:

- chunks: 8 seeds trained as one chunk twice (run to run), then in other chunks ([3] alone,
  [2, 1, 0], [7, 6, 5, 4]) and on 1 and 2 threads, every record compared with the first run's;
- kernels: the same 8 seeds trained in fresh processes whose environment asks for other kernel
  paths (ATen's AVX-512 kernels and MKL's compatible branch; ATen's scalar kernels; MKL capped
  at AVX2, as on an AVX2-only CPU) and compared with this process's records. The engine pins
  its kernels (grokverify/engine/numerics.py), so these must be identical;
- for contrast, the same with pinning off (`GROKVERIFY_NUMERICS=native`): how far records
  drift when each process keeps its host's kernels.

The last line is `cross_kernel_identical=<yes|no> chunk_identical=<yes|no>` (yes: every arm's
every record identical); the line before it gives counts and the largest relative loss
difference. docs/determinism.md says what this covers and what it cannot (another vendor's CPU).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import torch  # noqa: E402
from throughput import quick_arms, workloads  # noqa: E402

from grokverify.engine.numerics import pin_environment  # noqa: E402

pin_environment()  # before torch computes anything
from grokverify.claim.experiment import ExperimentSpec  # noqa: E402
from grokverify.engine import numerics  # noqa: E402
from grokverify.engine.loop import train_seeds  # noqa: E402

SEEDS = list(range(8))
CHUNKS = ([3], [2, 1, 0], [7, 6, 5, 4])
KERNEL_ENVS = {
    "ATen AVX-512 + MKL compatible branch": {"ATEN_CPU_CAPABILITY": "avx512",
                                             "MKL_CBWR": "COMPATIBLE"},
    "ATen scalar kernels": {"ATEN_CPU_CAPABILITY": "default"},
    "MKL capped at AVX2 (an AVX2-only CPU)": {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
}


def _shortened(exp: ExperimentSpec, steps: int) -> ExperimentSpec:
    training = exp.training.model_copy(update={
        "steps": steps, "eval_interval": min(exp.training.eval_interval, steps),
        "early_stop": False})
    return exp.model_copy(update={"training": training})


def cases(quick: bool, steps: int) -> list[tuple[str, ExperimentSpec]]:
    out = [(label, exp) for label, exp, _ in quick_arms(quick)]
    out += [(f"throughput/{w.name}", w.exp) for w in workloads(quick=True)]
    out = out[:2] if quick else out
    return [(label, _shortened(exp, steps)) for label, exp in out]


def _records(exp: ExperimentSpec, seeds: list[int], device: str,
             threads: int = 1) -> dict[int, dict[str, Any]]:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return {r["seed"]: r for r in train_seeds(exp, seeds, device)}
    finally:
        torch.set_num_threads(before)


def _loss_diff(a: dict[str, Any], b: dict[str, Any]) -> float:
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
        base = ref[int(seed)]
        same &= rec == base
        worst = max(worst, _loss_diff(rec, base))
        steps = ("train_step", "val_step")
        moved += any(rec["summary"][k] != base["summary"][k] for k in steps)
    return same, worst, moved


def _in_process(env: dict[str, str], quick: bool, steps: int) -> dict[str, dict[int, Any]]:
    """Every case's 8 records from a fresh process with `env` added to its environment."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS",
                          "GROKVERIFY_NUMERICS")}
    args = [sys.executable, str(Path(__file__).resolve()), "--emit", "--steps", str(steps)]
    out = subprocess.run(args + (["--quick"] if quick else []), env={**clean, **env},
                         capture_output=True, text=True, check=True)
    return {label: {int(s): r for s, r in recs.items()}
            for label, recs in json.loads(out.stdout.splitlines()[-1]).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--steps", type=int, default=600, help="training steps per run")
    parser.add_argument("--deterministic", action="store_true",
                        help="torch.use_deterministic_algorithms(True), cuBLAS workspace pinned")
    parser.add_argument("--quick", action="store_true", help="two arms, 200 steps")
    parser.add_argument("--emit", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    steps = 200 if args.quick else args.steps
    if args.emit:  # a child of the kernels check: print every case's records as JSON
        print(json.dumps({label: _records(exp, SEEDS, "cpu")
                          for label, exp in cases(args.quick, steps)}))
        return 0
    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA starts
        torch.use_deterministic_algorithms(True)
    on_cpu = not args.device.startswith("cuda")
    if on_cpu:
        numerics.pin()
    name = torch.cuda.get_device_name(0) if not on_cpu else numerics.describe()
    print(f"torch {torch.__version__}, device {args.device} ({name}), {steps} steps, seeds "
          f"{SEEDS}, deterministic algorithms: {args.deterministic}")
    all_cases = cases(args.quick, steps)
    refs: dict[str, dict[int, Any]] = {}
    chunk_ok, worst_chunk = 0, 0.0
    print("chunks and threads:")
    for label, exp in all_cases:
        start = time.perf_counter()
        ref = refs[label] = _records(exp, SEEDS, args.device)
        results = [_compare(ref, _records(exp, SEEDS, args.device))]
        results += [_compare(ref, _records(exp, chunk, args.device)) for chunk in CHUNKS]
        if on_cpu:
            results.append(_compare(ref, _records(exp, SEEDS, args.device, threads=2)))
        same = all(r[0] for r in results)
        diff, moved = max(r[1] for r in results), sum(r[2] for r in results)
        chunk_ok += same
        worst_chunk = max(worst_chunk, diff)
        print(f"  {label}: {'identical' if same else 'DIFFERENT'} (run to run, chunks "
              f"{list(CHUNKS)}{', 2 threads' if on_cpu else ''}; max rel loss diff {diff:.1e}, "
              f"thresholds moved: {moved}) [{time.perf_counter() - start:.0f} s]")
    n = len(all_cases)
    kernel_ok, worst_kernel = 0, 0.0
    if on_cpu:
        print("kernel paths (fresh processes, pinned numerics):")
        per_case = {label: True for label, _ in all_cases}
        for env_name, env in KERNEL_ENVS.items():
            got = _in_process(env, args.quick, steps)
            for label, _ in all_cases:
                same, diff, moved = _compare(refs[label], got[label])
                per_case[label] &= same
                worst_kernel = max(worst_kernel, diff)
                print(f"  {env_name} / {label}: {'identical' if same else 'DIFFERENT'} "
                      f"(max rel loss diff {diff:.1e}, thresholds moved: {moved})")
        kernel_ok = sum(per_case.values())
        print("for contrast, pinning off (GROKVERIFY_NUMERICS=native), ATen AVX-512 vs AVX2:")
        native = {k: _in_process({"GROKVERIFY_NUMERICS": "native", "ATEN_CPU_CAPABILITY": k},
                                 args.quick, steps) for k in ("avx512", "avx2")}
        for label, _ in all_cases:
            same, diff, moved = _compare(native["avx2"][label], native["avx512"][label])
            print(f"  {label}: {'identical' if same else 'DIFFERENT'} (max rel loss diff "
                  f"{diff:.1e}, thresholds moved: {moved}/8)")
    print(f"chunk_identical_arms={chunk_ok}/{n} cross_kernel_identical_arms={kernel_ok}/{n} "
          f"max_rel_loss_diff={max(worst_chunk, worst_kernel):.1e}")
    cross = "yes" if on_cpu and kernel_ok == n else ("n/a" if not on_cpu else "no")
    print(f"cross_kernel_identical={cross} chunk_identical={'yes' if chunk_ok == n else 'no'}")
    return 0 if math.isfinite(worst_chunk) else 1


if __name__ == "__main__":
    sys.exit(main())
