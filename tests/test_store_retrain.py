"""A damaged record (docs/store.md, "Integrity and threat model") fails `store verify`, and the
next `run` names it, retrains it and never reuses it: the records and the verdict come back as
they were. On copies of the tiny claim's stored run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from storedata import copy_tiny_store, edit_record, records_of, run_cli, verify_cli
from suitedata import tiny_run

from grokverify.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return copy_tiny_store(tmp_path)


def _results(store: Path) -> dict[str, Any]:
    return {p.stem: json.loads(p.read_text())["result"] for p in records_of(store)}


def _verdict(base: Path) -> dict[str, Any]:
    return json.loads((base / "reports" / "tiny" / "result.json").read_text())["result"]


def _assert_restored(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every record sound again, with the untampered results, and the untampered verdict."""
    assert _results(store) == _results(tiny_run() / "store")
    assert _verdict(store.parent) == _verdict(tiny_run())
    code, out = verify_cli(store, capsys)
    assert code == 0, out


def test_an_edited_summary_fails_verify_and_is_retrained(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """val_step null -> 100 in every seed that never reached the threshold: reusing the edited
    records would change the verdict."""
    edited = [p for p in records_of(store)
              if json.loads(p.read_text())["result"]["summary"]["val_step"] is None]
    assert edited
    for path in edited:
        edit_record(path, lambda rec: rec["result"]["summary"].update(val_step=100))
    assert Store(store).get(edited[0].stem) is None
    code, out = verify_cli(store, capsys)
    assert code == 1
    assert out.count("digest-mismatch") == len(edited)
    assert all(str(p) in out for p in edited)

    code, out = run_cli(store, capsys)
    assert code == 0, out
    assert out.count("damaged record tiny") == len(edited)
    assert "does not match its digest" in out and "retraining it" in out
    assert f"trained {len(edited)} seed(s), reused {6 - len(edited)}" in out
    _assert_restored(store, capsys)


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
        store: Path, capsys: pytest.CaptureFixture[str],
        edit: Callable[[str, dict[str, Any]], str], kind: str) -> None:
    path = records_of(store)[0]
    text = path.read_text()
    path.write_text(edit(text, json.loads(text)))
    assert sum(a != b for a, b in zip(text, path.read_text(), strict=True)) == 1

    code, out = verify_cli(store, capsys)
    assert code == 1 and f"{kind} {path}" in out
    code, out = run_cli(store, capsys)
    assert code == 0 and "damaged record tiny" in out and "trained 1 seed(s), reused 5" in out
    _assert_restored(store, capsys)


def test_a_truncated_record_is_retrained_not_a_crash(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = records_of(store)[2]
    path.write_text(path.read_text()[:len(path.read_text()) // 2])
    code, out = verify_cli(store, capsys)
    assert code == 1 and f"invalid-json {path}" in out

    code, out = run_cli(store, capsys)
    assert code == 0, out
    assert "Traceback" not in out
    assert f"({path}): not valid JSON" in out and "retraining it" in out
    assert "trained 1 seed(s), reused 5" in out
    _assert_restored(store, capsys)


def test_a_record_without_a_digest_is_retrained(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Sound otherwise, but nothing vouches for its result."""
    path = records_of(store)[1]
    edit_record(path, lambda rec: rec.pop("digest"))
    code, out = verify_cli(store, capsys)
    assert code == 1 and f"no-digest {path}: no digest" in out
    code, out = run_cli(store, capsys)
    assert code == 0 and "no digest" in out and "retraining it" in out
    assert "trained 1 seed(s), reused 5" in out
    _assert_restored(store, capsys)


def test_deleting_one_damaged_record_does_not_let_run_reuse_the_others(
        store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = records_of(store)[:2]
    for path in (first, second):
        edit_record(path, lambda rec: rec["result"]["summary"].update(final_val_acc=-1.0))
    code, out = verify_cli(store, capsys)
    assert code == 1 and str(first) in out and str(second) in out
    first.unlink()  # the user deletes the one verify named first, and reruns
    code, out = run_cli(store, capsys)
    assert code == 0 and out.count("damaged record") == 1 and str(second) in out
    assert "trained 2 seed(s), reused 4" in out
    _assert_restored(store, capsys)
