"""GPU packing (`--gpus-per-task auto`): each chunk asks Ray for the share of one GPU its memory
needs, so several chunks of these small models share a GPU, and a chunk no GPU can hold is
refused before anything is submitted. Tested on a local Ray that declares one GPU on a machine
without any: the stand-in task reports the GPU Ray gave it and when it ran (no CUDA needed)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grokverify.claim.budget import GPU_PACK, gpu_share
from grokverify.claim.load import load_claim
from grokverify.run.execute import ExecutionError, RayExecutor
from grokverify.run.trials import Trial, pending_trials, plan_arms
from grokverify.store import Store

pytestmark = pytest.mark.ray

TINY = Path(__file__).parent / "fixtures" / "tiny_claim.yaml"


def _stand_in(exp_json: dict[str, Any], seeds: list[int], device: str, threads: int,
              expected: dict[str, str], progress: Any = None) -> list[dict[str, Any]]:
    """Where and when the task ran, instead of training (a module function: pickled by value,
    since this test module is not importable in Ray's workers)."""
    import time

    import ray

    start = time.time()
    time.sleep(2.0)
    gpus = ray.get_runtime_context().get_accelerator_ids()["GPU"]
    return [{"seed": s, "gpus": list(gpus), "start": start, "end": time.time()} for s in seeds]


@pytest.fixture(scope="module")
def executor() -> Iterator[RayExecutor]:
    ex = RayExecutor(device="cuda", num_cpus=GPU_PACK, num_gpus=1, task=_stand_in)
    try:  # ray first imported by the executor (it reads its auth settings at import)
        from ray import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ex
    finally:
        ex.close()


def _trials(tmp_path: Path) -> list[Trial]:
    plans = plan_arms(load_claim(TINY), "quick", "cuda")
    return pending_trials("tiny", plans, Store(tmp_path), 1, "cuda")  # a trial a seed


def test_small_chunks_share_one_gpu(executor: RayExecutor, tmp_path: Path) -> None:
    trials = _trials(tmp_path)
    assert len(trials) == 6
    assert {executor.share(t) for t in trials} == {gpu_share(trials[0].experiment, 1)} == {
        1 / GPU_PACK}
    got: list[dict[str, Any]] = []
    executor.run(trials, lambda _t, recs: got.extend(recs), lambda *_: None)
    assert sorted(r["seed"] for r in got) == sorted(s for t in trials for s in t.seeds)
    assert {tuple(r["gpus"]) for r in got} == {("0",)}  # the one GPU, shared
    overlap = max(sum(1 for o in got if o["start"] < r["end"] and r["start"] < o["end"])
                  for r in got)
    assert overlap >= 3  # several chunks on the GPU at once (6 fit; the host has 2 cores)


def test_fixed_share_and_a_chunk_too_big_for_a_gpu(executor: RayExecutor,
                                                   tmp_path: Path) -> None:
    trials = _trials(tmp_path)
    executor.gpus_per_task = 0.5
    try:
        assert {executor.share(t) for t in trials} == {0.5}
    finally:
        executor.gpus_per_task = None
    memory = executor.gpu_memory
    executor.gpu_memory = 1 << 20  # 1 MiB: no chunk fits
    try:
        with pytest.raises(ExecutionError, match=r"more than one GPU's .* use a smaller "
                                                 r"--chunk-size"):
            executor.run(trials, lambda *_: pytest.fail("nothing may run"), lambda *_: None)
    finally:
        executor.gpu_memory = memory


def test_a_cpu_run_asks_for_no_gpu(tmp_path: Path) -> None:
    ex = RayExecutor.__new__(RayExecutor)
    ex.device, ex.gpus_per_task = "cpu", 0.5
    assert {ex.share(t) for t in _trials(tmp_path)} == {0.0}
