"""Trials (grokverify.run.trials): seeds per chunk from the cost estimate, chunks of even size
with each seed once, and trials cut so that every slot has one (docs/cluster.md, "Work
sizing")."""

from __future__ import annotations

from pathlib import Path

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.load import load_claim
from grokverify.run.trials import (
    TASK_MIN_S,
    Trial,
    chunk_seeds,
    expected_seconds,
    pending_trials,
    plan_arms,
    shards,
    spread,
)
from grokverify.store import Store

CLAIMS = Path(__file__).parent.parent / "claims"


def _exp(path: Path, scale: str) -> ExperimentSpec:
    return next(exp for s, _, _, exp in load_claim(path).experiments([scale]) if s == scale)


def test_a_trial_trains_a_shard_a_cpu_thread_and_one_on_a_gpu() -> None:
    assert [shards("cpu", n) for n in (0, 1, 4)] == [1, 1, 4]
    assert shards("cuda", 4) == 1


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


def test_trials_are_cut_so_every_slot_has_one_when_the_seeds_allow(tiny_claim: Path) -> None:
    """`spread` halves the largest trial while there are fewer trials than slots; every seed
    stays in exactly one trial, with its own key."""
    exp = _exp(tiny_claim, "quick")
    one = Trial("c", "", "a", exp, tuple(range(10)), tuple(f"k{i}" for i in range(10)), ())
    two = Trial("c", "", "b", exp, (3,), ("j3",), ())
    for slots, sizes in ((1, [10, 1]), (2, [10, 1]), (3, [5, 5, 1]), (4, [5, 3, 2, 1]),
                         (64, [1] * 11)):
        got = spread([one, two], slots)
        assert sorted((len(t.seeds) for t in got), reverse=True) == sizes, slots
        pairs = sorted((s, k) for t in got for s, k in zip(t.seeds, t.keys, strict=True))
        assert pairs == sorted([*zip(one.seeds, one.keys, strict=True), (3, "j3")]), slots
