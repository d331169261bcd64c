"""Records as `Store.put` writes them (sorted JSON, a fresh digest, one log line) and as every
read judges them (docs/store.md, "Integrity and threat model"): a damaged record reads as absent
and is remembered with the kind and why `store verify` prints. Synthetic records, no training."""

from __future__ import annotations

import errno
import hashlib
import json
import locale
import os
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from storedata import HOST, KEY, digest_oracle, edit_record, synthetic_record

from grokverify import store as store_mod
from grokverify.engine.version import RESULTS_VERSION
from grokverify.store import Store, StoreError, content_digest, read_record

REFORMATTED = "not the bytes its writer wrote"


def _put(tmp_path: Path, seed: int = 3) -> tuple[Store, str, Path]:
    s = Store(tmp_path / "store")
    key, rec = synthetic_record(seed)
    return s, key, s.put(key, rec)


# ---------------------------------------------------------------- put: the record and its log


def test_put_is_durable_unless_told_and_sync_removes_what_it_cannot_sync(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`put` fsyncs its record by default and not with fsync=False; `sync` fsyncs those later,
    and removes a record it cannot sync (or skips one already gone) and names the first error."""
    import grokverify.atomic as atomic

    synced: list[int] = []
    monkeypatch.setattr(atomic.os, "fsync", synced.append)
    s = Store(tmp_path / "store")
    key, rec = synthetic_record(3)
    s.put(key, rec)
    assert len(synced) == 1
    later_key, later = synthetic_record(4)
    path = s.put(later_key, later, fsync=False)
    assert len(synced) == 1
    s.sync([path])
    assert len(synced) == 2

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(atomic.os, "fsync", full)
    gone = path.with_name("gone.json")
    with pytest.raises(StoreError) as err:
        s.sync([gone, path])
    assert str(err.value) == "cannot sync a record: No such file or directory"
    assert not path.exists()


def test_put_writes_sorted_json_and_logs_one_sorted_utc_line(tmp_path: Path) -> None:
    """The record on disk is the sorted JSON of the record with its key and a fresh digest (a
    stale one copied in is replaced); the log gets one sorted-JSON line: UTC time, key, digest,
    seed, results version, host; the log has the umask's permissions (0644 under umask 022)."""
    key, rec = synthetic_record(3)
    mask = os.umask(0o022)
    try:
        path = Store(tmp_path).put(key, {**rec, "digest": "sha256:stale"})
    finally:
        os.umask(mask)
    expected = {**rec, "key": key}
    digest = digest_oracle(expected)
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
    key, rec = synthetic_record(3)
    rec["result"]["summary"]["final_val_loss"] = float("nan")
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        Store(tmp_path).put(key, rec)
    assert list(tmp_path.iterdir()) == []


def test_put_says_why_a_record_cannot_be_written(tmp_path: Path) -> None:
    """The CLI prints StoreError's message: the record's path and the OS's reason in words."""
    key, rec = synthetic_record(3)
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / key[:2]).write_text("")  # a file where the shard should be
    path = tmp_path / "records" / key[:2] / f"{key}.json"
    with pytest.raises(StoreError) as caught:
        Store(tmp_path).put(key, rec)
    assert str(caught.value) == f"cannot write record {path}: File exists"


def test_put_says_why_the_log_cannot_be_appended(tmp_path: Path) -> None:
    """A log that cannot be opened (a directory) or takes a short write (disk full): the message
    names the log and the reason."""
    key, rec = synthetic_record(3)
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


def test_put_digests_afresh_and_a_copied_record_reads_back(tmp_path: Path) -> None:
    s, key, _ = _put(tmp_path)
    rec = s.get(key)
    assert rec is not None
    copy = Store(tmp_path / "copy")
    copy.put(rec["key"], {**rec, "digest": "sha256:stale"})
    assert copy.get(rec["key"]) == rec


