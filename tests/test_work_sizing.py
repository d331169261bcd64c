"""Work sizing (issue 18): seeds per chunk from the cost estimate, chunks of even size, the
cap on Ray tasks in flight (through RayExecutor's `task` seam), and the driver's record writer
(writes as trials return, fsyncs on threads; a failed write or fsync stops the run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.load import load_claim
from grokverify.run.trials import (
    TASK_MIN_S,
    Trial,
    chunk_seeds,
    expected_seconds,
    pending_trials,
    plan_arms,
)
from grokverify.store import Store, StoreError

CLAIMS = Path(__file__).parent.parent / "claims"


def _exp(path: Path, scale: str) -> ExperimentSpec:
    return next(exp for s, _, _, exp in load_claim(path).experiments([scale]) if s == scale)


def test_a_long_compute_bound_trial_goes_two_seeds_a_shard_on_a_cpu() -> None:
    """Paper 1's MLP at paper scale: one seed already lasts far beyond TASK_MIN_S on a CPU, and
    batching more gains nothing there, so a chunk is two seeds a shard (one would train beside
    a ghost copy at the cost of two; more tasks to spread, less lost to a restart); on a GPU the
    step's fixed cost dominates, so seeds batch up to the cap."""
    exp = _exp(CLAIMS / "adam_lr.yaml", "paper")
    assert expected_seconds(exp, 1, "cpu") > 10 * TASK_MIN_S
    assert expected_seconds(exp, 1, "cpu") == expected_seconds(exp, 2, "cpu")  # the ghost
    assert chunk_seeds(exp, 16, "cpu") == 2
    assert chunk_seeds(exp, 16, "cpu", threads=2) == 4
    assert chunk_seeds(exp, 16, "cuda") == 16
    assert chunk_seeds(exp, 4, "cuda") == 4  # never more than --chunk-size


def test_a_short_trial_batches_up_to_the_chunk_size(tiny_claim: Path) -> None:
    """The tiny claim's trial is far below TASK_MIN_S even at 16 seeds: as many seeds as the
    cap allows, 1 when the user asks for 1."""
    exp = _exp(tiny_claim, "quick")
    assert expected_seconds(exp, 16, "cpu") < TASK_MIN_S
    assert chunk_seeds(exp, 16, "cpu") == 16
    assert chunk_seeds(exp, 1, "cpu") == 1


def test_the_chunk_lasts_long_enough_and_grows_with_threads() -> None:
    """Whatever it picks below the cap lasts at least TASK_MIN_S; a trial on more threads
    runs faster, so it needs at least as many seeds."""
    for name in ("adam_lr.yaml", "p2_phase_lr_wd_regression.yaml", "p1_c_sweep_fastest.yaml"):
        for scale in ("quick", "paper"):
            exp = _exp(CLAIMS / name, scale)
            for threads in (1, 2, 4):
                n = chunk_seeds(exp, 16, "cpu", threads)
                assert min(16, 2 * threads) <= n <= 16
                if n < 16:
                    assert expected_seconds(exp, n, "cpu", threads) >= TASK_MIN_S
                assert chunk_seeds(exp, 16, "cpu", threads) >= chunk_seeds(exp, 16, "cpu", 1)


def test_an_arms_seeds_are_cut_into_even_chunks(tmp_path: Path) -> None:
    """adam_lr's quick arm picks 7 seeds a chunk: its 8 seeds go as 4 + 4 (a lone seed would
    train beside a ghost copy at the cost of two), each seed once, every chunk within the
    size picked."""
    loaded = load_claim(CLAIMS / "adam_lr.yaml")
    plans = plan_arms(loaded, "quick", "cpu")
    size = chunk_seeds(plans[0].experiment, 16, "cpu")
    assert 1 < size < len(plans[0].seeds)
    trials = pending_trials("adam_lr", plans, Store(tmp_path / "store"), 16, "cpu")
    for plan in plans:
        mine = [t for t in trials if (t.member, t.arm) == (plan.member, plan.arm)]
        sizes = [len(t.seeds) for t in mine]
        assert max(sizes) - min(sizes) <= 1 and max(sizes) <= size
        assert sorted(s for t in mine for s in t.seeds) == list(plan.seeds)
        assert [k for t in mine for k in t.keys] == list(plan.keys)


