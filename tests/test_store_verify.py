"""`grokverify store verify` (docs/store.md): every finding's kind, path and reason, the counts of
sound records and of those from another results version or torch, and exit 1 on any finding; on
hand-built stores and on a copy of the tiny claim's stored run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from storedata import (
    HOST,
    KEY,
    OTHER_KEY,
    assert_findings,
    copy_tiny_store,
    dead_pid,
    edit_record,
    records_of,
    stale_lock,
    synthetic_record,
    verify_cli,
    write_lock,
)

from grokverify.store import Store, content_digest, verify


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return copy_tiny_store(tmp_path)


# ---------------------------------------------------------------- findings of hand-built stores


def test_verify_names_every_leftover_and_counts_other_versions(tmp_path: Path) -> None:
    """One current record, one of another results version, one of another torch (all sound,
    logged) and every kind of leftover: each finding's kind, path and reason, a live lock not
    flagged, and 3 ok of which 2 from another version. A stray name sorting before the shards
    must not stop the walk of `records/`."""
    root = tmp_path / "store"
    s = Store(root)
    keys = []
    for seed, env in ((3, {}), (4, {"results_version": "1999-01-01.1"}), (5, {"torch": "1.0.0"})):
        key, rec = synthetic_record(seed, **env)
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
    write_lock(s.lock_path(KEY), {"host": HOST, "pid": os.getpid()})  # live: this process
    write_lock(s.lock_path(OTHER_KEY), {"host": HOST, "pid": dead_pid()})

    report = verify(s)

    in_shard = sorted([("temp-file", shard / f".{keys[0][:16]}.abc123.tmp", "interrupted write"),
                       ("stray-file", shard / ".notes", "not part of the store")],
                      key=lambda f: str(f[1]))
    assert_findings(report, [
        ("bad-log", f"{s.log_path}:4", "not a log entry (JSON with key and digest)"),
        ("temp-file", root / ".probe.k2j3", "interrupted writability check"),
        ("temp-file", stale_aside, "interrupted lock or lock takeover"),
        ("stale-lock", s.lock_path(OTHER_KEY), "process that is gone"),
        ("stray-file", records / "0", "not part of the store"),
        *in_shard,
        ("unknown-dir", records / "zz", "a directory the store does not use"),
    ])
    assert (report.ok, report.other_version) == (3, 2)
    assert len(report.corrupt) == 0 and len(report.log_problems) == 1
    assert len(report.orphaned) == 7


def test_verify_without_a_log_names_where_it_is_missing(tmp_path: Path) -> None:
    """Records but no `log.jsonl`: one `no-log` finding at the log's path, saying how many
    records could not be cross-checked; the records still count as ok, as current."""
    s = Store(tmp_path)
    s.put(*synthetic_record(3))
    s.log_path.unlink()
    report = verify(s)
    assert_findings(report, [("no-log", tmp_path / "log.jsonl",
                              "1 record(s) cannot be cross-checked")])
    assert "log was deleted, or the records copied in" in report.findings[0].why
    assert (report.ok, report.other_version) == (1, 0)
    assert report.log_problems == [(str(tmp_path / "log.jsonl"), report.findings[0].why)]


def test_verify_reports_an_unreadable_log(tmp_path: Path) -> None:
    """A log that cannot be read (here a directory): `bad-log` at its path with the OS's reason
    in words, the directory itself named as unknown, and the records not cross-checked."""
    s = Store(tmp_path)
    s.put(*synthetic_record(3))
    s.log_path.unlink()
    s.log_path.mkdir()
    report = verify(s)
    log = tmp_path / "log.jsonl"
    assert_findings(report, [("bad-log", log, "unreadable (Is a directory)"),
                             ("unknown-dir", log, "a directory the store does not use"),
                             ("no-log", log, "1 record(s) cannot be cross-checked")])
    assert report.findings[0].why == "unreadable (Is a directory)"
    assert report.ok == 1


# ---------------------------------------------------------------- the command on a real store


def test_verify_exits_0_on_a_clean_store(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = verify_cli(store, capsys)
    assert code == 0, out
    assert "6 record(s) ok" in out and "0 corrupt, 0 orphaned or stray, 0 log problem(s)" in out
    logged = [json.loads(line) for line in (store / "log.jsonl").read_text().splitlines()]
    assert sorted(e["key"] for e in logged) == sorted(p.stem for p in records_of(store))
    assert all(json.loads(p.read_text())["digest"] == e["digest"]
               for p, e in zip(records_of(store), sorted(logged, key=lambda e: e["key"]),
                               strict=True))


def test_verify_counts_corrupt_and_orphaned_files(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert verify_cli(store, capsys)[0] == 0
    paths = records_of(store)
    paths[0].write_text(paths[0].read_text()[:40])  # truncated
    rec = json.loads(paths[1].read_text())
    rec["experiment"]["optimizer"]["lr"] = 0.5  # edited: no longer hashes to its key
    paths[1].write_text(json.dumps(rec))
    (paths[2].parent / ".abcd1234.xyz.tmp").write_text("{")
    code, out = verify_cli(store, capsys)
    assert code == 1
    assert "not valid JSON" in out and "does not hash to its key" in out
    assert "interrupted write" in out and "2 corrupt, 1 orphaned" in out


@pytest.mark.parametrize(("where", "kind"), [
    ("notes.txt", "stray-file"),
    ("backup", "unknown-dir"),
    (".probe.x1y2", "temp-file"),
    ("records/README", "stray-file"),
    ("records/zz", "unknown-dir"),
    ("records/ab/notes.txt", "stray-file"),
    ("records/ab/.abcd1234.json.x.tmp", "temp-file"),
    ("locks/notes.txt", "stray-file"),
    ("locks/.lock.0123", "temp-file"),
    (f"locks/{KEY}.lock", "stale-lock"),
])
def test_anything_that_is_not_a_record_or_a_live_lock_fails_verify(
        store: Path, capsys: pytest.CaptureFixture[str], where: str, kind: str) -> None:
    path = store / where
    if kind == "unknown-dir":
        path.mkdir(parents=True)
    elif kind == "stale-lock":
        stale_lock(path)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    code, out = verify_cli(store, capsys)
    assert code == 1
    assert f"{kind} {path}:" in out and "6 record(s) ok" in out


def test_a_record_filed_under_the_wrong_folder_fails_verify(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = records_of(store)[0]
    moved = store / "records" / ("00" if path.parent.name != "00" else "01") / path.name
    moved.parent.mkdir(exist_ok=True)
    path.rename(moved)
    code, out = verify_cli(store, capsys)
    assert code == 1 and f"key-mismatch {moved}" in out


def test_log_problems_fail_verify(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = store / "log.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[1:]) + "{not json\n")
    code, out = verify_cli(store, capsys)
    assert code == 1 and f"bad-log {log}:6" in out
    unlogged = next(p for p in records_of(store) if p.stem == json.loads(lines[0])["key"])
    assert f"unlogged {unlogged}" in out and "2 log problem(s)" in out
    log.unlink()
    code, out = verify_cli(store, capsys)
    assert code == 1 and "no-log" in out and "6 record(s) cannot be cross-checked" in out


def test_an_edit_that_rewrites_the_digest_is_caught_by_the_log_unless_that_is_rewritten_too(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The documented limit: reads check the digest only; verify also checks the log; a user
    who rewrites both is not a threat the store defends against."""
    path = records_of(store)[0]

    def forge(rec: dict[str, Any]) -> None:
        rec["result"]["summary"]["val_step"] = 100
        rec["digest"] = content_digest(rec)

    old = json.loads(path.read_text())["digest"]
    edit_record(path, forge)
    assert Store(store).get(path.stem)["result"]["summary"]["val_step"] == 100
    code, out = verify_cli(store, capsys)
    assert code == 1 and f"changed-since-written {path}" in out and "1 corrupt" in out

    log = store / "log.jsonl"
    log.write_text(log.read_text().replace(old, json.loads(path.read_text())["digest"]))
    code, out = verify_cli(store, capsys)
    assert code == 0, out