# ---------------------------------------------------------------- content_digest


def test_content_digest_hashes_sorted_compact_json_whatever_the_key_order() -> None:
    """Equal content in another key order (top level and nested) has one digest: the SHA-256 of
    ``{"a":...,"b":...}`` written by hand, the digest field left out."""
    forward = {"a": 1, "b": {"x": [1, 2], "y": "z"}, "digest": "sha256:old"}
    backward = {"digest": "sha256:other", "b": {"y": "z", "x": [1, 2]}, "a": 1}
    expected = "sha256:" + hashlib.sha256(b'{"a":1,"b":{"x":[1,2],"y":"z"}}').hexdigest()
    assert content_digest(forward) == expected
    assert content_digest(backward) == expected


# ---------------------------------------------------------------- read_record: kind and why


def test_a_sound_record_reads_back_with_empty_kind_and_why(tmp_path: Path) -> None:
    s, key, path = _put(tmp_path)
    rec, kind, why = read_record(path, key)
    assert (kind, why) == ("", "")
    assert rec is not None and rec["digest"] == digest_oracle(rec)
    assert rec["key"] == key and rec["seed"] == 3


def test_a_record_with_its_keys_reordered_reads_as_reformatted(tmp_path: Path) -> None:
    """Same content, same digest, same default `json.dumps` formatting, but keys not in sorted
    order: not the bytes `put` wrote, so damaged (and retrained)."""
    s, key, path = _put(tmp_path)
    rec = json.loads(path.read_text())
    reordered = dict(reversed(list(rec.items())))
    assert list(reordered) != sorted(reordered)
    path.write_text(json.dumps(reordered))
    assert content_digest(json.loads(path.read_text())) == rec["digest"]
    got, kind, why = read_record(path, key)
    assert (got, kind) == (None, "reformatted")
    assert why.startswith(REFORMATTED) and why.endswith("the digest vouches for (reformatted, "
                                                        "or a digit past float precision edited)")
    assert s.get(key) is None
    assert list(s.damaged) == [key] and s.damaged[key] == why


def test_a_json_array_is_not_a_record(tmp_path: Path) -> None:
    path = tmp_path / f"{KEY}.json"
    path.write_text("[1, 2]")
    assert read_record(path, KEY) == (None, "invalid-json", "not a JSON object")


def test_a_record_filed_under_another_key_names_the_key_it_holds(tmp_path: Path) -> None:
    s, key, path = _put(tmp_path)
    other = tmp_path / f"{KEY}.json"
    other.write_text(path.read_text())
    assert read_record(other, KEY) == (
        None, "key-mismatch", f"key field '{key}' differs from the file name")
    other.write_text("{}")
    assert read_record(other, KEY) == (
        None, "key-mismatch", "key field None differs from the file name")


def test_a_record_missing_a_field_says_which(tmp_path: Path) -> None:
    s, key, path = _put(tmp_path)
    rec = json.loads(path.read_text())
    del rec["key_inputs"]
    path.write_text(json.dumps(rec, sort_keys=True))
    assert read_record(path, key) == (
        None, "invalid-record", "missing or invalid field: 'key_inputs'")  # str(KeyError)


def test_a_record_whose_seed_was_edited_does_not_hash_to_its_key(tmp_path: Path) -> None:
    s, key, path = _put(tmp_path)
    rec = json.loads(path.read_text())
    rec["seed"] = 99
    path.write_text(json.dumps(rec, sort_keys=True))
    got, kind, why = read_record(path, key)
    assert (got, kind) == (None, "invalid-record")
    assert why == "content does not hash to its key (edited or corrupted)"


def test_an_unreadable_record_gives_the_os_words(tmp_path: Path) -> None:
    """A directory where the record should be: the OS's own words (its strerror), not the
    exception's full repr with errno and path."""
    path = tmp_path / f"{KEY}.json"
    path.mkdir()
    assert read_record(path, KEY) == (
        None, "unreadable", f"unreadable ({os.strerror(errno.EISDIR)})")


