"""Crashes, full disks and concurrent runs: nothing lost, no seed trained twice, no corrupt or
partial record, a clean message instead of a traceback."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from storedata import run_cli

from grokverify.atomic import signals_deferred
from grokverify.cli import main
from grokverify.store import Store, StoreError, verify

SLOW_CLAIM = """
id: slowish
title: Enough one-seed chunks to interrupt a run
statement: test fixture
source: {arxiv: "2205.10343", where: test, role: paper_claim, quote: test}
base:
  task: {op: add, p: 10, modular: false, unordered: true, train_frac: 0.7}
  model: {kind: toy_sum, hidden: 32}
  optimizer: {name: adamw, lr: 0.003}
  training: {steps: 600, eval_interval: 50, train_threshold: 1.0, val_threshold: 1.0,
             early_stop: false}
arms:
  c1: {}
  c10: {optimizer: {emb_lr_mult: 10}}
scales:
  quick: {description: test scale}
seeds: 6
metric: {name: val_threshold_step}
criterion: {name: survival_compare, baseline: c1, treated: c10, direction: less,
            min_effect: 0.2, n_boot: 200}
"""


def _records(store: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (store / "records").rglob("*.json")}


def _cmd(claim: Path, store: Path, reports: Path) -> list[str]:
    return [sys.executable, "-m", "grokverify.cli", "run", str(claim), "--executor", "local",
            "--device", "cpu", "--chunk-size", "1", "--store", str(store),
            "--reports", str(reports)]


@pytest.fixture
def slow_claim(tmp_path: Path) -> Path:
    path = tmp_path / "slowish.yaml"
    path.write_text(SLOW_CLAIM)
    return path


def test_sigkill_mid_run_loses_nothing_and_retrains_nothing_finished(
        tmp_path: Path, slow_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    proc = subprocess.Popen(_cmd(slow_claim, store, tmp_path / "r1"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while len(_records(store)) < 3 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _records(store)
    assert 3 <= len(before) < 12, "the kill should land mid-run"
    assert verify(Store(store)).corrupt == []

    assert main(["run", str(slow_claim), "--executor", "local", "--device", "cpu",
                 "--store", str(store), "--reports", str(tmp_path / "r2")]) == 0
    out = capsys.readouterr().out
    assert f"trained {12 - len(before)} seed(s), reused {len(before)}" in out
    after = _records(store)
    assert len(after) == 12  # none lost, none duplicated (one file per content key)
    assert all(after[name] == body for name, body in before.items())  # not retrained
    report = verify(Store(store))
    assert report.corrupt == [] and report.ok == 12
    assert not any(p.endswith(".lock") for p, _ in report.orphaned)  # stale lock taken over


def test_two_concurrent_runs_share_the_work_and_never_train_a_seed_twice(
        tmp_path: Path, slow_claim: Path) -> None:
    store = tmp_path / "store"
    procs = [subprocess.Popen(_cmd(slow_claim, store, tmp_path / f"r{i}"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "COLUMNS": "200"})
             for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    trained = []
    for out in outs:
        line = next(x for x in out.splitlines() if "seed(s), reused" in x)
        trained.append(int(line.split("trained ")[1].split(" ")[0]))
    assert sum(trained) == 12  # every seed trained by exactly one of the two runs
    report = verify(Store(store))
    assert report.ok == 12 and report.corrupt == [] and report.orphaned == []
    verdicts = [json.loads((tmp_path / f"r{i}" / "slowish" / "result.json").read_text())
                for i in range(2)]
    assert verdicts[0]["result"] == verdicts[1]["result"]


def test_an_unwritable_store_is_refused_in_the_os_words(tmp_path: Path) -> None:
    """A store under a regular file cannot take folders: StoreError with the OS's strerror."""
    blocker = tmp_path / "afile"
    blocker.write_text("")
    root = blocker / "store"
    with pytest.raises(StoreError) as err:
        Store(root).check_writable()
    assert str(err.value) == f"store {root} is not writable: {os.strerror(errno.ENOTDIR)}"


def test_unwritable_store_fails_cleanly_before_training(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the store directory should be")
    code = main(["run", str(tiny_claim), "--executor", "local", "--device", "cpu",
                 "--store", str(blocker / "store"), "--reports", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 1 and "is not writable" in out and "Traceback" not in out
    assert not (tmp_path / "r").exists()


def test_a_failed_write_leaves_no_partial_record(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "store")

    def disk_full(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    with pytest.raises(StoreError, match="No space left"):
        store.put("ab" * 32, {"x": 1})
    assert list((tmp_path / "store").rglob("*")) == [tmp_path / "store" / "records",
                                                     tmp_path / "store" / "records" / "ab"]


def test_records_and_reports_get_ordinary_file_permissions(tmp_path: Path,
                                                            tiny_claim: Path) -> None:
    """Atomic writes go through mkstemp (mode 0600); the renamed files must get what open()
    gives under the umask, or a store or report shared on a cluster is unreadable to others."""
    mask = os.umask(0o022)
    try:
        store = Store(tmp_path / "store")
        record = store.put("cd" * 32, {"x": 1})
        assert main(["run", str(tiny_claim), "--executor", "local", "--seeds", "1",
                     "--store", str(tmp_path / "s2"), "--reports", str(tmp_path / "r")]) == 0
    finally:
        os.umask(mask)
    written = [record, *sorted((tmp_path / "r").rglob("*.json")),
               *sorted((tmp_path / "r").rglob("*.md"))]
    assert len(written) >= 3
    for path in written:
        assert path.stat().st_mode & 0o777 == 0o644, path


def test_a_full_disk_during_a_real_run_exits_1_and_leaves_no_partial_record(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The store folder passes the writability probe, training runs, then the disk is full when
    the first record is flushed: a clean message and exit 1, not a traceback, and no record or
    temporary file left in the store."""
    import grokverify.atomic as atomic

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    code = main(["run", str(tiny_claim), "--executor", "local", "--device", "cpu",
                 "--store", str(tmp_path / "store"), "--reports", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 1
    assert "No space left on device" in out and "Traceback" not in out
    assert not list((tmp_path / "store").rglob("*.json"))
    assert not list((tmp_path / "store").rglob("*.tmp"))


def test_a_record_that_does_not_read_back_sound_stops_the_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Damage right after a write (a failing disk) would otherwise retrain the seed forever."""
    put = Store.put

    def put_then_damage(self: Store, key: str, record: dict[str, Any], **kw: Any) -> Path:
        path = put(self, key, record, **kw)
        path.write_text("{")
        return path

    monkeypatch.setattr(Store, "put", put_then_damage)
    code, out = run_cli(tmp_path / "store", capsys)
    assert code == 1 and "does not read back sound" in out


def test_a_deferred_signal_arrives_when_the_block_ends_and_handlers_are_put_back(
        python_sigint: None) -> None:
    """Ctrl-C inside `signals_deferred` lets the block finish, then raises as it would have."""
    before = signal.getsignal(signal.SIGINT)
    done = []
    with pytest.raises(KeyboardInterrupt), signals_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("the rest of the block")
    assert done == ["the rest of the block"]
    assert signal.getsignal(signal.SIGINT) is before
    with signals_deferred():  # nothing held: nothing raised
        done.append("again")
    assert signal.getsignal(signal.SIGINT) is before
