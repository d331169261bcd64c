"""Executors: run trials in-process or as Ray tasks (one task = one chunk of seeds of one arm).

Records are stored by the driver as each trial finishes, so an interrupted run keeps every chunk
that completed. Ray is started only when there is something to train.
"""

from __future__ import annotations

import os
import platform
import secrets
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from grokverify.claim.budget import DEFAULT_GPU_MEMORY, GIB, GPU_PACK, gpu_share
from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine import numerics
from grokverify.engine.datasets import ENV_VAR as DATA_ENV_VAR
from grokverify.engine.version import RESULTS_VERSION
from grokverify.run.trials import Trial
from grokverify.store import code_version, key_inputs, process_part

ProgressFn = Callable[[int, int], None]
OnDone = Callable[[Trial, list[dict[str, Any]]], None]
OnProgress = Callable[[int, int], None]  # (seed-steps done, running trials)
# What a Ray task runs: `run_trial`'s arguments (experiment JSON, seeds, device, threads, the
# keys' process part, a progress callback) -> one record per seed. A seam for
# benchmarks/scale_sim.py's stand-in.
TrialFn = Callable[[dict[str, Any], list[int], str, int, dict[str, str], ProgressFn | None],
                   list[dict[str, Any]]]

# Tasks submitted and not yet returned, per slot: one running and one queued behind it, so a
# slot never idles while the driver stores the last result, and a driver restart loses no more
# (docs/cluster.md, "Work sizing"; benchmarks/scale_sim.py measures the choice).
IN_FLIGHT_PER_SLOT = 2
SLOTS_REFRESH_S = 10.0  # how often a run re-reads the cluster's size (an autoscaler grows it)
# How often a running task tells the driver its step, and the driver reads them: an hour-long
# trial's progress and ETA move while it trains, for one small actor call every few seconds.
PROGRESS_EVERY_S = 5.0


class ExecutionError(RuntimeError):
    """A run that cannot proceed (no cluster, missing resources); the CLI reports it, exit 1."""


def device_name(device: str) -> str:
    """The GPU's or the CPU's model, for a report to say what its records were trained on."""
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return cpu_name()


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name where Linux gives one; else the platform's word for it."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_trial(exp_json: dict[str, Any], seeds: list[int], device: str, threads: int,
              expected: dict[str, str], progress: ProgressFn | None = None,
              ) -> list[dict[str, Any]]:
    """Train one chunk and return one store record per seed (in a worker or in-process). A
    worker whose process part of the keys (`store.process_part`) differs from the driver's
    `expected` refuses before training: its records would not hash to their keys."""
    import torch

    from grokverify.engine.loop import train_seeds

    torch.set_num_threads(threads)  # a reused Ray worker keeps the count torch first chose
    exp = ExperimentSpec.model_validate(exp_json)
    device_type = torch.device(device).type
    if device_type == "cpu":
        numerics.pin()
    got = process_part(exp, device_type)
    if got != expected:
        differ = ", ".join(f"{k}: {got.get(k)!r} here, {v!r} in the run's keys"
                           for k, v in expected.items() if got.get(k) != v)
        raise RuntimeError(
            f"this worker cannot write the run's records ({differ}); give the driver and every "
            f"worker the same torch, grokverify, GROKVERIFY_NUMERICS and data files "
            f"(docs/store.md)")
    start = time.perf_counter()
    results = train_seeds(exp, seeds, device, progress)
    wall = time.perf_counter() - start
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    common = {
        "experiment": exp.model_dump(mode="json"), "results_version": RESULTS_VERSION,
        "code_version": code_version(), "device": device_type,
        "device_name": device_name(device), "torch": torch.__version__,
        "numerics": {"tag": got["numerics"], **(
            numerics.describe() if device_type == "cpu" else {})},
        "host": platform.node(), "threads": threads, "chunk_seeds": list(seeds),
        "chunk_wall_s": round(wall, 3), "created": created,
    }
    return [{**common, "seed": r["seed"], "key_inputs": key_inputs(exp, r["seed"], device_type),
             "result": r} for r in results]


class Executor(Protocol):
    device: str

    def describe(self) -> str: ...

    def slots(self) -> int:
        """Trials it runs side by side."""
        ...

    def run(self, trials: list[Trial], on_done: OnDone, on_progress: OnProgress) -> None: ...

    def close(self) -> None: ...


