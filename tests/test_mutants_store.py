"""Pins what the mutation run of `grokverify/store.py` (mutmut) found unpinned.

The surviving mutants sat in what a user of the store reads or relies on without a training run
to exercise it: the findings `store verify` lists (kind, path, why) and its counts of sound
records and of records from another results version or torch; the record and log line `put`
writes (sorted JSON, the log entry's fields, its permissions, refusals of NaN and of unwritable
places with their messages); and the locks (their body, when a lock is honoured or stale, how a
stale lock is taken over when other processes race for it). Everything here is built by hand on
a `tmp_path` store from a small synthetic record (no training), and the expected values are
written out from docs/store.md, not copied from the functions' output.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from grokverify import store as store_mod
from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine.version import RESULTS_VERSION
from grokverify.store import (
    STALE_AFTER_S,
    Finding,
    Store,
    StoreError,
    _Lock,
    hash_key,
    key_inputs,
    verify,
)

EXP = {"task": {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3},
       "model": {"kind": "embed_mlp", "d": 8, "hidden": 16},
       "optimizer": {"name": "adamw", "lr": 0.01}, "training": {"steps": 40, "eval_interval": 10}}
KEY = "ab" * 32
OTHER_KEY = "cd" * 32
HOST = platform.node()
DAY = 86400.0


def _record(seed: int, **environment: str) -> tuple[str, dict[str, Any]]:
    """(key, record) of one seed as `execute` builds it, with parts of the key's environment
    (`results_version`, `torch`) replaced when given."""
    exp = ExperimentSpec.model_validate(EXP)
    inputs = {**key_inputs(exp, seed, "cpu"), **environment}
    rec = {"experiment": exp.model_dump(mode="json"),
           "results_version": inputs["results_version"], "seed": seed, "key_inputs": inputs,
           "result": {"summary": {"seed": seed, "val_step": None}}}
    return hash_key(inputs), rec


def _sha256_digest(record: dict[str, Any]) -> str:
    """Independent oracle of a record's digest: SHA-256 of its compact sorted JSON sans digest."""
    body = json.dumps({k: v for k, v in record.items() if k != "digest"}, sort_keys=True,
                      separators=(",", ":"))
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.fixture
def live_child() -> Iterator[subprocess.Popen[bytes]]:
    """A live process of this host that is not the test itself."""
    proc = subprocess.Popen(["sleep", "30"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _write_lock(path: Path, owner: dict[str, Any], age_s: float = 0.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(owner))
    if age_s:
        then = time.time() - age_s
        os.utime(path, (then, then))


# ---------------------------------------------------------------- store verify


def test_verify_names_every_leftover_and_counts_other_versions(
        tmp_path: Path, live_child: subprocess.Popen[bytes]) -> None:
    """`store verify` on a store holding one current record, one of another results version and
    one of another torch (all sound, logged), and every kind of leftover: a reader relies on
    each finding's kind, path and exact reason, on a live lock not being flagged, and on the
    counts "3 record(s) ok (2 from another results version or torch)". A stray name sorting
    before the shards must not stop the walk of `records/`."""
    root = tmp_path / "store"
    s = Store(root)
    keys = []
    for seed, env in ((3, {}), (4, {"results_version": "1999-01-01.1"}), (5, {"torch": "1.0.0"})):
        key, rec = _record(seed, **env)
        s.put(key, rec)
        keys.append(key)
    with s.log_path.open("a") as fh:
        fh.write('{"key": "x"}\n')  # line 4: no digest
    records = root / "records"
    shard = records / keys[0][:2]
    (records / "0").write_text("x")  # sorts before every shard
    (records / "zz").mkdir()
    (shard / ".notes").write_text("x")
    (shard / f".{keys[0][:16]}.abc123.tmp").write_text("{")
    (root / ".probe.k2j3").write_text("")
    (root / "locks").mkdir()
    stale_aside = root / "locks" / f".stale.{KEY}.lock.0123456789abcdef"
    stale_aside.write_text("{}")
    _write_lock(s.lock_path(KEY), {"host": HOST, "pid": live_child.pid})
    _write_lock(s.lock_path(OTHER_KEY), {"host": HOST, "pid": _dead_pid()})

    report = verify(s)

    assert report.findings == [
        Finding("bad-log", f"{s.log_path}:4",
                "line is not a log entry (JSON with key and digest)"),
        Finding("temp-file", str(root / ".probe.k2j3"),
                "probe of an interrupted writability check"),
        Finding("temp-file", str(stale_aside), "left by an interrupted lock or lock takeover"),
        Finding("stale-lock", str(s.lock_path(OTHER_KEY)), "lock of a process that is gone"),
        Finding("stray-file", str(records / "0"), "not part of the store"),
        *sorted([
            Finding("temp-file", str(shard / f".{keys[0][:16]}.abc123.tmp"),
                    "temporary file of an interrupted write"),
            Finding("stray-file", str(shard / ".notes"), "not part of the store"),
        ], key=lambda f: f.path),
        Finding("unknown-dir", str(records / "zz"), "a directory the store does not use"),
    ]
    assert (report.ok, report.other_version) == (3, 2)
    assert len(report.corrupt) == 0 and len(report.log_problems) == 1
    assert len(report.orphaned) == 7


def test_verify_without_a_log_names_where_it_is_missing(tmp_path: Path) -> None:
    """Records but no `log.jsonl`: one `no-log` finding at the log's path, saying how many
    records could not be cross-checked; the records still count as ok, as current."""
    s = Store(tmp_path)
    s.put(*_record(3))
    s.log_path.unlink()
    report = verify(s)
    assert report.findings == [Finding(
        "no-log", str(tmp_path / "log.jsonl"), "missing, so 1 record(s) cannot be cross-checked "
        "(the log was deleted, or the records copied in)")]
    assert (report.ok, report.other_version) == (1, 0)
    assert report.log_problems == [(str(tmp_path / "log.jsonl"), report.findings[0].why)]


def test_verify_reports_an_unreadable_log(tmp_path: Path) -> None:
    """A log that cannot be read (here a directory): `bad-log` at its path with the OS's reason
    in words, the directory itself named as unknown, and the records not cross-checked."""
    s = Store(tmp_path)
    s.put(*_record(3))
    s.log_path.unlink()
    s.log_path.mkdir()
    report = verify(s)
    log = str(tmp_path / "log.jsonl")
    assert report.findings == [
        Finding("bad-log", log, "unreadable (Is a directory)"),
        Finding("unknown-dir", log, "a directory the store does not use"),
        Finding("no-log", log, "missing, so 1 record(s) cannot be cross-checked (the log was "
                "deleted, or the records copied in)"),
    ]
    assert report.ok == 1


# ---------------------------------------------------------------- put: the record and its log


def test_put_writes_sorted_json_and_logs_one_sorted_utc_line(tmp_path: Path) -> None:
    """The record on disk is the sorted JSON of the record with its key and a fresh digest (a
    stale one copied in is replaced); the log gets one line, itself sorted JSON, holding the
    time in UTC, the key, that digest, the seed, the results version and this host; the log
    file is created with the umask's permissions (0644 under umask 022), not executable."""
    key, rec = _record(3)
    mask = os.umask(0o022)
    try:
        path = Store(tmp_path).put(key, {**rec, "digest": "sha256:stale"})
    finally:
        os.umask(mask)
    expected = {**rec, "key": key}
    digest = _sha256_digest(expected)
    assert path == tmp_path / "records" / key[:2] / f"{key}.json"
    assert path.read_text() == json.dumps({**expected, "digest": digest}, sort_keys=True)

    line = (tmp_path / "log.jsonl").read_text()
    entry = json.loads(line)
    assert line == json.dumps(entry, sort_keys=True) + "\n"
    written = datetime.fromisoformat(entry.pop("time"))
    assert written.utcoffset() == timedelta(0)
    assert abs(datetime.now(timezone.utc) - written) < timedelta(minutes=1)
    assert entry == {"key": key, "digest": digest, "seed": 3,
                     "results_version": RESULTS_VERSION, "host": HOST}
    assert (tmp_path / "log.jsonl").stat().st_mode & 0o777 == 0o644


def test_put_refuses_a_non_finite_number(tmp_path: Path) -> None:
    """A NaN would make the record invalid JSON: put refuses it and writes nothing."""
    key, rec = _record(3)
    rec["result"]["summary"]["final_val_loss"] = float("nan")
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        Store(tmp_path).put(key, rec)
    assert list(tmp_path.iterdir()) == []


def test_put_says_why_a_record_cannot_be_written(tmp_path: Path) -> None:
    """The CLI prints StoreError's message: the record's path and the OS's reason in words."""
    key, rec = _record(3)
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / key[:2]).write_text("")  # a file where the shard should be
    path = tmp_path / "records" / key[:2] / f"{key}.json"
    with pytest.raises(StoreError) as caught:
        Store(tmp_path).put(key, rec)
    assert str(caught.value) == f"cannot write record {path}: File exists"


def test_put_says_why_the_log_cannot_be_appended(tmp_path: Path) -> None:
    """A log that cannot be opened (a directory) or takes a short write (disk full): the message
    names the log and the reason."""
    key, rec = _record(3)
    (tmp_path / "log.jsonl").mkdir()
    with pytest.raises(StoreError) as caught:
        Store(tmp_path).put(key, rec)
    assert str(caught.value) == f"cannot append to {tmp_path / 'log.jsonl'}: Is a directory"

    s = Store(tmp_path / "full")
    s.root.mkdir()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(store_mod.os, "write", lambda fd, data: len(data) - 1)
        with pytest.raises(StoreError) as caught:
            s._log({"key": key})
    assert str(caught.value) == (f"cannot append to {s.log_path}: short write (disk full?)")


# ---------------------------------------------------------------- locks: honoured or stale


def test_a_lock_takes_a_fresh_store_and_holds_host_pid_time_and_token(tmp_path: Path) -> None:
    """A run locks into a store that does not exist yet (its folders are created); the lock
    reads {host, pid, time, token} (docs/store.md) with a 16-hex random token."""
    s = Store(tmp_path / "new" / "store")
    assert s.try_lock(KEY) is True
    owner = json.loads(s.lock_path(KEY).read_text())
    assert set(owner) == {"host", "pid", "time", "token"}
    assert (owner["host"], owner["pid"]) == (HOST, os.getpid())
    assert abs(owner["time"] - time.time()) < 60
    assert re.fullmatch(r"[0-9a-f]{16}", owner["token"])


def test_a_live_process_lock_is_honoured_and_its_process_left_alone(
        tmp_path: Path, live_child: subprocess.Popen[bytes]) -> None:
    """Checking whether a lock's owner is alive must not signal it (a probe, signal 0)."""
    s = Store(tmp_path)
    _write_lock(s.lock_path(KEY), {"host": HOST, "pid": live_child.pid}, age_s=DAY)
    assert s.locked_by_other(KEY) is True
    assert s.try_lock(KEY) is False
    with pytest.raises(subprocess.TimeoutExpired):
        live_child.wait(timeout=0.2)


def test_a_process_of_another_user_counts_as_alive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When probing the owner is refused (another user's process), the lock is honoured."""
    s = Store(tmp_path)
    _write_lock(s.lock_path(KEY), {"host": HOST, "pid": _dead_pid()}, age_s=DAY)

    def refused(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(store_mod.os, "kill", refused)
    assert s.locked_by_other(KEY) is True


def test_a_half_written_lock_is_stale_and_taken_over(tmp_path: Path) -> None:
    """A lock that is not JSON (half written by an older grokverify) is stale at once."""
    s = Store(tmp_path)
    path = s.lock_path(KEY)
    path.parent.mkdir(parents=True)
    path.write_text('{"host": "')
    assert s.locked_by_other(KEY) is False
    assert s.try_lock(KEY) is True
    assert json.loads(path.read_text())["pid"] == os.getpid()


@pytest.mark.parametrize("unreadable", [False, True])
def test_another_hosts_or_an_unreadable_lock_is_stale_after_exactly_six_hours(
        monkeypatch: pytest.MonkeyPatch, unreadable: bool) -> None:
    """A lock from another host, or one that cannot be read, is honoured while it is at most
    STALE_AFTER_S (six hours) old, and stale once it is older."""
    now = 1_000_000_000.0
    monkeypatch.setattr(store_mod, "time", SimpleNamespace(time=lambda: now))
    body = None if unreadable else json.dumps({"host": HOST + "-other", "pid": 1}).encode()
    assert STALE_AFTER_S == 6 * 3600
    for age, stale in ((0.0, False), (STALE_AFTER_S - 1.0, False), (float(STALE_AFTER_S), False),
                       (STALE_AFTER_S + 1.0, True)):
        assert store_mod._judge_stale(_Lock(1, now - age, body)) is stale, age


@pytest.mark.parametrize("owner", [{}, {"pid": 0}, {"pid": -1}, {"pid": None}, {"pid": "7"}])
def test_a_lock_of_this_host_without_a_usable_pid_is_judged_by_its_age(
        monkeypatch: pytest.MonkeyPatch, owner: dict) -> None:
    """No pid, or one naming no single process (0 and -1 address a process group: os.kill would
    always answer "alive"): honoured for six hours like an unreadable lock, then stale, never
    honoured for ever nor taken at once."""
    now = 1_000_000_000.0
    monkeypatch.setattr(store_mod, "time", SimpleNamespace(time=lambda: now))
    body = json.dumps({"host": HOST, **owner}).encode()
    assert store_mod._judge_stale(_Lock(1, now - 60.0, body)) is False
    assert store_mod._judge_stale(_Lock(1, now - 24 * 3600.0, body)) is True


def test_an_unreadable_lock_is_judged_by_its_age(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock the OS will not let us open is read as (inode, mtime, no body): honoured while
    young, stale (and flagged by verify) when older than six hours."""
    s = Store(tmp_path)
    path = s.lock_path(KEY)
    _write_lock(path, {"host": HOST, "pid": _dead_pid()})  # readable, it would be stale
    real_open = Path.open

    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == path.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    st = path.stat()
    assert store_mod._read_lock(path) == _Lock(st.st_ino, st.st_mtime, None)
    assert s.locked_by_other(KEY) is True
    assert verify(s).findings == []
    then = time.time() - STALE_AFTER_S - 60
    os.utime(path, (then, then))
    assert s.locked_by_other(KEY) is False
    assert verify(s).findings == [Finding("stale-lock", str(path),
                                          "lock of a process that is gone")]


# ---------------------------------------------------------------- locks: takeover races


def test_a_successor_with_the_same_bytes_and_time_is_told_apart_by_its_inode(
        tmp_path: Path) -> None:
    """The takeover removes only the lock it judged: a successor's lock identical in bytes and
    mtime but another file (inode) is put back, and the taker does not create its own."""
    path = Store(tmp_path).lock_path(KEY)
    _write_lock(path, {"host": HOST, "pid": 1})
    judged = store_mod._read_lock(path)
    assert judged is not None
    st = path.stat()
    successor = path.with_name("successor")
    successor.write_bytes(path.read_bytes())
    os.utime(successor, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(successor, path)
    assert path.stat().st_ino != st.st_ino
    assert Store._set_aside(path, judged) is False
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_lock_taken_by_a_third_process_meanwhile_is_left_to_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A successor's lock was moved aside; before it is put back a third process locks: the
    third's lock stays, the moved one is dropped, and the taker backs off."""
    path = Store(tmp_path).lock_path(KEY)
    _write_lock(path, {"host": HOST, "pid": 1, "token": "successor"})
    judged = _Lock(0, 0.0, b'{"token": "judged"}')
    real_read = store_mod._read_lock

    def third_locks_meanwhile(p: Path) -> _Lock | None:
        if p != path:  # reading what was moved aside
            path.write_text('{"token": "third"}')
        return real_read(p)

    monkeypatch.setattr(store_mod, "_read_lock", third_locks_meanwhile)
    assert Store._set_aside(path, judged) is False
    assert path.read_text() == '{"token": "third"}'
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_stale_lock_moved_away_by_another_process_still_lets_us_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process that judged the same lock stale moved it first: creating ours decides."""
    s = Store(tmp_path)
    path = s.lock_path(KEY)
    _write_lock(path, {"host": HOST, "pid": _dead_pid()})
    real_judge = store_mod._judge_stale

    def judged_then_moved_by_another(lock: _Lock) -> bool:
        stale = real_judge(lock)
        path.unlink()
        return stale

    monkeypatch.setattr(store_mod, "_judge_stale", judged_then_moved_by_another)
    assert s.try_lock(KEY) is True
    assert json.loads(path.read_text())["pid"] == os.getpid()


def test_a_lock_released_between_two_looks_is_retried(
        tmp_path: Path, live_child: subprocess.Popen[bytes],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner releases its lock after our create failed and before we read it: we try again
    and get it."""
    s = Store(tmp_path)
    path = s.lock_path(KEY)
    _write_lock(path, {"host": HOST, "pid": live_child.pid})
    real_read = store_mod._read_lock

    def released_first(p: Path) -> _Lock | None:
        p.unlink(missing_ok=True)
        return real_read(p)

    monkeypatch.setattr(store_mod, "_read_lock", released_first)
    assert s.try_lock(KEY) is True
    assert json.loads(path.read_text())["pid"] == os.getpid()


def test_try_lock_gives_up_after_three_tries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock that keeps coming and going between our looks: three tries, then the seed is left
    to the others (False), never claimed without a lock file of ours."""
    creates: list[str] = []

    def create(path: Path, body: str) -> bool:
        creates.append(body)
        return len(creates) > 3

    monkeypatch.setattr(Store, "_create_whole", staticmethod(create))
    monkeypatch.setattr(store_mod, "_read_lock", lambda path: None)
    assert Store(tmp_path).try_lock(KEY) is False
    assert len(creates) == 3
