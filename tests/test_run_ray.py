"""The Ray executor (grokverify.run.execute.RayExecutor): a run on a local Ray gives the local
executor's verdict, the cap on tasks in flight holds, and `grokverify run` against a real Ray
head (`ray start --head`) survives faults: a killed worker, a task that raises, Ctrl-C, a
killed driver.

One head serves the module: its own temp dir under /tmp (socket paths <= 107 bytes), its own
free ports, 2 CPUs, token auth with a token of its own (given to the CLI through the
environment, as a cluster's users would). It is stopped through its own processes: its process
group, then any process that carries its marker in its environment (Ray workers sit in process
groups of their own); never `ray stop`, which would end every Ray on the host.

Faults are injected from outside the product: the head's processes have tests/ray_hook on
PYTHONPATH, whose sitecustomize.py wraps `train_seeds` in its workers to write each task's pid
(so a test can kill it) and to raise for the arm that `raise.json` names.

The CLI runs as a subprocess, as users run it: each run is a fresh Ray driver with its own
environment (RAY_ADDRESS, token), and signals reach it as they would from a terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import console_script, default_sigint
from rich.console import Console

from grokverify.claim.load import load_claim
from grokverify.cli import main
from grokverify.run.execute import ExecutionError, RayExecutor
from grokverify.run.outcome import RunOptions
from grokverify.run.pipeline import run_claims
from grokverify.run.trials import Trial
from grokverify.store import Store

pytestmark = pytest.mark.ray

TESTS = Path(__file__).resolve().parent
TINY = TESTS / "fixtures" / "tiny_claim.yaml"
HOOK = TESTS / "ray_hook"
MARKER = "GV_TEST_HEAD"  # in the environment of every process of the test head
BIN = Path(sys.executable).parent
QUIET = Console(quiet=True)


def _free_ports(n: int) -> list[int]:
    """Ports free now (bound together, so distinct), for the head's listeners."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _pids_with(marker: str) -> list[int]:
    """Processes whose environment holds `marker` (this head's, whatever their group)."""
    needle = marker.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False


@dataclass
class Head:
    """A running test head: where it listens, how to reach it, where its faults are set."""

    address: str
    tmp: Path
    token: str
    proc: subprocess.Popen[bytes]

    @property
    def faults(self) -> Path:
        return self.tmp / "faults"

    def env(self, **extra: str) -> dict[str, str]:
        """A user's environment for this head: its token; no RAY_ADDRESS unless given."""
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTHONPATH")}
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=self.token, COLUMNS="200",
                   RAY_USAGE_STATS_ENABLED="0", **extra)
        return env

    def task_pids(self) -> dict[int, list[int]]:
        """pid -> seeds of every task attempt that started training on this head."""
        folder = self.faults / "pids"
        return {int(p.name): json.loads(p.read_text()) for p in folder.glob("*")
                if p.read_text()} if folder.is_dir() else {}

    def started(self) -> list[list[int]]:
        """The seeds of every task attempt that started training on this head, in order."""
        log = self.faults / "started"
        return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []

    def driver_logs(self, pid: int) -> list[Path]:
        """The log files a driver with this pid left in the head's session (if it attached)."""
        return list(self.tmp.glob(f"session_*/logs/*driver*_{pid}.*"))


