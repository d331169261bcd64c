"""Locks (docs/store.md, "Locks"): what a lock holds, when it is honoured or stale, and how a stale
lock is taken over by one process only when others race for it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from storedata import HOST, KEY, dead_pid, stale_lock, write_lock

from grokverify import store as store_mod
from grokverify.store import STALE_AFTER_S, Store, _Lock, verify

DAY = 86400.0


@pytest.fixture
def live_child() -> Iterator[subprocess.Popen[bytes]]:
    """A live process of this host that is not the test itself."""
    proc = subprocess.Popen(["sleep", "30"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- what a lock holds


def test_a_lock_takes_a_fresh_store_and_holds_host_pid_time_and_token(tmp_path: Path) -> None:
    """A run locks into a store that does not exist yet (its folders are created); the lock
    reads {host, pid, time, token} with a 16-hex random token."""
    s = Store(tmp_path / "new" / "store")
    assert s.try_lock(KEY) is True
    owner = json.loads(s.lock_path(KEY).read_text())
    assert set(owner) == {"host", "pid", "time", "token"}
    assert (owner["host"], owner["pid"]) == (HOST, os.getpid())
    assert abs(owner["time"] - time.time()) < 60
    assert re.fullmatch(r"[0-9a-f]{16}", owner["token"])


# ---------------------------------------------------------------- honoured or stale


def test_a_live_process_lock_is_honoured_and_its_process_left_alone(
        tmp_path: Path, live_child: subprocess.Popen[bytes]) -> None:
    """Checking whether a lock's owner is alive must not signal it (a probe, signal 0)."""
    s = Store(tmp_path)
    write_lock(s.lock_path(KEY), {"host": HOST, "pid": live_child.pid}, age_s=DAY)
    assert s.locked_by_other(KEY) is True
    assert s.try_lock(KEY) is False
    with pytest.raises(subprocess.TimeoutExpired):
        live_child.wait(timeout=0.2)


