"""Pins what the mutation run of `grokverify/engine/record.py` found unpinned.

The surviving mutants all sat in how one seed's record handles divergence: which evaluations
count as a divergence (a non-finite training loss since the last evaluation, reported as the
step `first_bad` >= 0 with -1 as "none", or a non-finite training or validation loss at the
evaluation itself), at which step the divergence is recorded, what `evaluation` returns (the
loop zeroes the seed's loss weight on False) and up to which step probe points still belong to
a diverged record (`last_good_step`). The expected values below are written out by hand from
those rules, on small synthetic evaluations; no training is run.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from grokverify.engine.record import SeedRecord


def _record(early_stop: bool = False) -> SeedRecord:
    return SeedRecord(seed=3, budget=100, train_threshold=0.9, val_threshold=0.8,
                      early_stop=early_stop)


def _two_good_evaluations(rec: SeedRecord) -> None:
    """Steps 10 and 20: train accuracy reaches τ_train = 0.9 at 20, validation never 0.8."""
    assert rec.evaluation(10, 0.5, 0.25, 2.0, 3.0, -1) is True
    assert rec.evaluation(20, 1.0, 0.5, 0.5, 2.5, -1) is True


def _expected_dict(diverged_step: int | None, stopped_step: int) -> dict[str, Any]:
    """The store record of a seed with exactly the two good evaluations above."""
    return {
        "seed": 3, "budget": 100,
        "curves": {
            "train_acc": {"steps": [10, 20], "values": [0.5, 1.0]},
            "val_acc": {"steps": [10, 20], "values": [0.25, 0.5]},
            "train_loss": {"steps": [10, 20], "values": [2.0, 0.5]},
            "val_loss": {"steps": [10, 20], "values": [3.0, 2.5]},
        },
        "summary": {
            "seed": 3, "budget": 100, "train_step": 20, "val_step": None, "gap": None,
            "diverged": diverged_step is not None, "diverged_step": diverged_step,
            "stopped_step": stopped_step,
            "final_train_acc": 1.0, "final_val_acc": 0.5,
            "final_train_loss": 0.5, "final_val_loss": 2.5, "done": False,
        },
        "events": {},
    }


# --- A non-finite training loss between evaluations -------------------------------------------

def test_a_bad_step_since_the_last_evaluation_diverges_the_seed_at_that_step() -> None:
    """A user relies on a seed whose training loss went NaN/inf at step 25 being reported as
    diverged at step 25 (not at the evaluation, step 30), stopped at 30, with nothing of the
    evaluation at 30 recorded even though its own losses are finite, and on `evaluation`
    returning False so the loop stops training that seed."""
    rec = _record()
    _two_good_evaluations(rec)
    assert rec.evaluation(30, 1.0, 0.95, 0.1, 0.2, 25) is False
    assert rec.diverged and rec.finished
    assert rec.to_dict() == _expected_dict(diverged_step=25, stopped_step=30)


def test_a_bad_first_step_numbered_zero_is_a_divergence_not_the_none_sentinel() -> None:
    """`first_bad` is a step number with -1 alone meaning "none": a bad step reported as 0
    must still diverge the seed at step 0, not be read as "no bad step"."""
    rec = _record()
    assert rec.evaluation(10, 1.0, 0.95, 0.1, 0.2, 0) is False
    assert rec.diverged
    assert rec.diverged_step == 0
    assert rec.stopped_step == 10
    assert rec.curves == {}
    assert rec.summary()["train_step"] is None


# --- A non-finite loss at the evaluation itself -----------------------------------------------

@pytest.mark.parametrize(("train_loss", "val_loss"), [
    (math.nan, 0.2),  # training loss alone
    (0.1, math.inf),  # validation loss alone
    (-math.inf, math.nan),  # both
])
def test_a_non_finite_loss_at_the_evaluation_diverges_the_seed_at_the_evaluation(
        train_loss: float, val_loss: float) -> None:
    """With no bad step before it (`first_bad` = -1), a non-finite training *or* validation
    loss at the evaluation of step 30 diverges the seed at step 30 and records nothing of
    that evaluation (its accuracies would otherwise have reached both thresholds)."""
    rec = _record(early_stop=True)
    _two_good_evaluations(rec)
    assert rec.evaluation(30, 1.0, 0.95, train_loss, val_loss, -1) is False
    assert rec.to_dict() == _expected_dict(diverged_step=30, stopped_step=30)


def test_finite_losses_and_no_bad_step_record_the_evaluation() -> None:
    """The control case: an ordinary evaluation is recorded and returns True; with early
    stop on, reaching both thresholds freezes the record (done) without any divergence."""
    rec = _record(early_stop=True)
    _two_good_evaluations(rec)
    assert rec.evaluation(30, 1.0, 0.95, 0.1, 0.2, -1) is True
    assert not rec.diverged
    assert rec.done and rec.finished
    summary = rec.summary()
    assert (summary["train_step"], summary["val_step"], summary["gap"]) == (20, 30, 10)
    assert (summary["diverged_step"], summary["stopped_step"]) == (None, 30)
    assert rec.curves["val_loss"] == ([10, 20, 30], [3.0, 2.5, 0.2])


# --- Which probe points belong to the record --------------------------------------------------

def test_probe_points_of_a_diverged_seed_stop_just_before_its_first_bad_step() -> None:
    """The loop keeps a seed's probe points up to `last_good_step()`: for a seed diverged at
    step 25 that is step 24 (the state before the bad step), whatever the evaluation step."""
    rec = _record()
    _two_good_evaluations(rec)
    assert rec.last_good_step() == 20
    rec.evaluation(30, 1.0, 0.95, 0.1, 0.2, 25)
    assert rec.last_good_step() == 24


def test_probe_points_of_a_seed_diverged_at_an_evaluation_stop_before_it() -> None:
    """A seed whose loss is non-finite at the evaluation of step 40 keeps points up to 39."""
    rec = _record()
    _two_good_evaluations(rec)
    rec.evaluation(40, 1.0, 0.95, math.nan, 0.2, -1)
    assert rec.last_good_step() == 39
