"""The seed-batched training loop (`grokverify.engine.loop`): a seed's record is the same to the
last bit in any chunk, shard or thread count; thresholds, the budget's evaluation and divergence;
and the trainer's plumbing (shards, threads, devices, malloc tuning, minibatch blocks), with
expected values worked out by hand from those rules."""

from __future__ import annotations

import ctypes
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
import torch
from conftest import ADD7, TOY6, Has, make_exp, records_by_seed

from grokverify.claim.experiment import ExperimentSpec, TrainingSpec
from grokverify.engine import loop, numerics
from grokverify.engine.fast import FAST_PATHS, FastPath
from grokverify.engine.loop import SeedTrainer, Shard, cpu_workers, run_to_budget, train_seeds

N_TRAIN = 29  # ADD7's training pairs
MLP = {"kind": "embed_mlp", "d": 8, "hidden": 16}
ADAMW = {"name": "adamw", "lr": 0.01}
SGD = {"name": "sgd", "lr": 0.1}  # no momentum, no weight decay: a zero gradient moves nothing
TRAIN = {"steps": 40, "eval_interval": 10, "batch_size": 8, "early_stop": False}
PROBES = [{"name": "sigma_max", "every": 5}, {"name": "grad_norm_ratio", "every": 10}]
CPU, META = torch.device("cpu"), torch.device("meta")

CASES = {
    "embed_mlp-adamw": (ADD7, MLP, {"name": "adamw", "lr": 0.01, "weight_decay": 0.5,
                                    "emb_lr_mult": 10}, {}),
    "embed_mlp-adam": (ADD7, MLP, {"name": "adam", "lr": 0.01, "weight_decay": 0.01}, {}),
    "embed_mlp-sgd": (ADD7, MLP, {"name": "sgd", "lr": 0.1, "momentum": 0.9,
                                  "weight_decay": 1e-3, "emb_lr_mult": 10}, {}),
    "scalar_mlp-adamw": (ADD7, {"kind": "scalar_mlp", "hidden": 16},
                         {"name": "adamw", "lr": 0.01}, {}),
    "toy-class": (TOY6, {"kind": "toy_sum", "hidden": 20},
                  {"name": "adamw", "lr": 1e-3, "emb_lr_mult": 10, "emb_weight_decay": 0}, {}),
    "toy-regression": (TOY6, {"kind": "toy_sum", "hidden": 20, "output": "regression"},
                       {"name": "adamw", "lr": 1e-3, "emb_lr_mult": 10}, {}),
    "toy-emb2-derived-probes": (TOY6, {"kind": "toy_sum", "hidden": 20, "emb_dim": 2},
                                {"name": "adam", "lr": 1e-2}, {"probes": PROBES}),
    "embed_mlp-probes-interventions": (
        ADD7, MLP, {"name": "adamw", "lr": 0.02, "weight_decay": 0.5},
        {"probes": PROBES, "interventions": [
            {"name": "rescale_embedding", "sigma_max": "W"},
            {"name": "freeze_embeddings", "when": {"curve": "train_acc", "at_least": 0.3}}]}),
}


def _case(case: str, training: dict | None = None, **extra: Any) -> ExperimentSpec:
    task, model, opt, sections = CASES[case]
    return make_exp(task, model, opt, training or TRAIN, **sections, **extra)


def _small(batch_size: int | None = 8, opt: dict | None = None, steps: int = 20,
           interval: int = 10) -> ExperimentSpec:
    return make_exp(ADD7, MLP, opt or ADAMW, {"steps": steps, "eval_interval": interval,
                                              "batch_size": batch_size, "early_stop": False})


