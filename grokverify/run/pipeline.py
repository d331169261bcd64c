"""One `grokverify run`: claims → trials → executor → store → statistics → verdict → report.

Planning happens first for every claim, so one executor (one Ray start) serves them all (and
every sequential round), and nothing is started when every record is already stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from grokverify.atomic import signals_deferred
from grokverify.claim.budget import CPU_WARN_S, scale_cpu_seconds
from grokverify.claim.load import LoadedClaim
from grokverify.claim.reach import seed_warnings
from grokverify.report.write import chunk_model_steps, write_report
from grokverify.run.execute import EXECUTORS, ExecutionError, Executor, resolve_device
from grokverify.run.outcome import ClaimRun, RunOptions
from grokverify.run.trials import Trial, pending_trials, plan_arms, spread
from grokverify.stats.arms import arm_sample
from grokverify.stats.base import judge
from grokverify.stats.checks import not_tested, run_checks
from grokverify.stats.decidable import more_seeds, say_bound
from grokverify.stats.family import combine
from grokverify.stats.sequential import Look, Rounds, own_alpha
from grokverify.stats.trend import fit_trend
from grokverify.stats.verdict import Verdict
from grokverify.store import Store, StoreError

__all__ = ["ClaimRun", "MissingRecords", "RunOptions", "analyse", "device_for", "run_claims",
           "seeding"]


def device_for(opts: RunOptions) -> str:
    if opts.executor == "ray" and opts.address is not None and opts.device != "cpu":
        # The driver of a remote cluster need not have the GPU; the executor checks the cluster.
        return "cuda" if opts.device in ("auto", "cuda") else opts.device
    return resolve_device(opts.device)


def _make_executor(opts: RunOptions, device: str) -> Executor:
    if opts.executor == "local":
        return EXECUTORS["local"](device=device, threads=opts.cpus_per_task)
    return EXECUTORS["ray"](address=opts.address, device=device,
                            cpus_per_task=opts.cpus_per_task, gpus_per_task=opts.gpus_per_task,
                            gpu_memory_gib=opts.gpu_memory_gib)


# The driver writes each record as its trial returns (then a driver killed outright loses only
# its tasks in flight) and leaves the fsyncs (4 ms on an idle disk, 12-50 ms on a busy one) to
# SYNC_THREADS threads, at most SYNCS_QUEUED trials behind, so memory stays flat on a disk slower
# than the cluster (docs/cluster.md, "Work sizing"; a record a power loss cuts short reads as
# damaged and is retrained: docs/store.md).
SYNC_THREADS = 8
SYNCS_QUEUED = 2 * SYNC_THREADS


class _Writer:
    """Stores each finished trial's records at once and releases their locks; their fsyncs run
    on SYNC_THREADS threads. A failed write raises at once; a failed fsync at a later `put` or
    at `close`, which waits for every fsync."""

    def __init__(self, store: Store):
        self.store = store
        self.pool = ThreadPoolExecutor(SYNC_THREADS, thread_name_prefix="gv-fsync")
        self.queued: list[Future[None]] = []

    def put(self, trial: Trial, records: list[dict[str, Any]]) -> None:
        self._check()  # a failed fsync stops the run before more is written
        paths = []
        try:
            for key, rec in zip(trial.keys, records, strict=True):
                with signals_deferred():  # a Ctrl-C here would leave it unlogged and locked
                    paths.append(self.store.put(key, rec, fsync=False))
                    self.store.unlock(key)
        finally:  # every record written is synced, or removed when that fails
            self.queued.append(self.pool.submit(self.store.sync, paths))
        while len(self.queued) > SYNCS_QUEUED:
            self.queued.pop(0).result()
        self._check()

    def _check(self) -> None:
        for fut in [f for f in self.queued if f.done()]:
            self.queued.remove(fut)
            fut.result()  # a failed fsync's StoreError, here

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        for fut in self.queued:
            fut.result()
        self.queued.clear()

    def close_after(self, console: Console) -> None:
        """`close` for a run that already stopped (interrupted, or failed): a failed fsync is
        said, not raised, so the first failure stands (Ctrl-C still exits 130)."""
        try:
            self.close()
        except StoreError as exc:
            console.print(f"[red]error:[/red] {escape(str(exc))}")


class _Trainer:
    """Trains pending trials, starting the executor (e.g. Ray) once, on first need, and storing
    every finished chunk at once. Sequential rounds reuse it."""

    def __init__(self, store: Store, opts: RunOptions, device: str, console: Console):
        self.store, self.opts, self.device, self.console = store, opts, device, console
        self.executor: Executor | None = None

    def train(self, trials: list[Trial]) -> dict[str, float]:
        """Run the trials; returns the summed chunk wall time per claim."""
        walls: dict[str, float] = {}
        if not trials:
            return walls
        total = sum(t.seed_steps for t in trials)
        n_seeds = sum(len(t.seeds) for t in trials)
        columns = [TextColumn("[bold]training"), BarColumn(),
                   TextColumn("{task.fields[trials_done]}/{task.fields[trials_total]} trials"),
                   TextColumn("{task.fields[seeds_done]}/{task.fields[seeds_total]} seeds"),
                   TextColumn("{task.fields[running]} running"), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn()]
        start = time.perf_counter()
        if self.executor is None:
            self.executor = _make_executor(self.opts, self.device)
        trials = spread(trials, self.executor.slots())
        self.console.print(f"[dim]{len(trials)} trial(s), {n_seeds} seed(s) to train on "
                           f"{self.executor.describe()}[/dim]")
        with Progress(*columns, console=self.console, transient=False) as progress:
            task = progress.add_task("train", total=total, seeds_done=0, seeds_total=n_seeds,
                                     trials_done=0, trials_total=len(trials), running=0)
            # budget: seed-steps of finished trials to budget; trained: what they computed
            done = {"seeds": 0, "trials": 0, "budget": 0, "trained": 0}
            writer = _Writer(self.store)
            # a log (nohup, a cluster job) gets no live bar: a plain line now and then instead
            plain = None if self.console.is_terminal else PlainProgress(
                total, n_seeds, len(trials), self.console.print)

            def on_done(trial: Trial, records: list[dict[str, Any]]) -> None:
                walls[trial.claim_id] = walls.get(trial.claim_id, 0.0) + records[0]["chunk_wall_s"]
                writer.put(trial, records)
                done["seeds"] += len(records)
                done["trials"] += 1
                done["budget"] += trial.seed_steps
                done["trained"] += chunk_model_steps(records)
                progress.update(task, seeds_done=done["seeds"], trials_done=done["trials"])

            def on_progress(steps_done: int, running: int) -> None:
                progress.update(task, completed=steps_done, running=running)
                if plain:  # the running trial's steps so far: what is past the finished budget
                    plain.update(steps_done, done["seeds"], done["trials"],
                                 done["trained"] + max(0, steps_done - done["budget"]))

            try:
                self.executor.run(trials, on_done, on_progress)
            except BaseException:
                writer.close_after(self.console)
                raise
            writer.close()
        self.console.print(f"[dim]trained {n_seeds} seed(s) in "
                           f"{time.perf_counter() - start:.1f} s[/dim]")
        return walls

    def close(self) -> None:
        if self.executor is not None:
            self.executor.close()


class PlainProgress:
    """Training progress as a plain line at most every `every` seconds, for output that is not a
    terminal: hour-long runs write to logs. The ETA is the seed-steps left to budget at the
    rate model-steps were computed so far, an upper bound where seeds stop early (a rate from
    budget shares would count an early stop's unrun steps as fast ones)."""

    def __init__(self, total: int, seeds: int, trials: int, say: Callable[[str], Any],
                 every: float = 60.0, clock: Callable[[], float] = time.perf_counter) -> None:
        self.total, self.seeds, self.trials, self.say = total, seeds, trials, say
        self.every, self.clock = every, clock
        self.start = self.last = clock()

    def update(self, steps: int, seeds: int, trials: int, trained: int) -> None:
        """`steps`: seed-steps to budget done (a finished trial counts its whole budget);
        `trained`: model-steps computed so far."""
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        elapsed, share = now - self.start, steps / self.total if self.total else 1.0
        rate = trained / elapsed if elapsed > 0 else 0.0
        eta = (f"ETA at most {_minutes((self.total - steps) / rate)}" if rate > 0
               else "ETA —")
        self.say(f"training: {seeds}/{self.seeds} seeds, {trials}/{self.trials} trials, "
                 f"{share:.0%} of the seed-steps to budget, {_minutes(elapsed)} elapsed, {eta}")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def _lock_trials(trials: list[Trial], store: Store) -> tuple[list[Trial], list[str]]:
    """Split pending work into seeds this process claimed (lock files) and seeds another live
    process is training, so two runs on one store never train the same seed."""
    mine: list[Trial] = []
    others: list[str] = []
    claimed: set[str] = set()  # two claims of one run may share a seed's experiment
    for trial in trials:
        seeds, keys = [], []
        for seed, key in zip(trial.seeds, trial.keys, strict=True):
            if key in claimed:
                continue  # another trial of this run trains it
            claimed.add(key)
            if not store.try_lock(key):
                others.append(key)
            elif store.has(key):  # finished by another process since we looked
                store.unlock(key)
            else:
                seeds.append(seed)
                keys.append(key)
        if seeds:
            mine.append(replace(trial, seeds=tuple(seeds), keys=tuple(keys)))
    return mine, others


def _train_claimed(trials: list[Trial], trainer: _Trainer, store: Store,
                   console: Console) -> tuple[dict[str, float], dict[str, int]]:
    """Train what no other process is training, wait for what one is, until nothing is
    missing. Returns wall time and seeds trained here, per claim."""
    walls: dict[str, float] = {}
    trained: dict[str, int] = {}
    while trials:
        mine, others = _lock_trials(trials, store)
        try:
            for claim_id, wall in trainer.train(mine).items():
                walls[claim_id] = walls.get(claim_id, 0.0) + wall
        finally:
            for trial in mine:  # release what an error or interrupt left unstored
                for key in trial.keys:
                    if not store.has(key):
                        store.unlock(key)
        stored = {k for t in mine for k in t.keys if store.has(k)}  # each record read once
        unsound = [k for t in mine for k in t.keys if k not in stored]
        if unsound:  # retraining would write it again, and again: stop instead
            why = store.damaged.get(unsound[0], "gone")
            raise ExecutionError(f"record {store.path_for(unsound[0])} does not read back sound "
                                 f"right after it was written ({why}); is the disk failing?")
        for trial in mine:
            trained[trial.claim_id] = trained.get(trial.claim_id, 0) + len(trial.seeds)
        if others:
            console.print(f"[dim]waiting for {len(others)} seed(s) that another grokverify "
                          f"process is training on this store[/dim]")
            while any(store.locked_by_other(k) and not store.has(k) for k in others):
                time.sleep(1.0)
        stored |= {k for t in trials for k in t.keys if k not in stored and store.has(k)}
        trials = [replace(t, seeds=tuple(s for s, k in zip(t.seeds, t.keys, strict=True)
                                         if k not in stored),
                          keys=tuple(k for k in t.keys if k not in stored))
                  for t in trials]
        trials = [t for t in trials if t.seeds]
    return walls, trained


class MissingRecords(ExecutionError):
    """Seeds without a sound record, met by a run that may not train (`grokverify report`)."""

    def __init__(self, trials: list[Trial]):
        self.trials = trials
        super().__init__("; ".join(f"{arm} seeds {', '.join(map(str, seeds))}"
                                   for arm, seeds in self.seeds_by_arm().items()))

    def seeds_by_arm(self) -> dict[str, list[int]]:
        """Arm label ("member/arm" in a family) -> its seeds that have no record."""
        out: dict[str, list[int]] = {}
        for trial in self.trials:
            out.setdefault(trial.label, []).extend(trial.seeds)
        return {arm: sorted(seeds) for arm, seeds in out.items()}


def _say_damaged(store: Store, runs: list[ClaimRun], console: Console,
                 then: str = "retraining it") -> None:
    """Name each damaged record that planning found: it reads as absent, so it is retrained
    (overwritten), never reused (`then` says what happens to it)."""
    news = store.newly_damaged()
    if not news:
        return
    where = {k: f"{run.loaded.claim.id} {p.member + '/' if p.member else ''}{p.arm} seed {s}"
             for run in runs for p in run.plans for s, k in zip(p.seeds, p.keys, strict=True)}
    for key, why in news.items():
        console.print(f"damaged record {where.get(key, key)} ({store.path_for(key)}): {why}; "
                      f"{then}", style="yellow", markup=False, highlight=False)


def seeding(loaded: LoadedClaim, scale: str, override: int | None) -> Rounds:
    """The claim's looks at `scale`: one at a fixed seed count (``--seeds N`` included), or the
    sequential rounds of ``seeds: {min, max, step}``, each at its spending rule's level."""
    seeds = override if override is not None else loaded.scale_seeds(scale)
    if isinstance(seeds, int):
        return Rounds.fixed(seeds)
    return Rounds.with_spending(seeds.looks(), own_alpha(loaded.claim.criterion), seeds.spending,
                                loaded.claim.criterion.information)


def analyse(run: ClaimRun, store: Store, look: Look) -> list[list[dict[str, Any]]]:
    """Per member: records → samples → criterion; then the family combination, if any.
    Returns the records read, one list per plan (the report draws from the same ones)."""
    claim = run.loaded.claim
    params = Rounds.params_at(claim.criterion, look)
    extra = claim.criterion.metrics_needed()
    run.samples = {}
    read = []
    checked: dict[str, dict[str, tuple[Any, list[dict[str, Any]]]]] = {}
    for plan in run.plans:
        records = [store.get(k) for k in plan.keys]
        missing = [s for s, r in zip(plan.seeds, records, strict=True) if r is None]
        if missing:
            raise ExecutionError(f"{claim.id}: {plan.member or 'arm'} {plan.arm} has no record "
                                 f"for seeds {missing}")
        sample = arm_sample(plan.arm, records, claim.metric, extra)  # type: ignore[arg-type]
        run.samples.setdefault(plan.member, {})[plan.arm] = sample
        checked.setdefault(plan.member, {})[plan.arm] = (plan.experiment, records)
        read.append(records)
    run.checks = {member: run_checks(claim.checks, member, arms)
                  for member, arms in checked.items()}
    run.results = {member: not_tested(say_bound(judge(params, samples), params, samples),
                                      run.checks[member])
                   for member, samples in run.samples.items()}
    run.family = (combine(run.results, claim.family.correction, claim.family.claims,
                          claim.family.untested) if claim.family else None)
    if run.family is not None and claim.family and claim.family.trend:
        trend = claim.family.trend
        run.family.trend = fit_trend(
            {m: (trend.x[m], r.estimate, r.ci, r.ci_level) for m, r in run.results.items()},
            trend.fit, trend.ci_level)
    return read  # type: ignore[return-value]  # no None left: missing seeds raised above


def _judge_more_seeds(run: ClaimRun) -> None:
    """What more seeds would do, for each undecided member (`decidable.more_seeds`)."""
    params = run.loaded.claim.criterion
    run.more_seeds = {member: found for member, result in run.results.items()
                      if result.verdict == Verdict.INCONCLUSIVE
                      and "budget_bound" not in result.details
                      and (found := more_seeds(params, run.samples[member])) is not None}


def _open_look(run: ClaimRun) -> Look:
    """The look an open run trains for and is judged at next (the same until it is recorded)."""
    look = run.seeding.next_look()
    if look is None:
        raise RuntimeError(f"{run.loaded.claim.id}: no look left; the run is done")
    return look


def _round_record(run: ClaimRun, look: Look) -> dict[str, Any]:
    out: dict[str, Any] = {"seeds": look.n, "ci_level": look.ci_level,
                           "verdict": run.verdict.value}
    if run.family is None:
        out.update(estimate=run.result.estimate, ci=list(run.result.ci))
    else:
        out["members"] = {m.member: m.verdict.value for m in run.family.members}
    return out


def _warn_paper_scale_on_cpu(claims: list[LoadedClaim], scale: str, device: str,
                             console: Console, seeds: int | None = None) -> None:
    """The papers' settings are sized for GPUs: on a CPU they take hours to days, so say so up front
    (the run goes ahead: finished seeds are stored, and it can be stopped and resumed). At the
    run's seeds an arm (`seeds`, default the scale's most); not for a cheap paper setting."""
    if not device.startswith("cpu"):
        return
    for loaded in claims:
        if not loaded.claim.scales[scale].paper_setting:
            continue
        n = seeds or loaded.max_seeds(scale)
        seconds = scale_cpu_seconds(loaded, scale, n)
        if seconds > CPU_WARN_S:
            quick = (" or --scale quick" if scale != "quick" and "quick" in loaded.claim.scales
                     else "")
            console.print(f"[yellow bold]warning:[/] {loaded.claim.id}: scale {scale!r} is the "
                          f"paper's setting and is sized for GPUs: {n} seeds an arm to their "
                          f"budget are about {seconds / 3600:.2g} hours of a 2-core CPU (early "
                          f"stopping and seeds already stored shorten it; the progress bar's ETA "
                          f"says more exactly). Use --address with a GPU cluster{quick}.")


def run_claims(claims: list[LoadedClaim], opts: RunOptions, console: Console,
               train: bool = True, write: bool = True) -> list[ClaimRun]:
    """Each round trains what every open claim needs, on one executor; sequential claims add
    rounds until decided. With `train` False (`grokverify report`) nothing is trained or written
    and a missing record raises MissingRecords; `opts.device` then names the records' device.
    With `write` False no report is written (`grokverify pilot`)."""
    for loaded in claims:
        if opts.scale not in loaded.claim.scales:
            raise ExecutionError(f"{loaded.path}: no scale {opts.scale!r}; scales are "
                                 f"{sorted(loaded.claim.scales)}")
    device = device_for(opts) if train or opts.device == "auto" else opts.device
    if train:
        _warn_paper_scale_on_cpu(claims, opts.scale, device, console, opts.seeds)
        for warning in seed_warnings(claims, opts.scale, opts.seeds):
            console.print(f"[yellow bold]warning:[/] {warning}.")
    store = Store(opts.store)
    start = time.perf_counter()
    runs = [ClaimRun(loaded, opts.scale, [], seeding(loaded, opts.scale, opts.seeds))
            for loaded in claims]
    trainer = _Trainer(store, opts, device, console)
    open_runs = list(runs)
    try:
        while open_runs:
            trials: list[Trial] = []
            for run in open_runs:
                look = _open_look(run)
                run.plans = plan_arms(run.loaded, opts.scale, device, look.n)
                trials.extend(pending_trials(run.loaded.claim.id, run.plans, store,
                                             opts.chunk_size, device.split(":")[0],
                                             opts.cpus_per_task))
            _say_damaged(store, open_runs, console,
                         "retraining it" if train else "it counts as missing")
            if trials and not train:
                raise MissingRecords(trials)
            if trials:
                store.check_writable()
            walls, trained = _train_claimed(trials, trainer, store, console)
            still_open = []
            for run in open_runs:
                look = _open_look(run)
                run.train_wall_s += walls.get(run.loaded.claim.id, 0.0)
                run.trained += trained.get(run.loaded.claim.id, 0)
                records = analyse(run, store, look)
                run.rounds.append(_round_record(run, look))
                run.seeding.record(run.verdict)  # a family decides on the family's verdict
                if run.seeding.done:
                    _judge_more_seeds(run)
                    run.reused = len({k for p in run.plans for k in p.keys}) - run.trained
                    run.wall_s = time.perf_counter() - start
                    if write:
                        run.report_dir = write_report(run, records, opts, device)
                else:
                    still_open.append(run)
            open_runs = still_open
    finally:
        trainer.close()
    return runs