def _start_head() -> Head:
    tmp = Path(tempfile.mkdtemp(prefix="gvh-", dir="/tmp"))
    token = secrets.token_hex(16)
    (gcs, node_manager, object_manager, agent_listen, agent_grpc, metrics, runtime_env,
     dashboard) = _free_ports(8)
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS",)}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token, RAY_USAGE_STATS_ENABLED="0",
               PYTHONPATH=str(HOOK), GV_TEST_FAULTS=str(tmp / "faults"),
               **{MARKER: str(tmp)})
    cmd = [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
           "--port", str(gcs), "--node-manager-port", str(node_manager),
           "--object-manager-port", str(object_manager),
           "--dashboard-agent-listen-port", str(agent_listen),
           "--dashboard-agent-grpc-port", str(agent_grpc), "--metrics-export-port", str(metrics),
           "--runtime-env-agent-port", str(runtime_env), "--dashboard-port", str(dashboard),
           "--include-dashboard", "false", "--num-cpus", "2", "--num-gpus", "0",
           "--object-store-memory", str(256 * 1024**2), "--temp-dir", str(tmp),
           "--disable-usage-stats"]
    log = (tmp / "start.log").open("wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    head = Head(f"127.0.0.1:{gcs}", tmp, token, proc)
    deadline = time.monotonic() + 90
    while not list(tmp.glob("session_*/sockets/raylet")):  # the raylet is up: nodes can join
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop_head(head)
            raise RuntimeError(f"ray start --head failed:\n{(tmp / 'start.log').read_text()}"
                               if tmp.exists() else "ray start --head failed")
        time.sleep(0.2)
    return head


def _stop_head(head: Head) -> None:
    """This head's processes only: its group (ray start and what it spawned), then whatever
    still carries its marker (workers in groups of their own); then its folder."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(head.proc.pid, signal.SIGKILL)
    head.proc.wait(timeout=30)
    marker = f"{MARKER}={head.tmp}"
    deadline = time.monotonic() + 15
    while (pids := [p for p in _pids_with(marker) if _alive(p)]) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    shutil.rmtree(head.tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def head() -> Iterator[Head]:
    h = _start_head()
    try:
        yield h
    finally:
        _stop_head(h)
    assert not [p for p in _pids_with(f"{MARKER}={h.tmp}") if _alive(p)], "head left processes"


@pytest.fixture
def fresh(head: Head) -> Head:
    """The head with no fault set and no task pids from earlier tests."""
    shutil.rmtree(head.faults, ignore_errors=True)
    head.faults.mkdir()
    return head


def _cli(tmp_path: Path, claim: Path, *extra: str, env: dict[str, str],
         store: str = "store") -> subprocess.Popen[str]:
    cmd = [*console_script(), "run", str(claim), "--device", "cpu",
           "--store", str(tmp_path / store), "--reports", str(tmp_path / "reports"), *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=default_sigint)


def _finish(proc: subprocess.Popen[str], timeout: float = 180) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def _claim(tmp_path: Path, steps: int, eval_interval: int, **arm_steps: int) -> Path:
    """The tiny claim with another budget (per arm, if given)."""
    text = TINY.read_text().replace("steps: 300, eval_interval: 10",
                                    f"steps: {steps}, eval_interval: {eval_interval}")
    for arm, n in arm_steps.items():
        text = text.replace(f"{arm}: {{", f"{arm}: {{training: {{steps: {n}, "
                                          f"eval_interval: 10}}, ", 1)
    path = tmp_path / f"claim_{steps}.yaml"
    path.write_text(text)
    return path


def _records(store: Path) -> dict[str, dict]:
    """key -> record of every record file in a store."""
    out = {}
    for path in (store / "records").rglob("*.json"):
        rec = json.loads(path.read_text())
        out[rec["key"]] = rec
    return out


def _log_keys(store: Path) -> Counter[str]:
    """How often log.jsonl says each key was written."""
    lines = (store / "log.jsonl").read_text().splitlines() if (store / "log.jsonl").exists() \
        else []
    return Counter(json.loads(line)["key"] for line in lines)


def _verify(store: Path) -> int:
    return main(["store", "verify", "--store", str(store)])


def _wait_for(what: str, check: object, proc: subprocess.Popen[str], timeout: float = 120
              ) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert proc.poll() is None, f"the run ended before {what}: {proc.communicate()[0]}"
        assert time.monotonic() < deadline, f"no {what} in {timeout} s"
        time.sleep(0.05)


# ---------------------------------------------------------------- a local Ray, in this process


def test_ray_run_matches_local_run(tmp_path: Path, tiny_claim: Path) -> None:
    loaded = load_claim(tiny_claim)
    local_opts = RunOptions(store=tmp_path / "local" / "store",
                            reports=tmp_path / "local" / "reports", executor="local",
                            device="cpu")
    (local,) = run_claims([loaded], local_opts, QUIET)
    ray_opts = RunOptions(store=tmp_path / "ray" / "store", reports=tmp_path / "ray" / "reports",
                          executor="ray", device="cpu", chunk_size=2)
    (ray_run,) = run_claims([loaded], ray_opts, QUIET)
    assert ray_run.trained == 6
    # Chunks of 2 seeds on Ray vs one chunk of 3 locally: the same steps and verdict, losses
    # equal to float tolerance (the batch size changes the last bits of some kernels).
    assert ray_run.result.verdict == local.result.verdict
    assert ray_run.result.ci == pytest.approx(local.result.ci)
    local_store, ray_store = Store(tmp_path / "local" / "store"), Store(tmp_path / "ray" / "store")
    for plan in ray_run.plans:
        for key in plan.keys:
            got, want = ray_store.get(key)["result"], local_store.get(key)["result"]
            assert got["summary"]["train_step"] == want["summary"]["train_step"]
            assert got["summary"]["val_step"] == want["summary"]["val_step"]
            for name in ("train_acc", "val_acc"):
                assert got["curves"][name] == want["curves"][name]
            assert got["curves"]["val_loss"]["values"] == pytest.approx(
                want["curves"]["val_loss"]["values"], rel=1e-4)


def test_ray_refuses_resources_the_cluster_lacks(tmp_path: Path, tiny_claim: Path) -> None:
    with pytest.raises(ExecutionError, match="GPU"):
        RayExecutor(device="cuda", gpus_per_task=1.0)


def test_ray_runs_at_most_the_cap_of_tasks_at_once(tiny_claim: Path, tmp_path: Path) -> None:
    """RayExecutor's `task` seam runs a stand-in: each task notes how many tasks are running
    as it starts (files in a shared folder). Capped at one task in flight, a 2-CPU Ray runs
    them one at a time, every trial once, in order; uncapped, never more than its 2 slots."""
    running = tmp_path / "running"
    running.mkdir()

    def stand_in(exp_json: dict[str, Any], seeds: list[int], device: str, threads: int,
                 expected: dict[str, str], progress: Any = None) -> list[dict[str, Any]]:
        import os
        import time

        mine = running / f"{seeds[0]}-{os.getpid()}"
        mine.touch()
        seen = len(list(running.iterdir()))
        time.sleep(0.3)
        mine.unlink()
        return [{"seed": s, "seen": seen} for s in seeds]

    exp = load_claim(tiny_claim).resolved["quick"]["c1"]
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


def test_progress_counts_the_steps_of_trials_still_running(tiny_claim: Path) -> None:
    """An hour-long trial's progress moves before it returns: each task reports its step (the
    progress callback run_trial passes to the loop) and the driver adds it to the finished
    trials' steps, so the bar and the ETA are not stuck at 0% until a trial ends."""

    def stand_in(exp_json: dict[str, Any], seeds: list[int], device: str, threads: int,
                 expected: dict[str, str], progress: Any = None) -> list[dict[str, Any]]:
        import time

        progress(40, 100)
        time.sleep(2.0)
        return [{"seed": s} for s in seeds]

    exp = load_claim(tiny_claim).resolved["quick"]["c1"]
    trials = [Trial("c", "", "a", exp, (0, 1), ("k0", "k1"), ())]
    ex = RayExecutor(device="cpu", num_cpus=2, task=stand_in)
    ex.progress_every = 0.2
    try:
        seen: list[tuple[str, int]] = []
        ex.run(trials, lambda t, recs: seen.append(("done", 0)),
               lambda steps, running: seen.append(("progress", steps)))
    finally:
        ex.close()
    before = [v for kind, v in seen[:seen.index(("done", 0))] if kind == "progress"]
    assert 80 in before  # step 40 of each of the two seeds, while the task ran
    assert seen[-1] == ("progress", trials[0].seed_steps)