@dataclass
class LocalExecutor:
    """In-process, one trial after another (unit tests, debugging, single-core runs)."""

    device: str = "cpu"
    threads: int = 1

    def describe(self) -> str:
        return f"this process ({self.threads} thread(s)), device {self.device}"

    def slots(self) -> int:
        return 1

    def run(self, trials: list[Trial], on_done: OnDone, on_progress: OnProgress) -> None:
        """As Ray's: a trial that raises is reported against its arm and seeds once the others
        have run and been stored (an interrupt still stops everything at once)."""
        done = 0
        failed: list[str] = []
        for trial in trials:
            n = len(trial.seeds)

            def tick(step: int, _total: int, base: int = done, n: int = n) -> None:
                on_progress(base + step * n, 1)

            try:
                records = run_trial(trial.experiment.model_dump(mode="json"),
                                    list(trial.seeds), self.device, self.threads,
                                    dict(trial.environment), tick)
            except Exception as exc:  # noqa: BLE001 - named per arm below; the rest goes on
                failed.append(f"{trial.claim_id}: arm {trial.label}, seeds {list(trial.seeds)} "
                              f"failed: {type(exc).__name__}: {exc}")
                continue
            finally:
                done += trial.seed_steps
            on_done(trial, records)
            on_progress(done, 0)
        if failed:
            raise ExecutionError("; ".join(failed))

    def close(self) -> None:
        pass


class ProgressBoard:
    """A Ray actor (no CPU) holding each running task's last reported step, so the driver's
    progress counts the steps of trials not yet returned."""

    def __init__(self) -> None:
        self.steps: dict[int, int] = {}

    def put(self, token: int, step: int) -> None:
        self.steps[token] = step

    def read(self) -> dict[int, int]:
        return dict(self.steps)


