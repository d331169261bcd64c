"""One `grokverify run`: claims → trials → executor → store → statistics → verdict → report.

Planning happens first for every claim, so one executor (one Ray start) serves them all, and
nothing is started when every record is already in the store.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from grokverify.execute import EXECUTORS, ExecutionError, Executor, resolve_device
from grokverify.expand import ArmPlan, Trial, pending_trials, plan_arms
from grokverify.family import FamilyResult, combine
from grokverify.report import write_report
from grokverify.samples import arm_sample
from grokverify.spec import SINGLE, LoadedClaim
from grokverify.stats import CRITERIA, ArmSample, CriterionResult, Verdict
from grokverify.store import Store


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class RunOptions:
    scale: str = "quick"
    seeds: int | None = None
    store: Path = Path(".grokverify/store")
    reports: Path = Path("reports")
    executor: str = "ray"
    address: str | None = None
    device: str = "auto"
    chunk_size: int = 16
    cpus_per_task: int = 1
    gpus_per_task: float = 1.0


@dataclass
class ClaimRun:
    """What one claim's run produced."""

    loaded: LoadedClaim
    scale: str
    plans: list[ArmPlan]
    trained: int = 0  # seeds trained in this run
    reused: int = 0  # seeds taken from the store
    results: dict[str, CriterionResult] = field(default_factory=dict)  # member -> result
    samples: dict[str, dict[str, ArmSample]] = field(default_factory=dict)  # member -> arm -> ...
    family: FamilyResult | None = None
    report_dir: Path | None = None
    wall_s: float = 0.0
    train_wall_s: float = 0.0
    started: str = field(default_factory=lambda: _now())


    @property
    def result(self) -> CriterionResult:
        """The criterion result of a claim without a family."""
        return self.results[SINGLE]

    @property
    def verdict(self) -> Verdict:
        return self.family.verdict if self.family else self.result.verdict

    @property
    def reason(self) -> str:
        return self.family.reason if self.family else self.result.reason


def _device_for(opts: RunOptions) -> str:
    if opts.executor == "ray" and opts.address is not None and opts.device != "cpu":
        # The driver of a remote cluster need not have the GPU; the executor checks the cluster.
        return "cuda" if opts.device in ("auto", "cuda") else opts.device
    return resolve_device(opts.device)


def _make_executor(opts: RunOptions, device: str) -> Executor:
    if opts.executor == "local":
        return EXECUTORS["local"](device=device)
    return EXECUTORS["ray"](address=opts.address, device=device,
                            cpus_per_task=opts.cpus_per_task, gpus_per_task=opts.gpus_per_task)


def _train(trials: list[Trial], store: Store, opts: RunOptions, device: str,
           console: Console) -> dict[str, float]:
    """Run the pending trials; every finished chunk is stored at once. Wall time per claim."""
    walls: dict[str, float] = {}
    total = sum(t.seed_steps for t in trials)
    n_seeds = sum(len(t.seeds) for t in trials)
    columns = [TextColumn("[bold]training"), BarColumn(),
               TextColumn("{task.fields[trials_done]}/{task.fields[trials_total]} trials"),
               TextColumn("{task.fields[seeds_done]}/{task.fields[seeds_total]} seeds"),
               TextColumn("{task.fields[running]} running"), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn()]
    start = time.perf_counter()
    console.print(f"[dim]{len(trials)} trial(s), {n_seeds} seed(s) to train on {device} "
                  f"via {opts.executor}[/dim]")
    executor = _make_executor(opts, device)
    try:
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task("train", total=total, seeds_done=0, seeds_total=n_seeds,
                                     trials_done=0, trials_total=len(trials), running=0)
            seeds_done = trials_done = 0

            def on_done(trial: Trial, records: list[dict[str, Any]]) -> None:
                nonlocal seeds_done, trials_done
                for key, rec in zip(trial.keys, records, strict=True):
                    store.put(key, rec)
                seeds_done += len(records)
                trials_done += 1
                walls[trial.claim_id] = walls.get(trial.claim_id, 0.0) + records[0]["chunk_wall_s"]
                progress.update(task, seeds_done=seeds_done, trials_done=trials_done)

            def on_progress(done: int, running: int) -> None:
                progress.update(task, completed=done, running=running)

            executor.run(trials, on_done, on_progress)
    finally:
        executor.close()
    console.print(f"[dim]trained {n_seeds} seed(s) in {time.perf_counter() - start:.1f} s[/dim]")
    return walls


def analyse(run: ClaimRun, store: Store) -> None:
    """Per member: records → samples → criterion; then the family combination, if any."""
    claim = run.loaded.claim
    criterion = CRITERIA[claim.criterion.name]
    extra = criterion.metrics_of(claim.criterion) if criterion.metrics_of else []
    for plan in run.plans:
        records = [store.get(k) for k in plan.keys]
        missing = [s for s, r in zip(plan.seeds, records, strict=True) if r is None]
        if missing:
            raise ExecutionError(f"{claim.id}: {plan.member or 'arm'} {plan.arm} has no record "
                                 f"for seeds {missing}")
        sample = arm_sample(plan.arm, records, claim.metric, extra)  # type: ignore[arg-type]
        run.samples.setdefault(plan.member, {})[plan.arm] = sample
    run.results = {member: criterion.run(claim.criterion, samples)
                   for member, samples in run.samples.items()}
    if claim.family is not None:
        run.family = combine(run.results, claim.family.correction)


def run_claims(claims: list[LoadedClaim], opts: RunOptions, console: Console) -> list[ClaimRun]:
    for loaded in claims:
        if opts.scale not in loaded.claim.scales:
            raise ExecutionError(f"{loaded.path}: no scale {opts.scale!r}; scales are "
                                 f"{sorted(loaded.claim.scales)}")
    device = _device_for(opts)
    store = Store(opts.store)
    start = time.perf_counter()
    runs: list[ClaimRun] = []
    trials: list[Trial] = []
    for loaded in claims:
        plans = plan_arms(loaded, opts.scale, device, opts.seeds)
        pending = pending_trials(loaded.claim.id, plans, store, opts.chunk_size)
        trained = sum(len(t.seeds) for t in pending)
        total = len({k for p in plans for k in p.keys})
        runs.append(ClaimRun(loaded, opts.scale, plans, trained=trained, reused=total - trained))
        trials.extend(pending)
    walls = _train(trials, store, opts, device, console) if trials else {}
    for run in runs:
        run.train_wall_s = walls.get(run.loaded.claim.id, 0.0)
        analyse(run, store)
        run.wall_s = time.perf_counter() - start
        run.report_dir = write_report(run, store, opts, device)
    return runs
