"""Pins what the mutation run of `grokverify/store.py` (reading records, digests, locks) and of
`ArmSample` in `grokverify/stats/base.py` found unpinned.

Store: `read_record` answers ``(record, "", "")`` for a sound record and ``(None, kind, why)``
for a damaged one, and `verify` prints that kind and why for every damaged record, so both are
pinned exactly for each kind of damage (a file that is no JSON object, one filed under another
key, one missing a field, one whose content does not hash to its key, one that is unreadable
or not text, one whose keys are re-ordered); `content_digest` hashes *sorted* compact JSON
whatever order the keys came in; a liveness probe of a lock's owner sends signal 0 (and pid 1
names one process, so it is probed, not judged by age); `check_writable` reports the OS's
words. Records are built by hand on a `tmp_path` store (no training); the expected digests come
from `hashlib` on hand-written JSON, the expected OS words from `os.strerror`.

ArmSample: coercion of values / observed / seeds / extra columns (float, bool, flat, Python
ints) and every refusal with its exact message, written out by hand from the docstring.
"""

from __future__ import annotations

import errno
import hashlib
import json
import locale
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grokverify import store as store_mod
from grokverify.claim.experiment import ExperimentSpec
from grokverify.stats.base import ArmSample
from grokverify.store import Store, StoreError, content_digest, hash_key, key_inputs, read_record

EXP = {"task": {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3},
       "model": {"kind": "embed_mlp", "d": 8, "hidden": 16},
       "optimizer": {"name": "adamw", "lr": 0.01}, "training": {"steps": 40, "eval_interval": 10}}
KEY = "ab" * 32
HOST = platform.node()


def _record(seed: int) -> tuple[str, dict[str, Any]]:
    """(key, record) of one seed as `execute` builds it (no training)."""
    exp = ExperimentSpec.model_validate(EXP)
    inputs = key_inputs(exp, seed, "cpu")
    rec = {"experiment": exp.model_dump(mode="json"),
           "results_version": inputs["results_version"], "seed": seed, "key_inputs": inputs,
           "result": {"summary": {"seed": seed, "val_step": None}}}
    return hash_key(inputs), rec


def _put(tmp_path: Path, seed: int = 3) -> tuple[Store, str, Path]:
    s = Store(tmp_path / "store")
    key, rec = _record(seed)
    return s, key, s.put(key, rec)


