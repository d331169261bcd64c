"""What running a claim through local Ray costs compared with `--executor local`.

    python benchmarks/ray_overhead.py            # about 3 minutes
    python benchmarks/ray_overhead.py --quick    # smoke run, about 1 minute

A generated tiny claim (paper 2's toy, 2 arms x 16 seeds, chunk size 1: 32 trials) goes through
grokverify.run.pipeline.run_claims, each run into a fresh temporary store: in-process
(`--executor local`: one trial after another, 1 thread) and on local Ray (one 1-CPU task per
trial; on this 2-core machine two run at a time). Local and Ray runs alternate, and each Ray run
is compared with the mean of the local runs either side of it (the machine's load drifts).

Ray's start-up is timed on its own: the RayExecutor is constructed first and handed to
run_claims, and only the run is compared. A fresh Ray worker also pays, on its first task, what
any fresh process pays once (importing torch and grokverify, and torch.optim's first use, which
imports torch._dynamo); the in-process runs have paid it before they are timed. So three Ray
runs are made:
- cold workers: RayExecutor constructed, then the run timed (workers start up inside it);
- warm workers: the workers also run that one-time import before the run is timed; this is the
  like-for-like figure and the last line, `ray_overhead=<ray run / local run - 1>` (negative:
  Ray was faster);
- warm workers at niceness 0: Ray runs its workers at nice 15, which on a shared machine hands
  CPU time to everyone else; this run shows how much of the figure that costs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from rich.console import Console

import grokverify.run.execute as execute
from grokverify.claim.load import load_claim
from grokverify.run.pipeline import RunOptions, run_claims

ARMS, SEEDS = 2, 16
NICENESS_ENV = "RAY_" + "worker_niceness"  # Ray's config: workers run at nice 15 by default


def claim_text(steps: int) -> str:
    return textwrap.dedent(f"""\
        id: ray_overhead
        title: Ray overhead benchmark claim
        statement: c = 10 reaches the validation threshold sooner than c = 1 (benchmark).
        source: {{arxiv: "2505.15624", where: benchmark, role: paper_claim, quote: benchmark}}
        base:
          task: {{op: add, p: 10, modular: false, unordered: true, train_frac: 0.7}}
          model: {{kind: toy_sum, hidden: 64}}
          optimizer: {{name: adamw, lr: 0.003}}
          training: {{steps: {steps}, eval_interval: 50, train_threshold: 0.9,
                      val_threshold: 0.6, early_stop: false}}
        arms:
          c1: {{}}
          c10: {{optimizer: {{emb_lr_mult: 10}}}}
        scales:
          quick: {{description: benchmark scale}}
        seeds: {SEEDS}
        metric: {{name: val_threshold_step}}
        criterion: {{name: survival_compare, baseline: c1, treated: c10, direction: less,
                    min_effect: 0.2, n_boot: 200}}
        """)


def _warm(_: int = 0) -> int:
    """What a fresh process pays once before its first trial: importing torch and grokverify,
    and torch.optim's first use (which imports torch._dynamo, about 2 s here)."""
    import torch

    from grokverify.claim.optimizers import OptimizerSpec
    from grokverify.engine import numerics
    from grokverify.engine.optimizers import build_optimizer

    numerics.pin()
    param = torch.nn.Parameter(torch.zeros(2))
    param.grad = torch.zeros(2)
    opt = build_optimizer(OptimizerSpec(name="adamw", lr=1e-3), {"decoder": [param]})
    opt.step()
    return os.getpid()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    args = parser.parse_args(argv)
    steps = 150 if args.quick else 800
    quiet = Console(quiet=True)
    with tempfile.TemporaryDirectory(prefix="gv-ray-bench-") as tmp:
        tmp_path = Path(tmp)
        path = tmp_path / "ray_overhead.yaml"
        path.write_text(claim_text(steps))
        loaded = load_claim(path)

        def options(name: str, executor: str) -> RunOptions:
            return RunOptions(store=tmp_path / name / "store", reports=tmp_path / name / "r",
                              executor=executor, device="cpu", chunk_size=1, cpus_per_task=1)

        def trial_seconds(name: str) -> float:
            """Sum of the trials' own training time (chunk_wall_s of every stored record)."""
            records = (tmp_path / name / "store" / "records").rglob("*.json")
            return sum(json.loads(r.read_text())["chunk_wall_s"] for r in records)

        def timed_run(name: str, executor: str) -> tuple[float, float, int]:
            """(run_claims seconds, executor.run seconds, trials trained)."""
            phase: dict[str, float] = {}
            make = execute.EXECUTORS[executor]

            def wrap(ex: object) -> object:
                inner = ex.run  # type: ignore[attr-defined]

                def run(*a: object, **kw: object) -> None:
                    start = time.perf_counter()
                    inner(*a, **kw)
                    phase["run"] = time.perf_counter() - start

                ex.run = run  # type: ignore[attr-defined]
                return ex

            execute.EXECUTORS[executor] = lambda **kw: wrap(make(**kw))  # type: ignore[assignment]
            try:
                start = time.perf_counter()
                (run,) = run_claims([loaded], options(name, executor), quiet)
                return time.perf_counter() - start, phase["run"], run.trained
            finally:
                execute.EXECUTORS[executor] = make  # type: ignore[assignment]

        _warm()  # the in-process (local) runs start warm too
        local: list[float] = []
        n_local = 0

        def local_run() -> None:
            nonlocal n_local
            name = f"local-{len(local)}"
            seconds, executor_s, n_local = timed_run(name, "local")
            local.append(seconds)
            print(f"local: run {seconds:.1f} s (of which executor {executor_s:.1f} s; trials' "
                  f"own training time {trial_seconds(name):.1f} s)")

        results = {}
        runs = [("cold workers", False, None), ("warm workers", True, None),
                ("warm workers, niceness 0", True, "0")]
        for label, warm, niceness in runs:
            local_run()  # local and Ray runs alternate: the machine's load drifts
            saved = os.environ.get(NICENESS_ENV)
            if niceness is not None:  # read by the raylet that ray.init starts
                os.environ[NICENESS_ENV] = niceness
            start = time.perf_counter()
            try:
                ray_ex = execute.RayExecutor(device="cpu", cpus_per_task=1)
            finally:
                if niceness is not None:
                    os.environ.pop(NICENESS_ENV, None)
                    if saved is not None:
                        os.environ[NICENESS_ENV] = saved
            startup_s = time.perf_counter() - start
            slots = ray_ex.slots()  # trials Ray runs at a time
            warm_s = 0.0
            if warm:
                start = time.perf_counter()
                ray = ray_ex.ray
                task = ray.remote(_warm).options(num_cpus=1)
                ray.get([task.remote(i) for i in range(4 * slots)])
                warm_s = time.perf_counter() - start
            real = execute.EXECUTORS["ray"]
            execute.EXECUTORS["ray"] = lambda ex=ray_ex, **kw: ex  # type: ignore[assignment]
            name = f"ray-{len(results)}"
            try:
                ray_s, ray_train_s, n_ray = timed_run(name, "ray")
            finally:
                execute.EXECUTORS["ray"] = real
                ray_ex.close()
            assert n_ray == n_local == ARMS * SEEDS, (n_ray, n_local)
            results[label] = (ray_s, len(local) - 1)
            busy = trial_seconds(name)
            print(f"ray ({label}): start-up {startup_s:.1f} s, worker warm-up {warm_s:.1f} s, "
                  f"run {ray_s:.1f} s (of which executor {ray_train_s:.1f} s; trials' own "
                  f"training time, summed over workers, {busy:.1f} s; executor time over that "
                  f"sum / {slots} slots: {ray_train_s / (busy / slots) - 1:+.1%})")
        local_run()
        print(f"{ARMS * SEEDS} trials of {steps} steps, 1 seed each; {os.cpu_count()} CPUs; "
              "each Ray run is compared with the mean of the local runs before and after it")
        overhead = {}
        for label, (seconds, i) in results.items():
            overhead[label] = seconds / ((local[i] + local[i + 1]) / 2) - 1
            print(f"ray overhead ({label}): {overhead[label]:+.1%}")
        print(f"ray_overhead={overhead['warm workers']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
