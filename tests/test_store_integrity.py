"""Records that verify themselves (docs/store.md, "Integrity and threat model"): every read checks
a record's digest, so a damaged record is retrained, never reused, and the run says so; `store
verify` names every kind of damage and leftover and exits 1; a stale lock is taken over by one
process only."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grokverify import store as store_mod
from grokverify.cli import main
from grokverify.store import Store, content_digest

TINY = Path(__file__).parent / "fixtures" / "tiny_claim.yaml"
KEY = "ab" * 32


@pytest.fixture(scope="module")
def clean_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of the tiny claim (6 seeds): each test damages its own copy."""
    base = tmp_path_factory.mktemp("clean")
    assert main(["run", str(TINY), "--executor", "local", "--device", "cpu",
                 "--store", str(base / "store"), "--reports", str(base / "reports")]) == 0
    return base


@pytest.fixture
def store(clean_store: Path, tmp_path: Path) -> Path:
    shutil.copytree(clean_store / "store", tmp_path / "store")
    return tmp_path / "store"


def _run(store: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["run", str(TINY), "--executor", "local", "--device", "cpu", "--store",
                 str(store), "--reports", str(store.parent / "reports")])
    return code, capsys.readouterr().out


def _verify(store: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["store", "verify", "--store", str(store)])
    return code, capsys.readouterr().out


def _records(store: Path) -> list[Path]:
    return sorted((store / "records").rglob("*.json"))


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change a record as a user with an editor would: the digest is left as it was."""
    rec = json.loads(path.read_text())
    change(rec)
    path.write_text(json.dumps(rec, sort_keys=True))


def _results(store: Path) -> dict[str, Any]:
    return {p.stem: json.loads(p.read_text())["result"] for p in _records(store)}


def _verdict(base: Path) -> dict[str, Any]:
    return json.loads((base / "reports" / "tiny" / "result.json").read_text())["result"]


def _assert_restored(store: Path, clean_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every record sound again, with the untampered results, and the untampered verdict."""
    assert _results(store) == _results(clean_store / "store")
    assert _verdict(store.parent) == _verdict(clean_store)
    code, out = _verify(store, capsys)
    assert code == 0, out


