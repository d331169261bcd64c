"""Records, locks and stores for the store tests: a synthetic record built by hand (no training),
and a copy of the tiny claim's stored run (tests/suitedata.py) for tests that damage real ones."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import has_phrase
from suitedata import TINY, tiny_run

from grokverify.claim.experiment import ExperimentSpec
from grokverify.cli import main
from grokverify.store import VerifyReport, hash_key, key_inputs

EXP = {"task": {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3},
       "model": {"kind": "embed_mlp", "d": 8, "hidden": 16},
       "optimizer": {"name": "adamw", "lr": 0.01}, "training": {"steps": 40, "eval_interval": 10}}
KEY = "ab" * 32
OTHER_KEY = "cd" * 32
HOST = platform.node()


def synthetic_record(seed: int, **environment: str) -> tuple[str, dict[str, Any]]:
    """(key, record) of one seed as `execute` builds it, with parts of the key's environment
    (`results_version`, `torch`) replaced when given."""
    exp = ExperimentSpec.model_validate(EXP)
    inputs = {**key_inputs(exp, seed, "cpu"), **environment}
    rec = {"experiment": exp.model_dump(mode="json"),
           "results_version": inputs["results_version"], "seed": seed, "key_inputs": inputs,
           "result": {"summary": {"seed": seed, "val_step": None}}}
    return hash_key(inputs), rec


def digest_oracle(record: dict[str, Any]) -> str:
    """A record's digest written without `content_digest`: SHA-256 of its compact sorted JSON
    without the digest field."""
    body = json.dumps({k: v for k, v in record.items() if k != "digest"}, sort_keys=True,
                      separators=(",", ":"))
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def write_lock(path: Path, owner: dict[str, Any], age_s: float = 0.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(owner))
    if age_s:
        then = time.time() - age_s
        os.utime(path, (then, then))


def stale_lock(path: Path) -> None:
    """A lock of a dead process of this host."""
    write_lock(path, {"host": HOST, "pid": dead_pid(), "time": 0})


def assert_findings(report: VerifyReport, expected: list[tuple[str, Path | str, str]]) -> None:
    """`verify`'s findings are (kind, path) as expected, in order, each why holding its phrase."""
    assert [(f.kind, f.path) for f in report.findings] == [(k, str(p)) for k, p, _ in expected]
    for finding, (_, _, phrase) in zip(report.findings, expected, strict=True):
        assert has_phrase(finding.why, phrase), finding


# ---------------------------------------------------------------- the tiny claim's stored run


def copy_tiny_store(tmp_path: Path) -> Path:
    """A copy of the tiny claim's store (6 seeds) at tmp_path/store, for a test to damage."""
    shutil.copytree(tiny_run() / "store", tmp_path / "store")
    return tmp_path / "store"


def records_of(store: Path) -> list[Path]:
    return sorted((store / "records").rglob("*.json"))


def edit_record(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change a record as a user with an editor would: the digest is left as it was."""
    rec = json.loads(path.read_text())
    change(rec)
    path.write_text(json.dumps(rec, sort_keys=True))


def verify_cli(store: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["store", "verify", "--store", str(store)])
    return code, capsys.readouterr().out


def run_cli(store: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`grokverify run` of the tiny claim on `store`, its reports beside it."""
    capsys.readouterr()
    code = main(["run", str(TINY), "--executor", "local", "--device", "cpu", "--store",
                 str(store), "--reports", str(store.parent / "reports")])
    return code, capsys.readouterr().out