@pytest.mark.parametrize("fails", ["put", "sync"])
def test_a_failed_write_or_sync_stops_the_run(fails: str, tiny_claim: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Records are written as their trials return and synced on the driver's threads; the
    first write or fsync that fails is raised from the run (not lost on a thread), and every
    lock is released."""
    from rich.console import Console

    from grokverify.run.outcome import RunOptions
    from grokverify.run.pipeline import run_claims

    def broken(self: Store, *args: Any, **kwargs: Any) -> Path:
        raise StoreError("cannot write record: disk on fire")

    monkeypatch.setattr(Store, fails, broken)
    opts = RunOptions(store=tmp_path / "store", reports=tmp_path / "r", executor="local",
                      device="cpu", chunk_size=1)
    with pytest.raises(StoreError, match="disk on fire"):
        run_claims([load_claim(tiny_claim)], opts, Console(quiet=True))
    assert not list((tmp_path / "store" / "locks").glob("*.lock")), "locks released"


@pytest.mark.ray
def test_ray_runs_at_most_the_cap_of_tasks_at_once(tiny_claim: Path, tmp_path: Path) -> None:
    """RayExecutor's `task` seam runs a stand-in: each task notes how many tasks are running
    as it starts (files in a shared folder). Capped at one task in flight, a 2-CPU Ray runs
    them one at a time, every trial once, in order; uncapped, never more than its 2 slots."""
    from grokverify.run.execute import RayExecutor

    running = tmp_path / "running"
    running.mkdir()

    def stand_in(exp_json: dict[str, Any], seeds: list[int], device: str, threads: int,
                 expected: dict[str, str]) -> list[dict[str, Any]]:
        import os
        import time

        mine = running / f"{seeds[0]}-{os.getpid()}"
        mine.touch()
        seen = len(list(running.iterdir()))
        time.sleep(0.3)
        mine.unlink()
        return [{"seed": s, "seen": seen} for s in seeds]

    exp = _exp(tiny_claim, "quick")
    trials = [Trial("c", "", "a", exp, (s,), (f"k{s}",), ()) for s in range(6)]
    ex = RayExecutor(device="cpu", num_cpus=2, task=stand_in, max_in_flight=1)
    try:
        done: list[tuple[int, int]] = []
        ex.run(trials, lambda t, recs: done.extend((r["seed"], r["seen"]) for r in recs),
               lambda *_: None)
        assert done == [(s, 1) for s in range(6)]
        ex.max_in_flight = None  # the default: IN_FLIGHT_PER_SLOT a slot
        done.clear()
        ex.run(trials, lambda t, recs: done.extend((r["seed"], r["seen"]) for r in recs),
               lambda *_: None)
        assert sorted(s for s, _ in done) == list(range(6))
        assert max(seen for _, seen in done) <= 2
    finally:
        ex.close()


def test_an_interrupted_run_whose_fsync_fails_still_stops_as_interrupted(
        tiny_claim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a record's fsync fails: the run stops as interrupted (the CLI's exit 130),
    not as the store's error (exit 1), and the failed fsync is still said."""
    from rich.console import Console

    from grokverify.run.outcome import RunOptions
    from grokverify.run.pipeline import run_claims

    def broken_sync(self: Store, paths: list[Path]) -> None:
        raise StoreError("cannot sync record: disk on fire")

    real_put = Store.put

    def put_then_interrupt(self: Store, *args: Any, **kwargs: Any) -> Path:
        real_put(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Store, "sync", broken_sync)
    monkeypatch.setattr(Store, "put", put_then_interrupt)
    opts = RunOptions(store=tmp_path / "store", reports=tmp_path / "r", executor="local",
                      device="cpu", chunk_size=1)
    console = Console(record=True, width=200)
    with pytest.raises(KeyboardInterrupt):
        run_claims([load_claim(tiny_claim)], opts, console)
    assert "disk on fire" in console.export_text()