@dataclass
class BoardReport:
    """A task's progress callback: sends its step to the board at most every `every` seconds
    (pickled into the task; a Ray actor handle travels with it)."""

    board: Any
    token: int
    every: float = PROGRESS_EVERY_S
    last: float = float("-inf")

    def __call__(self, step: int, _total: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self.board.put.remote(self.token, step)


def _host_port(address: str) -> tuple[str, str]:
    """host:port or ray://host:port -> (host, port), as written."""
    host, _, port = address.split("://", 1)[-1].rstrip("/").rpartition(":")
    return host, port


def address_problem(address: str) -> str | None:
    """What is wrong with an --address value, or None: checked before anything starts, so a
    malformed address is an argument error (exit 2), not a failed run."""
    if address == "auto":
        return None
    host, port = _host_port(address)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"--address {address!r}: expected host:port or ray://host:port (or auto)"
    return None


def _env_address() -> str | None:
    """RAY_ADDRESS, as Ray reads it (set and not empty)."""
    return os.environ.get("RAY_ADDRESS") or None


def _check_reachable(address: str, timeout: float = 3.0) -> None:
    """A dead address makes ray.init hang for minutes; a plain TCP connect fails in seconds.
    `auto` is checked as RAY_ADDRESS when that is set (ray.init then goes there); otherwise
    Ray looks for a cluster started on this host with `ray start` and fails at once if none."""
    source = ""
    if address == "auto":
        if _env_address() is None:
            return
        address, source = str(_env_address()), " (from RAY_ADDRESS)"
    problem = address_problem(address)
    if problem:
        raise ExecutionError(problem.replace("--address", "RAY_ADDRESS") if source else problem)
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise ExecutionError(f"cannot reach Ray at {address}{source} ({exc}); is the cluster "
                             f"up?") from None


class RayExecutor:
    """Local Ray started on the fly (default) or an existing cluster (`address`). `task` is
    what each Ray task runs (default `run_trial`; a benchmark's stand-in), `max_in_flight` the
    most tasks submitted and not yet returned (default IN_FLIGHT_PER_SLOT a slot)."""

    def __init__(self, address: str | None = None, device: str = "cpu", cpus_per_task: int = 1,
                 gpus_per_task: float | None = None, num_cpus: int | None = None,
                 gpu_memory_gib: float | None = None, num_gpus: int | None = None,
                 task: TrialFn | None = None, max_in_flight: int | None = None):
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if address is None:
            # Embedded start: token auth via the environment (no file, no warning; Ray reads it
            # at import), a short temp dir (socket paths <= 107 bytes), a small object store.
            os.environ["RAY_AUTH_MODE"] = "token"
            os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(16))
        import ray

        self.ray, self.device, self.cpus_per_task = ray, device, cpus_per_task
        # a fixed share of one GPU per task, or None: each chunk's own (`share`)
        self.gpus_per_task = gpus_per_task
        self.gpu_memory = int(gpu_memory_gib * GIB) if gpu_memory_gib else DEFAULT_GPU_MEMORY
        self.address = address
        self.task: TrialFn = task or run_trial
        self.max_in_flight = max_in_flight
        self.progress_every = PROGRESS_EVERY_S
        self._tmp: str | None = None
        try:  # a signal or error while Ray starts must still shut down what did start
            with _sigterm_held():
                if address is None:
                    self._tmp = tempfile.mkdtemp(prefix="gv-ray-", dir="/tmp")
                    # num_gpus: what the local Ray declares (default: the GPUs it detects;
                    # tests declare some on a machine without one)
                    ray.init(address="local", num_cpus=num_cpus or os.cpu_count(),
                             num_gpus=num_gpus,
                             object_store_memory=256 * 1024**2, include_dashboard=False,
                             _temp_dir=self._tmp, log_to_driver=False, logging_level="ERROR")
                else:
                    _check_reachable(address)
                    # a local Ray's workers inherit the data folder; a cluster's are told it
                    data = {k: os.environ[k] for k in (DATA_ENV_VAR,) if os.environ.get(k)}
                    ray.init(address=address, log_to_driver=False, logging_level="ERROR",
                             runtime_env={"env_vars": data} if data else None)
            self._check_resources()
        except BaseException:
            self.close()
            raise

    def describe(self) -> str:
        """Where trials run, as the cluster reports it (said only once Ray is up)."""
        have = self.ray.cluster_resources()
        if self.address is None:
            where = "a local Ray"
        elif self.address != "auto":
            where = f"the Ray cluster at {self.address}"
        elif _env_address():
            where = f"the Ray cluster at {_env_address()} (RAY_ADDRESS)"
        else:  # Ray found it: a `ray start` on this host
            where = f"the Ray cluster at {self.ray.get_runtime_context().gcs_address} (auto)"
        line = (f"{where} ({have.get('CPU', 0):g} CPU, {have.get('GPU', 0):g} GPU), "
                f"device {self.device}")
        if self.device.startswith("cuda"):
            line += (f", {self.gpus_per_task:g} GPU a trial" if self.gpus_per_task is not None
                     else f", each trial the share of a {self.gpu_memory / GIB:g} GiB GPU its "
                          f"memory needs (eighths, at least 1/{GPU_PACK})")
        if self.address is None and _env_address():  # the default never follows it
            line += f"; RAY_ADDRESS={_env_address()} is not used: --address auto uses it"
        return line

    def share(self, trial: Trial) -> float:
        """The GPUs one trial's task asks for: none on a CPU; `--gpus-per-task` when given;
        else the chunk's share of one GPU by its estimated memory (`budget.gpu_share`: up to
        GPU_PACK chunks on one GPU)."""
        if not self.device.startswith("cuda"):
            return 0.0
        if self.gpus_per_task is not None:
            return self.gpus_per_task
        return gpu_share(trial.experiment, len(trial.seeds), self.gpu_memory)

    def _check_resources(self) -> None:
        """A task asking for more than any node has waits forever, silently: refuse now (a
        chunk's GPU share is checked against one GPU in `run`, before anything is submitted)."""
        have = self.ray.cluster_resources()
        least_gpu = 1 / GPU_PACK if self.gpus_per_task is None else self.gpus_per_task
        wants = {"CPU": float(self.cpus_per_task),
                 "GPU": least_gpu if self.device.startswith("cuda") else 0.0}
        for name, amount in wants.items():
            if amount > 0 and have.get(name, 0.0) < amount:
                raise ExecutionError(
                    f"each trial asks for {amount:g} {name}, but the Ray cluster has "
                    f"{have.get(name, 0.0):g}; use --device cpu or a cluster with {name}s")

    def run(self, trials: list[Trial], on_done: OnDone, on_progress: OnProgress) -> None:
        """Submit trials while fewer than the cap are in flight and store each result as it
        returns (`on_done`, in the driver). A task that raises is reported against its arm once
        the rest are done; a killed worker's is retried; an interrupt cancels those in flight."""
        ray = self.ray
        shares = {id(t): self.share(t) for t in trials}
        too_big = [t for t in trials if shares[id(t)] > 1]
        if too_big:  # a task asking for more than one GPU would wait forever
            t = too_big[0]
            raise ExecutionError(
                f"{t.claim_id}: a chunk of {len(t.seeds)} seeds of arm {t.label} needs about "
                f"{shares[id(t)] * self.gpu_memory / GIB:.3g} GiB of GPU memory with its CUDA "
                f"context, more than one GPU's {self.gpu_memory / GIB:g} GiB (--gpu-memory); "
                f"use a smaller --chunk-size")
        remote = ray.remote(self.task)
        by_share: dict[float, Any] = {}  # the task with its options, one per GPU share
        queue = deque(trials)
        pending: dict[Any, Trial] = {}
        tokens: dict[Any, int] = {}  # a pending task's name on the progress board
        exp_json: dict[int, dict[str, Any]] = {}  # one JSON per experiment, not per trial
        slots, slots_at = self.slots(), time.monotonic()
        done_steps = 0
        failed: list[str] = []
        board = ray.remote(num_cpus=0)(ProgressBoard).remote()
        steps: dict[int, int] = {}
        read_at = time.monotonic()
        try:
            while queue or pending:
                if time.monotonic() - slots_at > SLOTS_REFRESH_S:
                    slots, slots_at = self.slots(), time.monotonic()
                cap = self.max_in_flight or IN_FLIGHT_PER_SLOT * slots
                while queue and len(pending) < cap:
                    t = queue.popleft()
                    spec = exp_json.get(id(t.experiment))
                    if spec is None:
                        spec = exp_json[id(t.experiment)] = t.experiment.model_dump(mode="json")
                    share = shares[id(t)]
                    if share not in by_share:
                        by_share[share] = remote.options(num_cpus=self.cpus_per_task,
                                                         num_gpus=share, max_retries=2)
                    token = len(tokens)
                    ref = by_share[share].remote(spec, list(t.seeds), self.device,
                                                 self.cpus_per_task, dict(t.environment),
                                                 BoardReport(board, token, self.progress_every))
                    pending[ref], tokens[ref] = t, token
                with _unwrapped_signals():
                    ready, rest = ray.wait(list(pending), num_returns=1, timeout=1.0)
                    if ready and rest:  # take every result that is in, not one a wait
                        more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                        ready += more
                for ref in ready:
                    trial = pending.pop(ref)
                    try:
                        records = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        # the other trials run on and are stored: one bad arm costs only itself
                        failed.append(f"{trial.claim_id}: arm {trial.label}, seeds "
                                      f"{list(trial.seeds)} failed on Ray: {_task_error(exc)}")
                        continue
                    on_done(trial, records)
                    done_steps += trial.seed_steps
                if time.monotonic() - read_at >= self.progress_every:
                    steps = self._read_board(board, steps)
                    read_at = time.monotonic()
                running = sum(steps.get(tokens[ref], 0) * len(t.seeds)
                              for ref, t in pending.items())
                on_progress(done_steps + running, min(len(pending), slots))
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        finally:
            ray.kill(board)
        if failed:
            raise ExecutionError("; ".join(failed))

    def _read_board(self, board: Any, steps: dict[int, int]) -> dict[int, int]:
        """Every task's last reported step (only pending tasks' are summed); the last ones read
        (`steps`) when the board is slow to answer: progress is a display and must never hold
        up storing results."""
        with suppress(self.ray.exceptions.GetTimeoutError):
            steps = self.ray.get(board.read.remote(), timeout=2.0)
        return steps

    def slots(self) -> int:
        cpus = self.ray.cluster_resources().get("CPU", 1.0)
        return max(1, int(cpus // self.cpus_per_task))

    def close(self) -> None:
        if self.ray.is_initialized():
            self.ray.shutdown()
        if self._tmp is not None:  # the session folder of the Ray this run started
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _task_error(exc: BaseException) -> str:
    """A task's own exception in one line (`RayTaskError.cause`), not Ray's remote traceback;
    Ray's own errors (a worker that died more often than `max_retries`) as Ray words them."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


@contextmanager
def _unwrapped_signals() -> Iterator[None]:
    """A signal handler's exception (Ctrl-C's KeyboardInterrupt, the CLI's SIGTERM) raised while
    Ray's Cython wait runs comes out as a SystemError caused by it: re-raise the cause."""
    try:
        yield
    except SystemError as exc:
        cause = exc.__cause__
        if isinstance(cause, BaseException) and not isinstance(cause, Exception):
            raise cause from None
        raise


@contextmanager
def _sigterm_held() -> Iterator[None]:
    """Hold SIGTERM while Ray starts, then put back the CLI's handler and let a held signal
    through to it: ray.init installs SIGTERM handlers of its own (one exits 15, one prints a C
    stack and aborts, exit 134), and SIGTERM must always end a run the same clean way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        if before is not None:
            signal.signal(signal.SIGTERM, before)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def resolve_device(requested: str) -> str:
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise ExecutionError("--device cuda requested but torch sees no CUDA device here")
    return requested


EXECUTORS: dict[str, type[LocalExecutor] | type[RayExecutor]] = {
    "local": LocalExecutor,
    "ray": RayExecutor,
}
