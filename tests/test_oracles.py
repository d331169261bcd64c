"""Promises checked against values derived by hand, not by the code's own rule (issue 14).

Each test states its expected values from the definition in the docs (a threshold is reached at
the first evaluation whose accuracy is *at least* τ; a lock from another host is honoured for
six hours), on small synthetic inputs, so that a change of the rule fails here even when the
code and a test that re-derives the rule would change together.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from grokverify.engine.record import SeedRecord
from grokverify.store import Store

KEY = "cd" * 32


def _record(train_threshold: float, val_threshold: float) -> SeedRecord:
    return SeedRecord(seed=0, budget=40, train_threshold=train_threshold,
                      val_threshold=val_threshold, early_stop=False)


def _evaluate(rec: SeedRecord, train: list[float], val: list[float]) -> None:
    for i, (tr, va) in enumerate(zip(train, val, strict=True)):
        assert rec.evaluation(10 * i, tr, va, 1.0, 1.0, -1)


@pytest.mark.parametrize(("threshold", "train", "expected"), [
    # accuracies of 4 training pairs are multiples of 1/4: 0.75 is reached *at* 0.75
    (0.75, [0.25, 0.5, 0.75, 1.0], 20),
    # τ = 1.0 (a full fit) is reached when the accuracy is exactly 1.0
    (1.0, [0.5, 0.75, 1.0, 1.0], 20),
    (0.5, [0.5, 0.5, 0.75, 1.0], 0),
    (0.8, [0.5, 0.75, 0.75, 0.79999], None),  # never at or above τ: censored
])
def test_a_threshold_is_reached_at_the_first_evaluation_at_or_above_it(
        threshold: float, train: list[float], expected: int | None) -> None:
    rec = _record(threshold, 0.9)
    _evaluate(rec, train, [0.0, 0.0, 0.9, 0.95])
    assert rec.train_step == expected
    assert rec.val_step == 20  # 0.9 at step 20 is exactly τ_val = 0.9
    summary = rec.summary()
    assert (summary["train_step"], summary["val_step"]) == (expected, 20)


def _foreign_lock(store: Store, age_s: float) -> Path:
    """A lock written by a process on another host (whose pid means nothing here), `age_s` old."""
    path = store.lock_path(KEY)
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
    assert store.locked_by_other(KEY)
    assert store.try_lock(KEY) is False
    assert path.read_text() == before  # not taken over, not rewritten


def test_another_hosts_lock_older_than_six_hours_is_taken_over(tmp_path: Path) -> None:
    store = Store(tmp_path)
    path = _foreign_lock(store, 6.1 * 3600)
    assert not store.locked_by_other(KEY)
    assert store.try_lock(KEY) is True
    assert json.loads(path.read_text())["pid"] == os.getpid()