@pytest.fixture
def threads() -> Any:
    """Set torch's thread count for a test; restored afterwards."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


# ------------------------------------------------------------ what training records


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_seed_is_bit_identical_to_seed_trained_alone(case: str, monkeypatch) -> None:
    """A seed's whole record (curves, probe curves, events, thresholds, summary) to the last bit
    in any chunk, alone, on any number of CPU shards, and again."""
    monkeypatch.setattr(loop, "_EVAL_ROWS", 5)  # evaluation in several blocks of rows
    exp = _case(case)
    batched = records_by_seed(exp, [0, 1, 2, 3], 2)  # two shards, [0, 1] and [2, 3]
    assert batched == records_by_seed(exp, [0, 1, 2, 3], 2)
    for seeds, threads in (([1], 2), ([2], 1), ([3, 0], 1), ([2, 1, 0], 3)):
        for seed, record in records_by_seed(exp, seeds, threads).items():
            assert record == batched[seed], (case, seeds, seed)
    assert batched[0]["curves"]["train_loss"] != batched[1]["curves"]["train_loss"]


def test_seeds_differ_and_training_learns() -> None:
    exp = make_exp(ADD7, MLP, CASES["embed_mlp-adamw"][2],
                   {"steps": 150, "eval_interval": 50, "batch_size": 8, "early_stop": False})
    a, b = train_seeds(exp, [0, 1])
    loss_a, loss_b = a["curves"]["train_loss"]["values"], b["curves"]["train_loss"]["values"]
    assert loss_a[0] != loss_b[0]  # own initialisation per seed
    assert loss_a[-1] < loss_a[0] / 2  # it trains
    assert a["curves"]["train_acc"]["values"][-1] > 0.8


def test_thresholds_are_met_at_equality_and_early_stop_freezes_the_record() -> None:
    """τ is reached when accuracy equals it (counts, not float32 means: 19/20 reaches 0.95), at
    an evaluation step; early stop freezes the record where both are reached."""
    exp = make_exp(ADD7, MLP, ADAMW, {"steps": 200, "eval_interval": 10, "train_threshold": 0.9,
                                      "val_threshold": 0.0, "early_stop": True})
    (res,) = train_seeds(exp, [0])
    summary, train_acc = res["summary"], res["curves"]["train_acc"]
    assert summary["val_step"] == 0  # threshold 0 is met at the initial evaluation
    first = next(s for s, acc in zip(train_acc["steps"], train_acc["values"], strict=True)
                 if acc >= 0.9)
    assert summary["train_step"] == first and first % 10 == 0
    assert summary["done"] and summary["stopped_step"] == first < 200
    assert train_acc["steps"][-1] == first  # nothing recorded after the freeze
    assert all(round(v * N_TRAIN) / N_TRAIN == v for v in train_acc["values"])  # exact counts


def test_an_evaluation_at_the_budget_when_it_is_not_a_multiple_of_the_interval() -> None:
    (res,) = train_seeds(_small(batch_size=None, steps=25), [0])
    assert res["curves"]["val_acc"]["steps"] == [0, 10, 20, 25]
    assert res["summary"]["stopped_step"] == 25


def test_diverging_seed_is_flagged_and_the_rest_of_its_batch_trains_on() -> None:
    """Seed 1's weights poisoned mid-run: diverged at that step, its curves and probe curves
    stop before it, and seeds 0 and 2 end exactly where they end trained without it."""
    exp = _case("embed_mlp-adamw", probes=[{"name": "sigma_max", "every": 5}])
    with SeedTrainer(exp, [0, 1, 2], workers=1) as trainer:
        trainer.record()
        for step in (10, 20, 30, 40):
            if step == 30:  # after 20 updates: the 21st step's loss is not finite
                with torch.no_grad():
                    trainer.shards[0].model.param("fc1.weight")[1].fill_(float("inf"))
            trainer.train(10)
            trainer.record()
        results = trainer.results()
    bad = results[1]["summary"]
    assert bad["diverged"] and bad["diverged_step"] == 21 and bad["stopped_step"] == 30
    assert results[1]["curves"]["train_loss"]["steps"] == [0, 10, 20]
    assert results[1]["curves"]["sigma_max.W"]["steps"] == [0, 5, 10, 15, 20]
    for i in (0, 2):
        alone = train_seeds(exp, [i])[0]
        assert not results[i]["summary"]["diverged"]
        np.testing.assert_array_equal(results[i]["curves"]["train_loss"]["values"],
                                      alone["curves"]["train_loss"]["values"])
        assert all(math.isfinite(x) for x in results[i]["curves"]["train_loss"]["values"])


def test_absurd_learning_rate_diverges_every_seed() -> None:
    wild = make_exp(ADD7, MLP, {"name": "sgd", "lr": 1e8, "momentum": 0.9}, TRAIN)
    for res in train_seeds(wild, [0, 1]):
        summary = res["summary"]
        assert summary["diverged"] and summary["val_step"] is None
        assert summary["diverged_step"] is not None and summary["diverged_step"] <= TRAIN["steps"]


# ------------------------------------------------------------ _keep_freed_memory


class _FakeLibc:
    """Stands in for `ctypes.CDLL`: records the library asked for and every mallopt call."""

    opened: list[Any] = []
    calls: list[tuple[Any, ...]] = []

    def __init__(self, name: Any) -> None:
        _FakeLibc.opened.append(name)

    def mallopt(self, param: int, value: int) -> int:
        _FakeLibc.calls.append((param, value))
        return 1


@pytest.fixture
def fake_libc(monkeypatch: pytest.MonkeyPatch) -> type[_FakeLibc]:
    monkeypatch.setattr(loop, "_MALLOC_TUNED", False)
    monkeypatch.setattr(ctypes, "CDLL", _FakeLibc)
    _FakeLibc.opened, _FakeLibc.calls = [], []
    return _FakeLibc


def test_malloc_is_tuned_once_per_process_with_glibcs_two_thresholds(
        fake_libc: type[_FakeLibc]) -> None:
    """glibc by its soname; M_TRIM_THRESHOLD (-1) = 2^30 bytes, then M_MMAP_THRESHOLD (-3) =
    2^25 bytes; a second call does nothing."""
    loop._keep_freed_memory()
    assert fake_libc.opened == ["libc.so.6"]
    assert fake_libc.calls == [(-1, 1073741824), (-3, 33554432)]
    assert loop._MALLOC_TUNED is True
    loop._keep_freed_memory()
    assert fake_libc.opened == ["libc.so.6"]
    assert len(fake_libc.calls) == 2


@pytest.mark.parametrize("error", [OSError, AttributeError])
def test_without_glibc_the_tuning_is_skipped_quietly(monkeypatch: pytest.MonkeyPatch,
                                                     error: type[Exception]) -> None:
    """No libc.so.6 (OSError) or one without mallopt (AttributeError): nothing raised, and no
    second attempt."""
    tries: list[Any] = []

    def missing(name: Any) -> Any:
        tries.append(name)
        raise error(name)

    monkeypatch.setattr(loop, "_MALLOC_TUNED", False)
    monkeypatch.setattr(ctypes, "CDLL", missing)
    loop._keep_freed_memory()
    loop._keep_freed_memory()
    assert tries == ["libc.so.6"] and loop._MALLOC_TUNED is True


def test_a_cpu_trainer_pins_the_kernels_and_tunes_malloc_another_device_does_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(numerics, "pin", lambda: seen.append("pin"))
    monkeypatch.setattr(loop, "_keep_freed_memory", lambda: seen.append("malloc"))
    with SeedTrainer(_small(), [0, 1], "cpu", workers=1):
        assert seen == ["pin", "malloc"]
    seen.clear()
    with SeedTrainer(_small(), [0, 1], "meta", workers=1):
        assert seen == []


# ------------------------------------------------------------ workers and threads


def test_cpu_workers_one_per_thread_up_to_the_seeds_and_one_off_the_cpu(threads: Any) -> None:
    threads(3)
    assert cpu_workers(CPU, 10) == 3
    assert cpu_workers(CPU, 2) == 2
    assert cpu_workers(CPU, 1) == 1
    assert cpu_workers(CPU, 0) == 1
    assert cpu_workers(META, 10) == 1
    assert cpu_workers(torch.device("cuda"), 10) == 1  # the device object needs no GPU
    threads(1)
    assert cpu_workers(CPU, 10) == 1


def _shard_seeds(trainer: SeedTrainer) -> list[list[int]]:
    return [[rec.seed for rec in shard.records[:shard.n_real]] for shard in trainer.shards]


def test_workers_overrides_the_thread_count(threads: Any) -> None:
    """Three torch threads would make three shards of [0, 1, 2]; `workers` decides instead
    (np.array_split: 2 -> [0, 1], [2]; 0 counts as 1)."""
    threads(3)
    exp = _small()
    with SeedTrainer(exp, [0, 1, 2]) as trainer:
        assert _shard_seeds(trainer) == [[0], [1], [2]]
    for workers, want in ((1, [[0, 1, 2]]), (0, [[0, 1, 2]]), (2, [[0, 1], [2]])):
        with SeedTrainer(exp, [0, 1, 2], workers=workers) as trainer:
            assert _shard_seeds(trainer) == want, workers
    assert torch.get_num_threads() == 3  # restored on close
    with SeedTrainer(exp, [0, 1, 2], "meta") as trainer:  # one shard off the CPU
        assert _shard_seeds(trainer) == [[0, 1, 2]]


def test_two_shards_train_side_by_side_single_threaded(monkeypatch: pytest.MonkeyPatch,
                                                       threads: Any) -> None:
    """Both shards inside `train` at once (a barrier a serial loop never passes), on worker
    threads, torch at one thread; the pool has one worker per shard."""
    threads(2)
    pools: list[tuple[Any, ...]] = []

    class Pool(ThreadPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pools.append((args[0] if args else kwargs.get("max_workers"),
                          kwargs.get("initializer"), kwargs.get("initargs")))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(loop, "ThreadPoolExecutor", Pool)
    barrier = threading.Barrier(2, timeout=5)
    inside: list[tuple[bool, int]] = []
    real_train = Shard.train

    def train(shard: Shard, n: int) -> None:
        barrier.wait()
        inside.append((threading.current_thread() is threading.main_thread(),
                       torch.get_num_threads()))
        real_train(shard, n)

    monkeypatch.setattr(Shard, "train", train)
    with SeedTrainer(_small(), [0, 1, 2, 3], workers=2) as trainer:
        trainer.train(1)
    assert inside == [(False, 1), (False, 1)]
    assert pools == [(2, torch.set_num_threads, (1,))]


def test_worker_threads_run_single_threaded_off_the_cpu_too(monkeypatch: pytest.MonkeyPatch,
                                                            threads: Any) -> None:
    """Off the CPU torch's thread count is left alone, but a pool of workers (asked for) sets it
    to 1 before building the shards; close restores it."""
    threads(3)
    seen: list[int] = []

    class Spy(Shard):
        def __init__(self, *args: Any) -> None:
            seen.append(torch.get_num_threads())
            super().__init__(*args)

    monkeypatch.setattr(loop, "Shard", Spy)
    with SeedTrainer(_small(), [0, 1], "meta"):
        assert seen == [3]
    seen.clear()
    with SeedTrainer(_small(), [0, 1], "meta", workers=2):
        assert seen == [1, 1]
    assert torch.get_num_threads() == 3


def test_close_twice_is_harmless(threads: Any) -> None:
    """`close`, then the with-block's exit closes again; the trainer still trains, serially."""
    threads(2)
    with SeedTrainer(_small(steps=2, interval=1), [0, 1], workers=2) as trainer:
        trainer.close()
        trainer.close()
        assert torch.get_num_threads() == 2
        trainer.train(1)
        assert trainer.record() is False
    assert [r["summary"]["stopped_step"] for r in trainer.results()] == [1, 1]


