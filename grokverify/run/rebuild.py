"""`grokverify report`: every claim's report rebuilt from the store, training nothing.

The run's own analysis and report writer (`pipeline.run_claims` with `train=False`), claim by
claim, so a claim with seeds missing from the store is named with them and the others are
still rebuilt; a rebuilt report is the one `run` writes from the same records. Claims are
independent, so they are rebuilt side by side, one process per core (drawing the figures is
most of the time: a library's 137 figures took ~40 s on one core).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from grokverify.claim.load import LoadedClaim
from grokverify.run.outcome import RunOptions
from grokverify.run.pipeline import MissingRecords, run_claims


@dataclass(frozen=True)
class Rebuilt:
    """One claim's outcome: its result.json and verdict, or the seeds the store lacks in words
    (`MissingRecords`: "c1 seeds 3, 4; c10 seeds 3, 4"), in which case no report was written."""

    claim_id: str
    result_json: Path | None
    verdict: str | None
    seeds: int = 0
    missing: str = ""


def rebuild_one(loaded: LoadedClaim, opts: RunOptions, console: Console) -> Rebuilt:
    try:
        (run,) = run_claims([loaded], opts, console, train=False)
    except MissingRecords as exc:
        return Rebuilt(loaded.claim.id, None, None, missing=str(exc))
    assert run.report_dir is not None  # a finished run has written its report
    return Rebuilt(loaded.claim.id, run.report_dir / "result.json", run.verdict.value,
                   seeds=run.reused)


def _quiet_worker() -> None:
    """A worker leaves Ctrl-C to the parent and dies at the pool's SIGTERM as a process does,
    not through the CLI's handler it was forked with (a traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def worker_pool(method: str, workers: int) -> multiprocessing.pool.Pool:
    return multiprocessing.get_context(method).Pool(workers, initializer=_quiet_worker)


def _in_worker(job: tuple[LoadedClaim, RunOptions]) -> Rebuilt:
    return rebuild_one(*job, Console())  # to stdout, as the parent's console prints


def rebuild_claims(claims: list[LoadedClaim], opts: RunOptions, console: Console,
                   workers: int | None = None) -> list[Rebuilt]:
    """Each claim's `rebuild_one`, in the claims' order; with more than one claim and core, in
    `workers` processes (default: the cores), largest claims first. An error in one (the store
    unreadable) is raised here, as it would be in one process."""
    workers = min(len(claims), workers or os.cpu_count() or 1)
    if workers <= 1:
        return [rebuild_one(loaded, opts, console) for loaded in claims]
    order = sorted(range(len(claims)), key=lambda i: -claims[i].max_seeds(opts.scale)
                   * sum(1 for _ in claims[i].experiments([opts.scale])))
    # fork starts the children at once with what is imported, but forking a process that has
    # other threads (a test runner's, Ray's) can leave a child holding a lock no one releases:
    # then spawn fresh interpreters (a few seconds more)
    method = "fork" if threading.active_count() == 1 else "spawn"
    with worker_pool(method, workers) as pool:
        done = pool.map(_in_worker, [(claims[i], opts) for i in order], chunksize=1)
    out: list[Rebuilt | None] = [None] * len(claims)
    for i, rebuilt in zip(order, done, strict=True):
        out[i] = rebuilt
    return [r for r in out if r is not None]