def test_verify_exits_0_on_a_clean_store(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _verify(store, capsys)
    assert code == 0, out
    assert "6 record(s) ok" in out and "0 corrupt, 0 orphaned or stray, 0 log problem(s)" in out
    logged = [json.loads(line) for line in (store / "log.jsonl").read_text().splitlines()]
    assert sorted(e["key"] for e in logged) == sorted(p.stem for p in _records(store))
    assert all(json.loads(p.read_text())["digest"] == e["digest"]
               for p, e in zip(_records(store), sorted(logged, key=lambda e: e["key"]),
                               strict=True))


def test_an_edited_summary_fails_verify_and_is_retrained(
        store: Path, clean_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """val_step null -> 100 in every seed that never reached the threshold: the old store called
    this ok and the next run reused it, changing the verdict."""
    edited = [p for p in _records(store)
              if json.loads(p.read_text())["result"]["summary"]["val_step"] is None]
    assert edited
    for path in edited:
        _edit(path, lambda rec: rec["result"]["summary"].update(val_step=100))
    assert Store(store).get(edited[0].stem) is None
    code, out = _verify(store, capsys)
    assert code == 1
    assert out.count("digest-mismatch") == len(edited)
    assert all(str(p) in out for p in edited)

    code, out = _run(store, capsys)
    assert code == 0, out
    assert out.count("damaged record tiny") == len(edited)
    assert "content does not match its digest (edited or corrupted); retraining it" in out
    assert f"trained {len(edited)} seed(s), reused {6 - len(edited)}" in out
    _assert_restored(store, clean_store, capsys)


def _one_digit(text: str, needle: str, at: int) -> str:
    """`text` with one digit changed (the `at`-th character of `needle`, found once): one byte."""
    assert text.count(needle) == 1 and needle[at].isdigit()
    return text.replace(needle, needle[:at] + str((int(needle[at]) + 1) % 10) + needle[at + 1:])


@pytest.mark.parametrize(("edit", "kind"), [
    (lambda t, r: _one_digit(t, repr(r["result"]["curves"]["val_loss"]["values"][3]), 2),
     "digest-mismatch"),
    (lambda t, r: _one_digit(t, f'"final_val_acc": {r["result"]["summary"]["final_val_acc"]}',
                             19), "digest-mismatch"),
    (lambda t, r: t.replace(', "seed"', ',\n"seed"', 1), "reformatted"),  # same values
], ids=["curve-value", "summary-value", "whitespace"])
def test_a_one_byte_edit_fails_verify_and_is_retrained(
        store: Path, clean_store: Path, capsys: pytest.CaptureFixture[str],
        edit: Callable[[str, dict[str, Any]], str], kind: str) -> None:
    path = _records(store)[0]
    text = path.read_text()
    path.write_text(edit(text, json.loads(text)))
    assert sum(a != b for a, b in zip(text, path.read_text(), strict=True)) == 1

    code, out = _verify(store, capsys)
    assert code == 1 and f"{kind} {path}" in out
    code, out = _run(store, capsys)
    assert code == 0 and "damaged record tiny" in out and "trained 1 seed(s), reused 5" in out
    _assert_restored(store, clean_store, capsys)


def test_a_truncated_record_is_retrained_not_a_crash(
        store: Path, clean_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _records(store)[2]
    path.write_text(path.read_text()[:len(path.read_text()) // 2])
    code, out = _verify(store, capsys)
    assert code == 1 and f"invalid-json {path}" in out

    code, out = _run(store, capsys)
    assert code == 0, out
    assert "Traceback" not in out
    assert f"({path}): not valid JSON" in out and "retraining it" in out
    assert "trained 1 seed(s), reused 5" in out
    _assert_restored(store, clean_store, capsys)


def test_a_record_without_a_digest_is_retrained(
        store: Path, clean_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A record written before digests: sound otherwise, but nothing vouches for its result."""
    path = _records(store)[1]
    _edit(path, lambda rec: rec.pop("digest"))
    code, out = _verify(store, capsys)
    assert code == 1 and f"no-digest {path}: no digest (written by an older grokverify)" in out
    code, out = _run(store, capsys)
    assert code == 0 and "no digest (written by an older grokverify); retraining it" in out
    assert "trained 1 seed(s), reused 5" in out
    _assert_restored(store, clean_store, capsys)


def test_deleting_one_damaged_record_does_not_let_run_reuse_the_others(
        store: Path, clean_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _records(store)[:2]
    for path in (first, second):
        _edit(path, lambda rec: rec["result"]["summary"].update(final_val_acc=-1.0))
    code, out = _verify(store, capsys)
    assert code == 1 and str(first) in out and str(second) in out
    first.unlink()  # the user deletes the one verify named first, and reruns
    code, out = _run(store, capsys)
    assert code == 0 and out.count("damaged record") == 1 and str(second) in out
    assert "trained 2 seed(s), reused 4" in out
    _assert_restored(store, clean_store, capsys)


def test_an_edit_that_rewrites_the_digest_is_caught_by_the_log_unless_that_is_rewritten_too(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The documented limit: reads check the digest only; verify also checks the log; a user
    who rewrites both is not a threat the store defends against."""
    path = _records(store)[0]

    def forge(rec: dict[str, Any]) -> None:
        rec["result"]["summary"]["val_step"] = 100
        rec["digest"] = content_digest(rec)

    old = json.loads(path.read_text())["digest"]
    _edit(path, forge)
    assert Store(store).get(path.stem)["result"]["summary"]["val_step"] == 100
    code, out = _verify(store, capsys)
    assert code == 1 and f"changed-since-written {path}" in out and "1 corrupt" in out

    log = store / "log.jsonl"
    log.write_text(log.read_text().replace(old, json.loads(path.read_text())["digest"]))
    code, out = _verify(store, capsys)
    assert code == 0, out


def test_log_problems_fail_verify(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = store / "log.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[1:]) + "{not json\n")
    code, out = _verify(store, capsys)
    assert code == 1 and f"bad-log {log}:6" in out
    unlogged = next(p for p in _records(store) if p.stem == json.loads(lines[0])["key"])
    assert f"unlogged {unlogged}" in out and "2 log problem(s)" in out
    log.unlink()
    code, out = _verify(store, capsys)
    assert code == 1 and "no-log" in out and "6 record(s) cannot be cross-checked" in out


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


def _stale_lock(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": platform.node(), "pid": _dead_pid(), "time": 0}))


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
        _stale_lock(path)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    code, out = _verify(store, capsys)
    assert code == 1
    assert f"{kind} {path}:" in out and "6 record(s) ok" in out


def test_a_record_filed_under_the_wrong_folder_fails_verify(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _records(store)[0]
    moved = store / "records" / ("00" if path.parent.name != "00" else "01") / path.name
    moved.parent.mkdir(exist_ok=True)
    path.rename(moved)
    code, out = _verify(store, capsys)
    assert code == 1 and f"key-mismatch {moved}" in out


@pytest.mark.parametrize(("damage", "why"), [
    (lambda p: p.write_text("not json"), "not valid JSON"),
    (lambda p: p.write_text("[1, 2]"), "not a JSON object"),
    (lambda p: p.write_text(""), "not valid JSON"),
    (lambda p: (p.unlink(), p.mkdir()), "unreadable"),
    (lambda p: _edit(p, lambda rec: rec.update(key=KEY)), "differs from the file name"),
    (lambda p: _edit(p, lambda rec: rec.pop("key_inputs")), "missing or invalid field"),
    (lambda p: _edit(p, lambda rec: rec.update(seed=99)), "does not hash to its key"),
])
def test_reads_treat_every_kind_of_damage_as_absent_and_remember_it(
        store: Path, damage: Callable[[Path], object], why: str) -> None:
    path = _records(store)[0]
    sound = _records(store)[1].stem
    damage(path)
    s = Store(store)
    assert s.has(sound) and s.get(sound) is not None and s.damaged == {}
    assert not s.has(path.stem) and s.get(path.stem) is None
    assert why in s.damaged[path.stem]
    assert s.newly_damaged() == s.damaged and s.newly_damaged() == {}  # named once
    assert Store(store).get(KEY) is None  # an absent record is not damage


def test_put_digests_afresh_and_a_copied_record_reads_back(tmp_path: Path, store: Path) -> None:
    rec = Store(store).get(_records(store)[0].stem)
    copy = Store(tmp_path / "copy")
    copy.put(rec["key"], {**rec, "digest": "sha256:stale"})
    assert copy.get(rec["key"]) == rec


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
    code, out = _run(tmp_path / "store", capsys)
    assert code == 1 and "does not read back sound right after it was written" in out


# ---------------------------------------------------------------- stale lock takeover

def test_a_lock_judged_stale_too_late_is_not_taken_from_its_new_owner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes judge one dead lock stale; the first takes it over; the second must not
    then remove the first one's fresh lock (before: both unlinked and both created)."""
    first, second = Store(tmp_path), Store(tmp_path)
    path = first.lock_path(KEY)
    _stale_lock(path)
    judge = store_mod._judge_stale
    interleaved: list[bool] = []

    def judged_then_overtaken(lock: store_mod._Lock) -> bool:
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


def test_one_of_two_racing_threads_takes_over_a_stale_lock(tmp_path: Path) -> None:
    """Two contenders, many rounds, as close together as a barrier makes them."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for round_ in range(100):
            key = f"{round_:064x}"
            stores = [Store(tmp_path), Store(tmp_path)]
            _stale_lock(stores[0].lock_path(key))
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


def test_a_record_found_sound_then_edited_is_damaged_on_the_next_read(store: Path) -> None:
    """`Store.get` only re-parses a file it has already found sound while it is the same file;
    an edit after the first read (another size or modification time) is checked in full."""
    s = Store(store)
    path = _records(store)[0]
    key = path.stem
    first = s.get(key)
    assert first is not None and s.get(key) == first  # the remembered file, parsed again
    _edit(path, lambda rec: rec["result"]["summary"].update(seed=99))
    assert s.get(key) is None
    assert key in s.damaged
    assert not s.has(key)


def test_a_record_replaced_by_another_sound_one_is_read_afresh(store: Path) -> None:
    """The memo is by file identity, not by key: a record rewritten in place (a retrain) is
    read and checked as the new file."""
    s = Store(store)
    path = _records(store)[0]
    rec = s.get(path.stem)
    assert rec is not None
    rec["result"]["summary"]["note"] = "retrained"
    s.put(path.stem, rec)
    again = s.get(path.stem)
    assert again is not None and again["result"]["summary"]["note"] == "retrained"


def test_record_keys_equal_record_key_per_seed() -> None:
    from grokverify.claim.load import load_claim
    from grokverify.store import record_key, record_keys

    exp = next(iter(load_claim(TINY).members("quick").values())).popitem()[1]
    seeds = (0, 3, 7)
    assert record_keys(exp, seeds, "cpu") == tuple(record_key(exp, s, "cpu") for s in seeds)
    assert len(set(record_keys(exp, seeds, "cpu"))) == 3