# ------------------------------------------------------------ a shard's tensors and weights


def test_a_shard_puts_everything_on_its_device() -> None:
    """On "meta" (shapes only, no accelerator needed): data, model, seed index, loss weights."""
    shard = Shard(_small(), [0, 1, 2], META)
    assert {t.device for t in shard.data.train + shard.data.val} == {META}
    assert {p.device for p in shard.model.parameters()} == {META}
    assert shard.seed_index.device == META and shard.loss_weight.device == META
    assert shard.seed_index.shape == (3, 1)


def test_the_loss_weights_follow_the_models_dtype() -> None:
    for dtype in (torch.float64, torch.float32):
        shard = Shard(_small(), [0, 1], CPU, dtype=dtype)
        assert shard.loss_weight.dtype == dtype
        assert {p.dtype for p in shard.model.parameters()} == {dtype}


def test_the_fast_path_is_on_by_default_and_off_on_request() -> None:
    assert Shard(_small(), [0], META).model.fast_path is FAST_PATHS["embed_mlp"]
    assert Shard(_small(), [0], META, fast=True).model.fast_path is FAST_PATHS["embed_mlp"]
    assert Shard(_small(), [0], META, fast=False).model.fast_path == FastPath()


@pytest.mark.parametrize(("batch_size", "full", "batch"),
                         [(None, True, N_TRAIN), (N_TRAIN + 5, True, N_TRAIN),
                          (N_TRAIN, True, N_TRAIN), (N_TRAIN - 1, False, N_TRAIN - 1)])