def _digest_oracle(body: dict[str, Any]) -> str:
    """SHA-256 of the record's compact JSON with sorted keys, its digest field left out (written
    without `content_digest`)."""
    body = {k: v for k, v in body.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------- content_digest


def test_content_digest_hashes_sorted_compact_json_whatever_the_key_order() -> None:
    """Two dicts with equal content in different key order (top level and nested) have one
    digest: the SHA-256 of ``{"a":...,"b":...}`` written by hand, the digest field left out."""
    forward = {"a": 1, "b": {"x": [1, 2], "y": "z"}, "digest": "sha256:old"}
    backward = {"digest": "sha256:other", "b": {"y": "z", "x": [1, 2]}, "a": 1}
    expected = "sha256:" + hashlib.sha256(b'{"a":1,"b":{"x":[1,2],"y":"z"}}').hexdigest()
    assert content_digest(forward) == expected
    assert content_digest(backward) == expected


# ---------------------------------------------------------------- read_record


def test_a_sound_record_reads_back_with_empty_kind_and_why(tmp_path: Path) -> None:
    s, key, path = _put(tmp_path)
    rec, kind, why = read_record(path, key)
    assert (kind, why) == ("", "")
    assert rec is not None and rec["digest"] == _digest_oracle(rec)
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
    assert read_record(path, key) == (
        None, "reformatted",
        "not the bytes its writer wrote, though it parses to what the digest vouches for "
        "(reformatted, or a digit past float precision edited)")
    assert s.get(key) is None
    assert s.damaged == {key: "not the bytes its writer wrote, though it parses to what the "
                              "digest vouches for (reformatted, or a digit past float precision "
                              "edited)"}


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
    assert read_record(path, key) == (
        None, "invalid-record", "content does not hash to its key (edited or corrupted)")


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


# ---------------------------------------------------------------- locks and check_writable


def test_probing_a_lock_owner_sends_signal_zero(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Liveness is asked with signal 0 (no signal is delivered); anything else would hit the
    owner (1 is SIGHUP)."""
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(store_mod.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    s = Store(tmp_path)
    path = s.lock_path(KEY)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"host": HOST, "pid": 4242}))
    assert s.locked_by_other(KEY) is True
    assert sent == [(4242, 0)]


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
    path = s.lock_path(KEY)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"host": HOST, "pid": 1}))
    day_ago = time.time() - 86400.0
    os.utime(path, (day_ago, day_ago))
    assert s.locked_by_other(KEY) is True
    alive["answer"] = False
    os.utime(path, None)  # fresh
    assert s.locked_by_other(KEY) is False
    assert asked == [1, 1]


def test_an_unwritable_store_is_refused_in_the_os_words(tmp_path: Path) -> None:
    """A store under a regular file cannot take folders: StoreError with the OS's strerror."""
    blocker = tmp_path / "afile"
    blocker.write_text("")
    root = blocker / "store"
    with pytest.raises(StoreError) as err:
        Store(root).check_writable()
    assert str(err.value) == f"store {root} is not writable: {os.strerror(errno.ENOTDIR)}"


# ---------------------------------------------------------------- ArmSample


def test_an_arm_coerces_to_flat_float_and_bool_and_python_int_seeds() -> None:
    arm = ArmSample("a", [[1, 2], [3, 4]], [[1, 0], [1, 1]],  # type: ignore[arg-type]
                    [np.int64(5), 6, 7, 8])  # type: ignore[arg-type]
    assert arm.values.dtype == np.float64 and arm.values.shape == (4,)
    assert arm.values.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert arm.observed.dtype == np.bool_ and arm.observed.shape == (4,)
    assert arm.observed.tolist() == [True, False, True, True]
    assert arm.seeds == (5, 6, 7, 8) and all(type(s) is int for s in arm.seeds)
    assert (arm.n, arm.events) == (4, 3)
    assert arm.extra == {}


def test_an_arm_coerces_its_extra_metrics_and_their_observed_masks() -> None:
    arm = ArmSample("a", [1.0, 2.0], [True, True], (0, 1),
                    extra={"x": [[3], [0]], "x.observed": [[1], [0]],  # type: ignore[dict-item]
                           7: [0.5, 2]})  # type: ignore[dict-item]
    assert sorted(arm.extra) == ["7", "x", "x.observed"]
    assert arm.extra["x"].dtype == np.float64 and arm.extra["x"].shape == (2,)
    assert arm.extra["x"].tolist() == [3.0, 0.0]
    assert arm.extra["x.observed"].dtype == np.bool_ and arm.extra["x.observed"].shape == (2,)
    assert arm.extra["x.observed"].tolist() == [True, False]
    assert arm.extra["7"].dtype == np.float64 and arm.extra["7"].tolist() == [0.5, 2.0]


def test_a_value_arm_with_every_value_observed_is_accepted() -> None:
    arm = ArmSample("v", [-1.5, 2.0], [True, True], (0, 1), kind="value")
    assert arm.values.tolist() == [-1.5, 2.0] and arm.events == 2


def _refusal(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(ValueError) as err:
        ArmSample(*args, **kwargs)
    return str(err.value)


def test_arms_are_refused_with_their_name_and_why() -> None:
    assert _refusal("a", [1.0, 2.0], [True], (0, 1)) == (
        "arm 'a': values and observed differ in length")
    assert _refusal("a", [1.0, 2.0], [True, True], (0, 1, 2)) == "arm 'a': 3 seeds for 2 values"
    assert _refusal("a", [1.0], [True], (0,), kind="count") == (
        "arm 'a': unknown metric kind 'count'")
    assert _refusal("a", [1.0, -1.0], [True, True], (0, 1)) == (
        "arm 'a': times must be finite and >= 0")
    assert _refusal("a", [1.0, np.inf], [True, False], (0, 1)) == (
        "arm 'a': times must be finite and >= 0")
    assert _refusal("a", [1.0, 2.0], [True, True], (0, 1), extra={"x": [1.0, 2.0, 3.0]}) == (
        "arm 'a': extra metric 'x' has 3 values for 2 seeds")


def test_a_time_arm_at_zero_and_censored_is_accepted() -> None:
    arm = ArmSample("a", [0.0, 500.0], [True, False], (0, 1))
    assert arm.values.tolist() == [0.0, 500.0] and arm.observed.tolist() == [True, False]
    assert arm.events == 1