# ---------------------------------------------------------------- the head and addresses


def test_head_run_gives_the_local_executors_records(fresh: Head, tmp_path: Path) -> None:
    """Chunks of 2 seeds on the head's workers vs one chunk per arm in this process: the same
    records, curves and summaries to the last bit (a CPU's records do not depend on the chunk)."""
    proc = _cli(tmp_path, TINY, "--address", fresh.address, "--chunk-size", "2",
                env=fresh.env())
    rc, out = _finish(proc)
    assert rc == 0, out
    assert f"to train on the Ray cluster at {fresh.address} (2 CPU, 0 GPU), device cpu" in out
    assert len(fresh.task_pids()) >= 2, "the head's workers trained"
    assert fresh.driver_logs(proc.pid), "an attached driver leaves its log in the head's session"
    local = tmp_path / "local"
    assert main(["run", str(TINY), "--executor", "local", "--device", "cpu",
                 "--store", str(local / "store"), "--reports", str(local / "reports")]) == 0
    got, want = _records(tmp_path / "store"), _records(local / "store")
    assert len(got) == 6 and got.keys() == want.keys()
    for key in got:
        assert got[key]["result"] == want[key]["result"], key
        assert got[key]["chunk_seeds"] != want[key]["chunk_seeds"]  # really other chunks


