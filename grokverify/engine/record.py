"""One seed's record as training builds it: named curves, threshold events, divergence, and
the summary that metrics and reports read. `to_dict` is the store record's "result"."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from grokverify.claim.interventions import EVAL_CURVES


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


@dataclass
class SeedRecord:
    seed: int
    budget: int
    train_threshold: float
    val_threshold: float
    early_stop: bool
    curves: dict[str, tuple[list[int], list[float | None]]] = field(default_factory=dict)
    train_step: int | None = None  # first evaluation with train accuracy >= τ_train
    val_step: int | None = None  # first evaluation with validation accuracy >= τ_val
    diverged_step: int | None = None  # first step whose training loss was NaN/inf
    stopped_step: int = 0  # last recorded step (budget, early stop or divergence)
    done: bool = False  # both thresholds reached and early_stop: the record is frozen
    events: dict[str, int] = field(default_factory=dict)  # e.g. {"freeze_embeddings": 400}

    @property
    def diverged(self) -> bool:
        return self.diverged_step is not None

    @property
    def finished(self) -> bool:
        return self.done or self.diverged

    def add(self, curve: str, step: int, value: float) -> None:
        steps, values = self.curves.setdefault(curve, ([], []))
        steps.append(int(step))
        values.append(_finite_or_none(float(value)))

    def evaluation(self, step: int, train_acc: float, val_acc: float, train_loss: float,
                   val_loss: float, first_bad: int) -> bool:
        """Record one evaluation; False when the seed diverged since the last one (a non-finite
        training loss at step `first_bad` >= 0, or a non-finite loss now): it is then marked
        and nothing of this evaluation is recorded."""
        if first_bad >= 0 or not (math.isfinite(train_loss) and math.isfinite(val_loss)):
            self.diverged_step = first_bad if first_bad >= 0 else step
            self.stopped_step = step
            return False
        for name, value in zip(EVAL_CURVES, (train_acc, val_acc, train_loss, val_loss),
                               strict=True):
            self.add(name, step, value)
        self.stopped_step = step
        if self.train_step is None and train_acc >= self.train_threshold:
            self.train_step = step
        if self.val_step is None and val_acc >= self.val_threshold:
            self.val_step = step
        self.done = self.early_stop and self.train_step is not None and self.val_step is not None
        return True

    def last_good_step(self) -> int:
        """Probe points up to this step belong to the record: the frozen step of an early
        stop, the state before the first bad step of a diverged seed."""
        if self.diverged_step is not None:
            return self.diverged_step - 1
        return self.stopped_step

    def summary(self) -> dict[str, Any]:
        def last(name: str) -> float | None:
            values = self.curves.get(name, ([], []))[1]
            return values[-1] if values else None

        gap = None if self.train_step is None or self.val_step is None else \
            self.val_step - self.train_step
        return {
            "seed": self.seed, "budget": self.budget, "train_step": self.train_step,
            "val_step": self.val_step, "gap": gap, "diverged": self.diverged,
            "diverged_step": self.diverged_step, "stopped_step": self.stopped_step,
            "final_train_acc": last("train_acc"), "final_val_acc": last("val_acc"),
            "final_train_loss": last("train_loss"), "final_val_loss": last("val_loss"),
            "done": self.done,
        }

    def to_dict(self) -> dict[str, Any]:
        curves = {name: {"steps": steps, "values": values}
                  for name, (steps, values) in self.curves.items()}
        return {"seed": self.seed, "budget": self.budget, "curves": curves,
                "summary": self.summary(), "events": dict(self.events)}