def test_a_batch_of_all_training_pairs_is_full_batch(batch_size: int | None, full: bool,
                                                     batch: int) -> None:
    """batch_size >= the 29 training pairs: full batch, no sampler (rows in their order)."""
    shard = Shard(_small(batch_size=batch_size), [0, 1], CPU)
    assert shard.data.n_train == N_TRAIN
    assert (shard.batches is None) is full and shard.batch == batch


def test_the_ghost_of_a_lone_seed_never_trains() -> None:
    """A lone seed trains beside a ghost copy of itself at weight 0: under plain SGD the ghost
    stays at the initialisation while the real seed moves."""
    shard = Shard(_small(opt=SGD), [4], CPU)
    assert shard.n_real == 1 and shard.loss_weight.tolist() == [1.0, 0.0]
    start = {k: v.detach().clone() for k, v in shard.model.params().items()}
    torch.testing.assert_close(start["fc1.weight"][0], start["fc1.weight"][1], rtol=0, atol=0)
    shard.train(5)
    after = shard.model.params()
    for name, value in start.items():
        assert torch.equal(after[name][1], value[1]), name
    assert not torch.equal(after["fc1.weight"][0], start["fc1.weight"][0])


def test_a_diverged_seed_leaves_the_training_sum() -> None:
    """Seed 1 of [0, 1, 2] poisoned: at the next evaluation its loss weight becomes 0 (the others
    keep 1) and it is recorded as diverged."""
    shard = Shard(_small(opt=SGD), [0, 1, 2], CPU)
    shard.record()
    shard.train(2)
    with torch.no_grad():
        shard.model.param("fc1.weight")[1].fill_(float("inf"))
    shard.train(1)
    assert shard.record() is False
    assert shard.loss_weight.tolist() == [1.0, 0.0, 1.0]
    assert [r["summary"]["diverged_step"] for r in shard.results()] == [None, 3, None]