def test_a_record_that_is_not_text_gives_the_decoder_words(tmp_path: Path) -> None:
    """A decoding error has no strerror: its message is given instead."""
    path = tmp_path / f"{KEY}.json"
    data = b"\xff\xfe{}"
    path.write_bytes(data)
    encoding = locale.getpreferredencoding(False)
    with pytest.raises(UnicodeDecodeError) as err:
        data.decode(encoding)
    assert read_record(path, KEY) == (None, "unreadable", f"unreadable ({err.value})")


# ---------------------------------------------------------------- Store.get: absent, damaged


@pytest.mark.parametrize(("damage", "why"), [
    (lambda p: p.write_text("not json"), "not valid JSON"),
    (lambda p: p.write_text("[1, 2]"), "not a JSON object"),
    (lambda p: p.write_text(""), "not valid JSON"),
    (lambda p: (p.unlink(), p.mkdir()), f"unreadable ({os.strerror(errno.EISDIR)})"),
    (lambda p: edit_record(p, lambda rec: rec.update(key=KEY)), "differs from the file name"),
    (lambda p: edit_record(p, lambda rec: rec.pop("key_inputs")), "missing or invalid field"),
    (lambda p: edit_record(p, lambda rec: rec.update(seed=99)), "does not hash to its key"),
])
def test_reads_treat_every_kind_of_damage_as_absent_and_remember_it(
        tmp_path: Path, damage: Callable[[Path], object], why: str) -> None:
    _, sound, _ = _put(tmp_path, 4)
    _, key, path = _put(tmp_path, 3)
    damage(path)
    s = Store(tmp_path / "store")
    assert s.has(sound) and s.get(sound) is not None and s.damaged == {}
    assert not s.has(key) and s.get(key) is None
    assert why in s.damaged[key]
    assert s.newly_damaged() == s.damaged and s.newly_damaged() == {}  # named once
    assert Store(tmp_path / "store").get(KEY) is None  # an absent record is not damage


def test_a_record_found_sound_then_edited_is_damaged_on_the_next_read(tmp_path: Path) -> None:
    """`Store.get` only re-parses a file it has already found sound while it is the same file;
    an edit after the first read (another size or modification time) is checked in full."""
    s, key, path = _put(tmp_path)
    first = s.get(key)
    assert first is not None and s.get(key) == first  # the remembered file, parsed again
    edit_record(path, lambda rec: rec["result"]["summary"].update(seed=99))
    assert s.get(key) is None
    assert key in s.damaged
    assert not s.has(key)


def test_a_record_once_found_damaged_is_judged_in_full_even_at_its_sound_files_stat(
        tmp_path: Path) -> None:
    """A damaged read forgets the sound file's identity: an edit that later restores the
    inode, size and modification time the sound file had is still caught."""
    s, key, path = _put(tmp_path)
    assert s.get(key) is not None
    st, sound = path.stat(), path.read_text()
    path.write_text(sound + " ")
    assert s.get(key) is None
    edited = sound.replace('"seed": 3', '"seed": 4')
    assert edited != sound and len(edited) == len(sound)
    path.write_text(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_ino, path.stat().st_size) == (st.st_ino, st.st_size)
    assert s.get(key) is None and "does not hash to its key" in s.damaged[key]


def test_a_record_replaced_by_another_sound_one_is_read_afresh(tmp_path: Path) -> None:
    """The memo is by file identity, not by key: a record rewritten in place (a retrain) is
    read and checked as the new file."""
    s, key, _ = _put(tmp_path)
    rec: dict[str, Any] | None = s.get(key)
    assert rec is not None
    rec["result"]["summary"]["note"] = "retrained"
    s.put(key, rec)
    again = s.get(key)
    assert again is not None and again["result"]["summary"]["note"] == "retrained"
