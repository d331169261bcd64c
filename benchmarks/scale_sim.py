"""How the driver copes with thousands of trials: the real `grokverify run` driver on a local Ray
that declares many CPUs, with each trial replaced by a stand-in of declared duration.

    python benchmarks/scale_sim.py            # 1,000 then 5,000 trials, about 4 minutes
    python benchmarks/scale_sim.py --quick    # 300 then 1,000 trials (smoke run)

No cluster is at hand, so the cluster is simulated and the driver is real: a generated claim
library (families with a grid of arms, 20 seeds an arm, `--chunk-size 1`: one trial a seed)
goes through `grokverify.run.pipeline.run_claims` — planning, locks, submission under the in-flight
cap, store writes, progress (rendered to /dev/null), statistics, reports — on a
`RayExecutor(num_cpus=--cpus, task=<stand-in>)`. The stand-in (`RayExecutor`'s `task` seam)
sleeps `--task-s` seconds and returns records of the real format: copies of a real tiny trial
trained once here, with the seed, the experiment and `key_inputs` set as `run_trial` sets them,
so the store's checks (key, digest), the statistics and the reports run on them for real. It
imports no torch, so a Ray worker stays light (one per declared CPU at most: the in-flight cap
bounds what is submitted, and worker prestart is off).

Each library size runs in a fresh process (its driver RSS its own). Per run it prints the
phases' times, the training phase's trials a second, the driver's costs a trial (its main
thread's CPU, the whole process's CPU, the store's writes in its loop, the records' fsyncs on
its threads) with the rate at which each would saturate, the write times (`Store.put`, per
record, without its fsync) and the
driver's RSS (VmRSS sampled every 50 ms: before the run and its peak). Then the same trials
through the executor alone (nothing stored: this machine's ceiling, and Ray's own cost a task),
and record writes into one store folder holding 0, 10,000 and 100,000 files (the store shards
records by the key's first two hex digits: 256 folders). The last line:

    driver_trials_per_s=<5,000-trial run> driver_rss_mb=<its peak> store_write_ms_p99=<...>
    driver_rss_mb_1000=... driver_rss_mb_5000=... rss_ratio=<5000 / 1000>

`--in-flight N` sets the cap (default: the executor's, IN_FLIGHT_PER_SLOT a slot); `--sizes`
other library sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grokverify.run.pipeline import SYNC_THREADS
from grokverify.run.trials import TASK_MIN_S

SEEDS = 20  # per arm, as at paper scale
ARMS_PER_CLAIM = 5  # c4 and four rivals, each its own experiment
TEMPLATE_SEEDS = 8  # real records the stand-in's copies are made from
TEMPLATE_STEPS, TEMPLATE_EVAL = 2000, 20  # 100 evaluations a curve, as at paper scale


def claim_text(i: int, seeds: int, steps: int, eval_interval: int) -> str:
    """One claim of the library: a family over a grid of rivals (like p1_c_sweep_fastest), the
    toy's settings of the template, a learning rate of its own (so no two claims share a
    record)."""
    return textwrap.dedent(f"""\
        id: sim_{i:05d}
        title: Scale simulation claim {i}
        statement: c = 4 reaches the validation threshold sooner than each rival (simulated).
        source: {{arxiv: "2505.15624", where: benchmark, role: paper_claim, quote: benchmark}}
        base:
          task: {{op: add, p: 10, modular: false, unordered: true, train_frac: 0.7}}
          model: {{kind: toy_sum, hidden: 32}}
          optimizer: {{name: adamw, lr: {0.003 + i * 1e-7:.7f}}}
          training: {{steps: {steps}, eval_interval: {eval_interval}, train_threshold: 0.9,
                      val_threshold: 0.6, early_stop: false}}
        arms:
          rival: {{}}
          c4: {{optimizer: {{emb_lr_mult: 4}}}}
        family: {{claims: all, correction: holm}}
        grid:
          into: members
          name: "vs_c{{c}}"
          axes:
            c: {{path: optimizer.emb_lr_mult, values: [1, 2, 8, 10]}}
        scales:
          quick: {{description: simulation scale}}
        seeds: {seeds}
        metric: {{name: val_threshold_step, on_diverged: budget}}
        criterion: {{name: survival_compare, baseline: rival, treated: c4, effect: ratio,
                    direction: less, min_effect: 0.0, n_boot: 200}}
        """)


def make_stand_in(templates: list[dict[str, Any]], seconds: float) -> Callable[..., Any]:
    """A trial of declared duration with run_trial's signature (RayExecutor's `task`): sleeps,
    then returns one record per seed made from the templates as run_trial makes its own (key
    inputs from the experiment's canonical form and the process part the driver computed).
    Defined in __main__, so Ray ships it by value (workers cannot import this script). The
    simulated cluster shares this machine's cores with the driver, so it keeps its own work
    small: each experiment's canonical form is computed once a worker."""
    canonical_of: dict[str, str] = {}

    def stand_in(exp_json: dict[str, Any], seeds: list[int], device: str, threads: int,
                 expected: dict[str, str], progress: Any = None) -> list[dict[str, Any]]:
        import json
        import time as _time
        from datetime import datetime, timezone

        from grokverify.claim.experiment import (
            ExperimentSpec,  # pydantic only: no torch in the worker
        )

        _time.sleep(seconds)
        text = json.dumps(exp_json, sort_keys=True)
        if text not in canonical_of:
            canonical_of[text] = ExperimentSpec.model_validate(exp_json).canonical()
        canonical = canonical_of[text]
        created = datetime.now(timezone.utc).isoformat(timespec="seconds")
        out = []
        for seed in seeds:
            base = templates[seed % len(templates)]
            result = {**base["result"], "seed": seed,
                      "summary": {**base["result"]["summary"], "seed": seed}}
            out.append({**base, "experiment": exp_json, "threads": threads,
                        "chunk_seeds": list(seeds), "chunk_wall_s": seconds,
                        "created": created, "seed": seed,
                        "key_inputs": {"experiment": canonical, "seed": seed, **expected},
                        "result": result})
        return out

    return stand_in


def _warm(seconds: float) -> int:
    """What a fresh worker pays once before its first stand-in trial (importing grokverify's
    spec: pydantic), then a wait, so that every slot's worker is started and warm."""
    import time as _time

    from grokverify.claim.experiment import ExperimentSpec  # noqa: F401

    _time.sleep(seconds)
    return os.getpid()


def train_templates(folder: Path) -> Path:
    """The real records the stand-in copies: one trial of the library's experiment."""
    from grokverify.claim.load import load_claim
    from grokverify.run.execute import run_trial
    from grokverify.store import process_part

    path = folder / "template_claim.yaml"
    path.write_text(claim_text(0, TEMPLATE_SEEDS, TEMPLATE_STEPS, TEMPLATE_EVAL))
    exp = next(e for _, _, arm, e in load_claim(path).experiments(["quick"]) if arm == "rival")
    records = run_trial(exp.model_dump(mode="json"), list(range(TEMPLATE_SEEDS)), "cpu", 1,
                        process_part(exp, "cpu"))
    out = folder / "templates.json"
    out.write_text(json.dumps(records))
    return out


LIMIT_WORDS = {"loop": "the driver's loop (main thread CPU)",
               "process": "the driver process's CPU on one core",
               "store": "the store's writes (the driver's loop, as each trial returns)",
               "sync": f"the records' fsyncs ({SYNC_THREADS} threads)"}


def _limits(r: dict[str, Any]) -> dict[str, float]:
    """Trials a second at which each part of the driver would be busy all the time."""
    return {"loop": r["trials"] / r["main_cpu_s"], "process": r["trials"] / r["proc_cpu_s"],
            "store": r["trials"] / r["write_s"],  # in the loop, one after another
            "sync": SYNC_THREADS * r["trials"] / r["sync_s"]}  # fsyncs overlap on threads


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _RssSampler(threading.Thread):
    """The driver's resident memory every 50 ms; `peak` the largest seen."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0.0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.peak = max(self.peak, _rss_mb())
            self.halt.wait(0.05)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def child(args: argparse.Namespace) -> dict[str, Any]:
    """One library size in this (fresh) process: the driver under test."""
    # Ray starts a worker per declared CPU when the first driver connects, and more on lease
    # requests; off, workers start as tasks need them (at most one per slot under the cap).
    os.environ.update({"RAY_prestart_worker_first_driver": "0",  # Ray's config names
                       "RAY_enable_worker_prestart": "0"})
    from rich.console import Console

    import grokverify.run.execute as execute
    from grokverify.claim.load import load_claim
    from grokverify.run.outcome import RunOptions
    from grokverify.run.pipeline import run_claims
    from grokverify.store import Store

    templates = json.loads(Path(args.templates).read_text())
    tmp = Path(args.tmp)
    n_claims = -(-args.trials // (SEEDS * ARMS_PER_CLAIM))
    folder = tmp / "claims"
    folder.mkdir()
    for i in range(n_claims):
        (folder / f"sim_{i:05d}.yaml").write_text(
            claim_text(i + 1, SEEDS, TEMPLATE_STEPS, TEMPLATE_EVAL))
    claims = [load_claim(p) for p in sorted(folder.glob("*.yaml"))]

    writes: list[float] = []  # seconds of each Store.put (a record's write and log line)
    syncs: list[float] = []  # seconds of each Store.sync (one trial's records' fsyncs)
    real_put, real_sync = Store.put, Store.sync

    def timed_put(self: Store, key: str, record: dict[str, Any], **kw: Any) -> Path:
        wall = time.perf_counter()
        try:
            return real_put(self, key, record, **kw)
        finally:
            writes.append(time.perf_counter() - wall)

    def timed_sync(self: Store, paths: list[Path]) -> None:
        wall = time.perf_counter()
        try:
            real_sync(self, paths)
        finally:
            syncs.append(time.perf_counter() - wall)

    Store.put = timed_put  # type: ignore[method-assign]  # instrumentation, this process only
    Store.sync = timed_sync  # type: ignore[method-assign]

    phase: dict[str, float] = {}

    class Timed(execute.RayExecutor):
        """The executor, its `run` timed (wall and the driver's main-thread CPU)."""

        def run(self, trials: list[Any], on_done: Any, on_progress: Any) -> None:
            wall, cpu = time.perf_counter(), time.thread_time()
            proc = time.process_time()
            phase["trials"] = phase.get("trials", 0) + len(trials)
            try:
                super().run(trials, on_done, on_progress)
            finally:
                phase["train_s"] = phase.get("train_s", 0.0) + time.perf_counter() - wall
                phase["main_cpu_s"] = phase.get("main_cpu_s", 0.0) + time.thread_time() - cpu
                phase["proc_cpu_s"] = phase.get("proc_cpu_s", 0.0) + time.process_time() - proc

    if args.ray_only:  # the same trials through the executor alone: nothing stored
        return ray_only(args, claims, templates)
    start = time.perf_counter()
    ex = Timed(device="cpu", cpus_per_task=1, num_cpus=args.cpus,
               task=make_stand_in(templates, args.task_s),
               max_in_flight=args.in_flight or None)
    startup_s = time.perf_counter() - start
    # warm the workers: one task a slot, all at once, so every slot has its process
    start = time.perf_counter()
    warm = ex.ray.remote(_warm).options(num_cpus=1)
    workers = len(set(ex.ray.get([warm.remote(2.0) for _ in range(args.cpus)])))
    warm_s = time.perf_counter() - start
    real = execute.EXECUTORS["ray"]
    execute.EXECUTORS["ray"] = lambda **_: ex  # type: ignore[assignment]  # run_claims uses ours
    opts = RunOptions(store=tmp / "store", reports=tmp / "reports", executor="ray",
                      device="cpu", chunk_size=1)
    console = Console(file=open(os.devnull, "w"), force_terminal=True, width=160)  # noqa: SIM115
    rss_before = _rss_mb()
    sampler = _RssSampler()
    sampler.start()
    start = time.perf_counter()
    try:
        runs = run_claims(claims, opts, console)  # closes the executor (Ray shut down)
    finally:
        execute.EXECUTORS["ray"] = real
    total_s = time.perf_counter() - start
    sampler.halt.set()
    sampler.join()
    trained = sum(r.trained for r in runs)
    records = sum(1 for _ in (tmp / "store" / "records").rglob("*.json"))
    shard_sizes = [len(list(d.iterdir())) for d in (tmp / "store" / "records").iterdir()]
    return {
        "trials": phase["trials"], "trained": trained, "records": records, "claims": len(runs),
        "slots": args.cpus, "task_s": args.task_s, "in_flight": args.in_flight,
        "startup_s": startup_s, "warm_s": warm_s, "workers": workers, "total_s": total_s,
        "train_s": phase["train_s"], "main_cpu_s": phase["main_cpu_s"],
        "proc_cpu_s": phase["proc_cpu_s"], "write_s": sum(writes),
        "write_ms_p50": 1e3 * _pct(writes, 0.5), "write_ms_p99": 1e3 * _pct(writes, 0.99),
        "write_ms_max": 1e3 * max(writes), "writes": len(writes), "sync_s": sum(syncs),
        "sync_ms_p99": 1e3 * _pct(syncs, 0.99),
        "rss_before_mb": rss_before, "rss_peak_mb": sampler.peak,
        "shard_max": max(shard_sizes),
        "verdicts": sorted({r.verdict.value for r in runs}),
    }


def ray_only(args: argparse.Namespace, claims: list[Any],
             templates: list[dict[str, Any]]) -> dict[str, Any]:
    """What Ray and the stand-ins alone reach on this machine: the library's trials through
    `RayExecutor.run` with callbacks that do nothing (no store, no progress)."""
    from grokverify.run.execute import RayExecutor
    from grokverify.run.trials import pending_trials, plan_arms
    from grokverify.store import Store

    store = Store(Path(args.tmp) / "empty")
    trials = [t for lc in claims for t in pending_trials(
        lc.claim.id, plan_arms(lc, "quick", "cpu"), store, 1, "cpu")]
    ex = RayExecutor(device="cpu", num_cpus=args.cpus, task=make_stand_in(templates, args.task_s),
                     max_in_flight=args.in_flight or None)
    try:
        warm = ex.ray.remote(_warm).options(num_cpus=1)
        ex.ray.get([warm.remote(2.0) for _ in range(args.cpus)])
        start = time.perf_counter()
        ex.run(trials, lambda *_: None, lambda *_: None)
        return {"trials": len(trials), "train_s": time.perf_counter() - start}
    finally:
        ex.close()


def folder_probe(templates: list[dict[str, Any]], sizes: tuple[int, ...],
                 n: int = 300) -> dict[int, tuple[float, float]]:
    """Store.put into one records folder that already holds `size` files: (p50, p99) ms."""
    from grokverify.store import Store

    out = {}
    record = templates[0]
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="gv-sim-folder-") as tmp:
            store = Store(Path(tmp) / "store")
            shard = Path(tmp) / "store" / "records" / "ab"
            shard.mkdir(parents=True)
            for i in range(size):  # placeholders: the folder's size is what is measured
                (shard / f"ab{i:062x}.json").touch()
            times = []
            for _ in range(n):
                key = "ab" + secrets.token_hex(31)
                start = time.perf_counter()
                store.put(key, record)
                times.append(time.perf_counter() - start)
            out[size] = (1e3 * _pct(times, 0.5), 1e3 * _pct(times, 0.99))
    return out


def _child(args: argparse.Namespace, n: int, templates: Path, work: Path,
           *extra: str) -> dict[str, Any]:
    """One library size in a fresh process (its RSS its own); its RESULT line, parsed."""
    work.mkdir()
    cmd = [sys.executable, __file__, "--child", "--trials", str(n), "--cpus", str(args.cpus),
           "--task-s", str(args.task_s), "--in-flight", str(args.in_flight), "--templates",
           str(templates), "--tmp", str(work), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"the run of {n} trials failed:\n{proc.stdout[-3000:]}"
                         f"\n{proc.stderr[-3000:]}")
    return json.loads(line[0][len("RESULT "):])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 and 1,000 trials")
    parser.add_argument("--sizes", default=None, help="library sizes in trials, e.g. 1000,5000")
    parser.add_argument("--cpus", type=int, default=32, help="CPUs the local Ray declares")
    parser.add_argument("--task-s", type=float, default=0.1, help="a stand-in trial's seconds")
    parser.add_argument("--in-flight", type=int, default=0,
                        help="tasks in flight (default: the executor's cap)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ray-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trials", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--templates", default="", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(child(args)), flush=True)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (
        [300, 1000] if args.quick else [1000, 5000])
    from grokverify.run.execute import IN_FLIGHT_PER_SLOT

    cap = args.in_flight or IN_FLIGHT_PER_SLOT * args.cpus
    print(f"local Ray declaring {args.cpus} CPUs (this machine has {os.cpu_count()}), stand-in "
          f"trials of {args.task_s:g} s: the cluster could do {args.cpus / args.task_s:.0f} "
          f"trials/s; in flight at most {cap}; one seed a trial (--chunk-size 1)")
    results = {}
    with tempfile.TemporaryDirectory(prefix="gv-sim-") as tmp_:
        tmp = Path(tmp_)
        start = time.perf_counter()
        templates = train_templates(tmp)
        print(f"template: {TEMPLATE_SEEDS} real seeds trained in {time.perf_counter() - start:.1f}"
              f" s; a record is {len(json.dumps(json.loads(templates.read_text())[0])):,} bytes")
        for n in sizes:
            r = results[n] = _child(args, n, templates, tmp / f"run{n}")
            print(f"\n{r['trials']:,} trials ({r['claims']} claims x {ARMS_PER_CLAIM} arms x "
                  f"{SEEDS} seeds; {r['trained']:,} seeds trained, {r['records']:,} records, at "
                  f"most {r['shard_max']} in one folder); verdicts {', '.join(r['verdicts'])}")
            print(f"  Ray start {r['startup_s']:.1f} s, {r['workers']} workers warmed in "
                  f"{r['warm_s']:.1f} s; run_claims {r['total_s']:.1f} s: training phase "
                  f"{r['train_s']:.1f} s ({r['trials'] / r['train_s']:.0f} trials/s), the rest "
                  f"(planning, locks, read-back, statistics, reports) "
                  f"{r['total_s'] - r['train_s']:.1f} s")
            limits = _limits(r)
            print(f"  driver per trial in the training phase: main thread CPU "
                  f"{1e3 * r['main_cpu_s'] / r['trials']:.2f} ms (the loop alone would saturate "
                  f"at {limits['loop']:.0f}/s), whole process CPU "
                  f"{1e3 * r['proc_cpu_s'] / r['trials']:.2f} ms (with Ray's threads and the "
                  f"fsync threads: {limits['process']:.0f}/s on one core), store writes "
                  f"{1e3 * r['write_s'] / r['writes']:.2f} ms mean in the loop "
                  f"({limits['store']:.0f} records/s), fsyncs {1e3 * r['sync_s'] / r['trials']:.2f}"
                  f" ms mean a trial on {SYNC_THREADS} threads ({limits['sync']:.0f} trials/s)")
            print(f"  store writes: {r['writes']:,}, p50 {r['write_ms_p50']:.2f} ms, p99 "
                  f"{r['write_ms_p99']:.2f} ms, max {r['write_ms_max']:.1f} ms; fsyncs p99 "
                  f"{r['sync_ms_p99']:.2f} ms a trial; driver RSS "
                  f"{r['rss_before_mb']:.0f} MB before the run, peak {r['rss_peak_mb']:.0f} MB")
        alone = _child(args, sizes[0], templates, tmp / "ray-only", "--ray-only")
        alone_rate = alone["trials"] / alone["train_s"]
        per_task = args.cpus * alone["train_s"] / alone["trials"] - args.task_s
        print(f"\nRay and the stand-ins alone (the {alone['trials']:,} trials, nothing stored): "
              f"{alone_rate:.0f} trials/s, this machine's ceiling for the figures above. A slot "
              f"spent {1e3 * per_task:.0f} ms a task beyond the stand-in's {args.task_s:g} s "
              f"(Ray's scheduling, the worker's own work, the result's way back: {args.cpus} "
              f"workers on {os.cpu_count()} cores): {100 * per_task / TASK_MIN_S:.2f}% of a "
              f"{TASK_MIN_S:g} s task, {100 * per_task:.0f}% of a 1 s one")
        probe = folder_probe(json.loads(templates.read_text()), (0, 10_000, 100_000))
    print("\none store folder already holding N files: Store.put p50 / p99 ms (one thread)")
    for size, (p50, p99) in probe.items():
        print(f"  N = {size:>7,} ({256 * size:>11,} records in the store): {p50:.2f} / {p99:.2f}")
    small, big = results[sizes[0]], results[sizes[-1]]
    rate = big["trials"] / big["train_s"]
    limits = _limits(big)
    which = min(limits, key=lambda k: limits[k])
    ratio = big["rss_peak_mb"] / small["rss_peak_mb"]
    print(f"\nwhere the driver saturates: at ~{limits[which]:.0f} trials/s, set by "
          f"{LIMIT_WORDS[which]} (observed here: {rate:.0f}/s, on {os.cpu_count()} cores "
          f"shared with the simulated cluster's Ray processes, which alone reached "
          f"{alone_rate:.0f}/s of a nominal {args.cpus / args.task_s:.0f}/s).")
    print(f"With tasks of {TASK_MIN_S:g} s or more (the sizing rule) that keeps "
          f"~{TASK_MIN_S * limits[which]:,.0f} slots busy.")
    print(f"Records per folder: 256 folders, N/256 each (1 million records: ~3,900 a folder); "
          f"a write into a folder of 100,000 files (25.6 million records) took "
          f"{probe[100_000][0]:.2f} ms p50, into an empty one {probe[0][0]:.2f} ms.")
    print(f"driver_trials_per_s={rate:.0f} driver_rss_mb={big['rss_peak_mb']:.0f} "
          f"store_write_ms_p99={big['write_ms_p99']:.2f} "
          f"driver_rss_mb_{sizes[0]}={small['rss_peak_mb']:.0f} "
          f"driver_rss_mb_{sizes[-1]}={big['rss_peak_mb']:.0f} rss_ratio={ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