def test_address_auto_follows_ray_address(fresh: Head, tmp_path: Path) -> None:
    rc, out = _finish(_cli(tmp_path, TINY, "--address", "auto", "--seeds", "1",
                           env=fresh.env(RAY_ADDRESS=fresh.address)))
    assert rc == 0, out
    assert f"to train on the Ray cluster at {fresh.address} (RAY_ADDRESS) (2 CPU" in out
    assert fresh.task_pids(), "the tasks ran on the head RAY_ADDRESS names"


def test_a_dead_ray_address_fails_fast_and_is_named(tmp_path: Path) -> None:
    """In a subprocess: Ray reads its auth settings once, at import, so importing it here
    without the local start's token would spoil this process's later local Ray starts."""
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:9", "COLUMNS": "200"}
    start = time.monotonic()
    rc, out = _finish(_cli(tmp_path, TINY, "--address", "auto", env=env), timeout=60)
    assert rc == 1, out
    assert "cannot reach Ray at 127.0.0.1:9 (from RAY_ADDRESS)" in out
    assert time.monotonic() - start < 30


def test_the_default_starts_its_own_ray_even_with_ray_address_set(
        fresh: Head, tmp_path: Path) -> None:
    """With the head up and RAY_ADDRESS naming it, a run without --address starts a local Ray,
    says that RAY_ADDRESS is not used, and never attaches to the head: no task, and no driver
    log of its pid in the head's session."""
    proc = _cli(tmp_path, TINY, "--seeds", "1", env=fresh.env(RAY_ADDRESS=fresh.address))
    rc, out = _finish(proc)
    assert rc == 0, out
    assert "to train on a local Ray (" in out and "cluster at" not in out
    assert f"RAY_ADDRESS={fresh.address} is not used: --address auto uses it" in out
    assert not fresh.task_pids(), "a task ran on the foreign head"
    assert not fresh.driver_logs(proc.pid), "the run attached to the foreign head"


# ---------------------------------------------------------------- faults


def test_a_killed_worker_is_retried_and_each_seed_stored_once(
        fresh: Head, tmp_path: Path) -> None:
    claim = _claim(tmp_path, 20000, 1000)
    proc = _cli(tmp_path, claim, "--address", fresh.address, env=fresh.env())
    _wait_for("task training", lambda: fresh.task_pids(), proc)
    victim, seeds = next(iter(fresh.task_pids().items()))
    os.kill(victim, signal.SIGKILL)
    rc, out = _finish(proc)
    assert rc == 0, out
    attempts = fresh.task_pids()
    assert victim in attempts and any(s == seeds and p != victim for p, s in attempts.items()), \
        f"the killed task was not retried in another worker: {attempts}"
    store = tmp_path / "store"
    assert len(_records(store)) == 6
    assert set(_log_keys(store).values()) == {1}, "a seed was written more than once"
    assert _verify(store) == 0
    assert "trained 6 seed(s), reused 0" in out