def test_probing_a_lock_owner_sends_signal_zero(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Liveness is asked with signal 0 (no signal is delivered); anything else would hit the
    owner (1 is SIGHUP)."""
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(store_mod.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    s = Store(tmp_path)
    write_lock(s.lock_path(KEY), {"host": HOST, "pid": 4242})
    assert s.locked_by_other(KEY) is True
    assert sent == [(4242, 0)]


def test_a_process_of_another_user_counts_as_alive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When probing the owner is refused (another user's process), the lock is honoured."""
    s = Store(tmp_path)
    write_lock(s.lock_path(KEY), {"host": HOST, "pid": dead_pid()}, age_s=DAY)

    def refused(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(store_mod.os, "kill", refused)
    assert s.locked_by_other(KEY) is True


def test_a_lock_that_is_not_json_is_stale_and_taken_over(tmp_path: Path) -> None:
    """Locks are created whole, so one that does not parse has no live writer: stale at once."""
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
    always answer "alive"): honoured for six hours, then stale."""
    now = 1_000_000_000.0
    monkeypatch.setattr(store_mod, "time", SimpleNamespace(time=lambda: now))
    body = json.dumps({"host": HOST, **owner}).encode()
    assert store_mod._judge_stale(_Lock(1, now - 60.0, body)) is False
    assert store_mod._judge_stale(_Lock(1, now - 24 * 3600.0, body)) is True


def test_a_lock_of_pid_one_on_this_host_is_probed_not_aged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pid 1 (init) names one process, unlike 0 and -1: an alive pid 1 keeps its lock however
    old it is, a dead one lets it be taken at once."""
    alive = {"answer": True}
    asked: list[int] = []

    def probe(pid: int) -> bool:
        asked.append(pid)
        return alive["answer"]

    monkeypatch.setattr(store_mod, "_pid_alive", probe)
    s = Store(tmp_path)
    write_lock(s.lock_path(KEY), {"host": HOST, "pid": 1}, age_s=DAY)
    assert s.locked_by_other(KEY) is True
    alive["answer"] = False
    os.utime(s.lock_path(KEY), None)  # fresh
    assert s.locked_by_other(KEY) is False
    assert asked == [1, 1]


def test_an_unreadable_lock_is_judged_by_its_age(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock the OS will not let us open is read as (inode, mtime, no body): honoured while
    young, stale (and flagged by verify) when older than six hours."""
    s = Store(tmp_path)
    path = s.lock_path(KEY)
    write_lock(path, {"host": HOST, "pid": dead_pid()})  # readable, it would be stale
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
    findings = verify(s).findings
    assert [(f.kind, f.path) for f in findings] == [("stale-lock", str(path))]
    assert "process that is gone" in findings[0].why


# ---------------------------------------------------------------- takeover races


def test_a_successor_with_the_same_bytes_and_time_is_told_apart_by_its_inode(
        tmp_path: Path) -> None:
    """The takeover removes only the lock it judged: a successor's lock identical in bytes and
    mtime but another file (inode) is put back, and the taker does not create its own."""
    path = Store(tmp_path).lock_path(KEY)
    write_lock(path, {"host": HOST, "pid": 1})
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
    write_lock(path, {"host": HOST, "pid": 1, "token": "successor"})
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
    write_lock(path, {"host": HOST, "pid": dead_pid()})
    real_judge = store_mod._judge_stale

    def judged_then_moved_by_another(lock: _Lock) -> bool:
        stale = real_judge(lock)
        path.unlink()
        return stale

    monkeypatch.setattr(store_mod, "_judge_stale", judged_then_moved_by_another)
    assert s.try_lock(KEY) is True
    assert json.loads(path.read_text())["pid"] == os.getpid()


def test_a_lock_judged_stale_too_late_is_not_taken_from_its_new_owner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes judge one dead lock stale; the first takes it over; the second must not
    then remove the first one's fresh lock, nor leave what it set aside."""
    first, second = Store(tmp_path), Store(tmp_path)
    path = first.lock_path(KEY)
    stale_lock(path)
    judge = store_mod._judge_stale
    interleaved: list[bool] = []

    def judged_then_overtaken(lock: _Lock) -> bool:
        stale = judge(lock)
        if stale and not interleaved:  # `second` has judged; `first` takes over before it acts
            interleaved.append(False)
            interleaved[0] = first.try_lock(KEY)
        return stale

    monkeypatch.setattr(store_mod, "_judge_stale", judged_then_overtaken)
    mask = os.umask(0o022)
    try:
        assert second.try_lock(KEY) is False
    finally:
        os.umask(mask)
    assert interleaved == [True]
    owner = json.loads(path.read_text())
    assert owner["pid"] == os.getpid() and second.locked_by_other(KEY)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # nothing set aside is left
    assert path.stat().st_mode & 0o777 == 0o644  # readable by the store's other users


def test_a_lock_released_between_two_looks_is_retried(
        tmp_path: Path, live_child: subprocess.Popen[bytes],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner releases its lock after our create failed and before we read it: we try again
    and get it."""
    s = Store(tmp_path)
    path = s.lock_path(KEY)
    write_lock(path, {"host": HOST, "pid": live_child.pid})
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


def test_one_of_two_racing_threads_takes_over_a_stale_lock(tmp_path: Path) -> None:
    """Two contenders, many rounds, as close together as a barrier makes them."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for round_ in range(100):
            key = f"{round_:064x}"
            stores = [Store(tmp_path), Store(tmp_path)]
            stale_lock(stores[0].lock_path(key))
            barrier = threading.Barrier(2)
            won: list[bool] = []

            def contend(s: Store, key: str = key, barrier: threading.Barrier = barrier,
                        won: list[bool] = won) -> None:
                barrier.wait()
                won.append(s.try_lock(key))

            threads = [threading.Thread(target=contend, args=(s,)) for s in stores]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sorted(won) == [False, True], round_
    finally:
        sys.setswitchinterval(old)


# another host's lock is honoured for six hours (values by hand)
ORACLE_KEY = "cd" * 32


def _foreign_lock(store: Store, age_s: float) -> Path:
    """A lock written by a process on another host (whose pid means nothing here), `age_s` old."""
    path = store.lock_path(ORACLE_KEY)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": "another-host.example", "pid": 1,
                                "time": time.time() - age_s, "token": "f" * 16}))
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


@pytest.mark.parametrize("age_h", [0.0, 1.0, 5.9])
def test_another_hosts_lock_is_honoured_for_six_hours(tmp_path: Path, age_h: float) -> None:
    store = Store(tmp_path)
    path = _foreign_lock(store, age_h * 3600)
    before = path.read_text()
    assert store.locked_by_other(ORACLE_KEY)
    assert store.try_lock(ORACLE_KEY) is False
    assert path.read_text() == before  # not taken over, not rewritten


def test_another_hosts_lock_older_than_six_hours_is_taken_over(tmp_path: Path) -> None:
    store = Store(tmp_path)
    path = _foreign_lock(store, 6.1 * 3600)
    assert not store.locked_by_other(ORACLE_KEY)
    assert store.try_lock(ORACLE_KEY) is True
    assert json.loads(path.read_text())["pid"] == os.getpid()
