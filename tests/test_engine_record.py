"""One seed's record (`grokverify.engine.record.SeedRecord`) at a divergence: which evaluations
count (a non-finite training loss since the last one, `first_bad` >= 0 with -1 for none, or a
non-finite loss at the evaluation itself), the step recorded, what `evaluation` returns (the loop
zeroes the seed's loss weight on False) and the probe points kept (`last_good_step`); expected
values by hand on synthetic evaluations."""

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


# ------------------------------------------------------------ a bad step between evaluations

def test_a_bad_step_since_the_last_evaluation_diverges_the_seed_at_that_step() -> None:
    """A loss gone non-finite at step 25: diverged at 25 (not at the evaluation, 30), stopped at
    30, nothing of the evaluation at 30 recorded (its losses finite), and False returned."""
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


# ------------------------------------------------------------ a non-finite evaluation

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
    """The control: an ordinary evaluation is recorded and returns True; with early stop on,
    reaching both thresholds freezes the record (done) without any divergence."""
    rec = _record(early_stop=True)
    _two_good_evaluations(rec)
    assert rec.evaluation(30, 1.0, 0.95, 0.1, 0.2, -1) is True
    assert not rec.diverged
    assert rec.done and rec.finished
    summary = rec.summary()
    assert (summary["train_step"], summary["val_step"], summary["gap"]) == (20, 30, 10)
    assert (summary["diverged_step"], summary["stopped_step"]) == (None, 30)
    assert rec.curves["val_loss"] == ([10, 20, 30], [3.0, 2.5, 0.2])


# ------------------------------------------------------------ probe points kept

def test_probe_points_of_a_diverged_seed_stop_just_before_its_first_bad_step() -> None:
    """A seed diverged at step 25 keeps its points up to 24 (the state before the bad step),
    whatever the evaluation step."""
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


# a threshold is reached at the first evaluation whose accuracy is *at least* τ (by hand)


def _thresholds(train_threshold: float, val_threshold: float) -> SeedRecord:
    return SeedRecord(seed=0, budget=40, train_threshold=train_threshold,
                      val_threshold=val_threshold, early_stop=False)


def _evaluate_accuracies(rec: SeedRecord, train: list[float], val: list[float]) -> None:
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
    rec = _thresholds(threshold, 0.9)
    _evaluate_accuracies(rec, train, [0.0, 0.0, 0.9, 0.95])
    assert rec.train_step == expected
    assert rec.val_step == 20  # 0.9 at step 20 is exactly τ_val = 0.9
    summary = rec.summary()
    assert (summary["train_step"], summary["val_step"]) == (expected, 20)