def test_a_raising_task_is_reported_against_its_arm_and_the_rest_kept(
        fresh: Head, tmp_path: Path) -> None:
    """c10's task raises at once, while c1's trains on: c1's records are stored anyway, the
    failure names c10 and its seeds with the task's own error, and the run exits 1."""
    (fresh.faults / "raise.json").write_text(json.dumps({"optimizer": {"emb_lr_mult": 10}}))
    rc, out = _finish(_cli(tmp_path, TINY, "--address", fresh.address, env=fresh.env()))
    assert rc == 1, out
    assert ("tiny: arm c10, seeds [0, 1, 2] failed on Ray: RuntimeError: injected fault for "
            "seeds [0, 1, 2]") in out, out
    assert "Traceback" not in out
    store = tmp_path / "store"
    kept = _records(store)
    assert len(kept) == 3
    assert {r["experiment"]["optimizer"]["emb_lr_mult"] for r in kept.values()} == {1.0}
    assert _verify(store) == 0
    assert not list((store / "locks").glob("*.lock")), "locks must be released"


def test_ctrl_c_cancels_the_tasks_and_leaves_the_store_sound(
        fresh: Head, tmp_path: Path) -> None:
    """c10 finishes fast and is stored; c1 trains on until Ctrl-C: exit 130, c1's task is
    cancelled (its worker ends), c10's records stay, and `store verify` finds nothing."""
    claim = _claim(tmp_path, 2_000_000, 1000, c10=300)
    proc = _cli(tmp_path, claim, "--address", fresh.address, env=fresh.env())
    store = tmp_path / "store"
    _wait_for("c10's records", lambda: len(_records(store)) == 3, proc)
    running = list(fresh.task_pids())
    assert running
    proc.send_signal(signal.SIGINT)
    rc, out = _finish(proc, timeout=60)
    assert rc == 130, out
    assert "interrupted (Ctrl-C)" in out and "Traceback" not in out
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in running) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in running if _alive(p)], "a task's worker still runs after Ctrl-C"
    assert len(_records(store)) == 3
    assert _verify(store) == 0
    assert not list((store / "locks").glob("*.lock"))


def test_a_killed_driver_loses_only_its_tasks_in_flight(fresh: Head, tmp_path: Path) -> None:
    """A driver SIGKILLed mid-run (a crash, or a restart) on a 2-CPU head: it had submitted at
    most IN_FLIGHT_PER_SLOT x 2 tasks beyond those it stored, never the whole run; the rerun on
    the same store trains exactly the seeds not stored and reuses the others unchanged."""
    from grokverify.run.execute import IN_FLIGHT_PER_SLOT

    claim = _claim(tmp_path, 2000, 100)
    args = ("--address", fresh.address, "--chunk-size", "1", "--seeds", "5")  # 10 trials
    proc = _cli(tmp_path, claim, *args, env=fresh.env())
    store = tmp_path / "store"
    _wait_for("two records", lambda: len(_records(store)) >= 2, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    before = {k: r["created"] for k, r in _records(store).items()}
    started = {tuple(s) for s in fresh.started()}
    assert 2 <= len(before) < 10, "the kill should land mid-run"
    assert len(started) - len(before) <= IN_FLIGHT_PER_SLOT * 2, \
        f"more than the cap was in flight: {len(started)} started, {len(before)} stored"

    rc, out = _finish(_cli(tmp_path, claim, *args, env=fresh.env()))
    assert rc == 0, out
    assert f"trained {10 - len(before)} seed(s), reused {len(before)}" in out
    after = _records(store)
    assert len(after) == 10
    assert all(after[k]["created"] == created for k, created in before.items())  # not retrained
    assert set(_log_keys(store).values()) == {1}, "a seed was written twice"
    assert not list((store / "locks").glob("*.lock")), "the dead driver's locks were taken over"