# ------------------------------------------------------------ minibatch blocks


def _takes(monkeypatch: pytest.MonkeyPatch, elements: int, n_steps: int) -> tuple[list, Any]:
    """The step counts of each `take` while a 2-seed shard (batch 8) trains n_steps steps with
    `_BLOCK_ELEMENTS` = elements, and its parameters afterwards."""
    monkeypatch.setattr(loop, "_BLOCK_ELEMENTS", elements)
    shard = Shard(_small(), [0, 1], CPU)
    asked: list[Any] = []
    take = shard.batches.take  # type: ignore[union-attr]

    def spy(n: Any) -> Any:
        asked.append(n)
        return take(n)

    monkeypatch.setattr(shard.batches, "take", spy)
    shard.train(n_steps)
    return asked, {k: v.detach().clone() for k, v in shard.model.params().items()}


def test_minibatch_operands_are_gathered_a_block_of_steps_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A step gathers 3 operands x 2 seeds x 8 rows = 48 elements: 100 allow 2 steps a block
    (5 steps: 2, 2, 1), 40 still 1, 2^21 all 5 at once; the parameters are the same in any
    blocking (the positions are one stream per seed)."""
    asked, params = _takes(monkeypatch, 100, 5)
    assert asked == [2, 2, 1] and all(type(n) is int for n in asked)
    asked_one, params_one = _takes(monkeypatch, 40, 5)
    assert asked_one == [1, 1, 1, 1, 1]
    asked_all, params_all = _takes(monkeypatch, 1 << 21, 5)
    assert asked_all == [5]
    for name, value in params.items():
        assert torch.equal(value, params_one[name]) and torch.equal(value, params_all[name])


# ------------------------------------------------------------ run_to_budget and train_seeds


class _Script:
    """A trainer that trains nothing: logs train(n) and record(), finished at a given record."""

    def __init__(self, finish_at: int | None = None) -> None:
        self.log: list[Any] = []
        self.finish_at = finish_at

    def train(self, n: int) -> None:
        self.log.append(n)

    def record(self) -> bool:
        self.log.append("record")
        return self.log.count("record") == self.finish_at


def test_run_to_budget_reports_progress_against_the_budget() -> None:
    """Budget 25, interval 10: chunks 10, 10, 5, an evaluation after each (and at 0), progress
    (step, budget) after each chunk."""
    trainer, progress = _Script(), []
    tr = TrainingSpec(steps=25, eval_interval=10)
    run_to_budget(trainer, tr, lambda step, total: progress.append((step, total)))
    assert trainer.log == ["record", 10, "record", 10, "record", 5, "record"]
    assert progress == [(10, 25), (20, 25), (25, 25)]
    early = _Script(finish_at=2)  # every seed done at the evaluation of step 10
    run_to_budget(early, tr, lambda step, total: progress.append((step, total)))
    assert early.log == ["record", 10, "record"] and progress[3:] == [(10, 25)]


def test_train_seeds_hands_on_device_fast_and_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trainer is built on the caller's device with the caller's fast flag and driven with
    the caller's progress function; the results come back in the order of the seeds."""
    seen: dict[str, Any] = {}

    def drive(trainer: SeedTrainer, tr: TrainingSpec, progress: Any = "missing") -> None:
        seen["devices"] = {p.device for s in trainer.shards for p in s.model.parameters()}
        seen["fast"] = [s.model.fast_path for s in trainer.shards]
        seen["tr"], seen["progress"] = tr, progress

    def report(step: int, total: int) -> None:
        pass

    monkeypatch.setattr(loop, "run_to_budget", drive)
    exp = _small()
    out = train_seeds(exp, [3, 1], "meta", report, fast=False)
    assert seen == {"devices": {META}, "fast": [FastPath()], "tr": exp.training,
                    "progress": report}
    assert [r["seed"] for r in out] == [3, 1]


def test_train_seeds_reports_progress_of_a_real_run() -> None:
    calls: list[tuple[int, int]] = []
    out = train_seeds(_small(batch_size=None, steps=4, interval=2), [0],
                      progress=lambda step, total: calls.append((step, total)))
    assert calls == [(2, 4), (4, 4)]
    assert out[0]["curves"]["train_loss"]["steps"] == [0, 2, 4]


def test_a_probe_returning_other_curves_than_its_spec_declares_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    exp = _case("embed_mlp-adamw", probes=[{"name": "sigma_max", "every": 5}])
    monkeypatch.setattr(loop.PROBES, "of", lambda spec: lambda *_: {"bogus": torch.zeros(1)})
    declared = sorted(exp.probes[0].curves())
    with pytest.raises(RuntimeError) as err:
        records_by_seed(exp, [0])
    assert str(err.value) == Has("probe sigma_max returned curves ['bogus']",
                                 f"its spec declares {declared}")
