"""reaches_ratio: the first recorded step a curve reaches a level, over the step an accuracy
reaches its threshold in the same seed (paper 2's "the circle appears at generalisation").
Hand-made records with the answer worked out by hand."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from grokverify.claim.metrics import ReachesRatio
from grokverify.stats.arms import seed_value
from grokverify.stats.metrics import observe

STEPS = [0, 100, 200, 300, 400, 500]


def record(values: list[float | None], train_step: int | None = 100,
           val_step: int | None = 400) -> dict[str, Any]:
    return {"curves": {"pca.circular": {"steps": STEPS[:len(values)], "values": values}},
            "summary": {"train_step": train_step, "val_step": val_step, "budget": 500,
                        "diverged": False}}


def ratio(against: str = "val_threshold_step", direction: str = "above",
          level: float = 1.0) -> ReachesRatio:
    return ReachesRatio.model_validate({"name": "reaches_ratio", "curve": "pca.circular",
                                        "level": level, "direction": direction,
                                        "against": against})


@pytest.mark.parametrize(("values", "spec", "expected"), [
    ([0, 0, 0, 1, 1, 1], ratio(), (300 / 400, True)),         # before generalisation
    ([0, 0, 0, 0, 0, 1], ratio(), (500 / 400, True)),         # after it
    ([0, 1, 0, 1, 1, 1], ratio(), (100 / 400, True)),         # the first step counts
    ([0, 0, 0, 0, 0, 0], ratio(), (500 / 400, False)),        # never: censored at the last step
    ([0, 0, None, 0.5, 1], ratio(level=0.5), (300 / 400, True)),  # equal counts; null skipped
    ([0, 0, 1, 1], ratio("train_threshold_step"), (200 / 100, True)),
    ([3, 2, 1, 0], ratio(direction="below", level=1), (200 / 400, True)),
])
def test_hand_made_records(values: list[float | None], spec: ReachesRatio,
                           expected: tuple[float, bool]) -> None:
    assert observe(spec, record(values)) == expected


def test_a_threshold_at_step_0_counts_as_step_1_and_a_missing_one_is_undefined() -> None:
    assert observe(ratio(), record([0, 1], val_step=0)) == (100.0, True)
    assert observe(ratio(), record([0, 1], val_step=None)) is None
    assert seed_value(ratio(), {"result": record([0, 1], val_step=None)}) == ratio().undefined


def test_spec_is_a_time_metric_that_needs_its_event() -> None:
    assert ReachesRatio.kind == "time" and ratio().on_diverged == "exclude"
    assert ratio().curves() == ["pca.circular"]
    with pytest.raises(pydantic.ValidationError):
        ReachesRatio.model_validate({"name": "reaches_ratio", "curve": "c", "level": 1})
