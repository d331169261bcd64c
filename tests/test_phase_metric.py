"""Paper 2's Table 1 phases as a metric (phase_is): each phase from hand-made threshold steps,
the lag's boundary, exactly one phase per run, a diverged run left out, bad fields refused,
and in a claim file a tiny trained arm's shares summing to 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest

from grokverify.claim.load import load_claim
from grokverify.claim.metrics import PHASES, PhaseIs
from grokverify.engine.loop import train_seeds
from grokverify.stats.arms import DIVERGED, seed_value
from grokverify.stats.metrics import observe, phase_of


def _run(fit: int | None, val: int | None, budget: int = 100_000,
         diverged: bool = False) -> dict[str, Any]:
    return {"curves": {}, "summary": {"train_step": fit, "val_step": val, "budget": budget,
                                      "diverged": diverged, "done": False,
                                      "stopped_step": budget}}


def _phase(phase: str, lag: int = 1000) -> PhaseIs:
    return PhaseIs.model_validate({"name": "phase_is", "phase": phase, "lag": lag})


@pytest.mark.parametrize(("fit", "val", "want"), [
    (200, 500, "comprehension"),       # validation 300 steps behind
    (200, 1199, "comprehension"),      # 999 behind: under the lag
    (200, 1200, "grokking"),           # 1,000 behind: the lag itself is grokking
    (200, 40_000, "grokking"),
    (100, 100, "comprehension"),       # together
    (500, 300, "comprehension"),       # validation first
    (200, None, "memorization"),       # fitted, never generalised in the budget
    (None, None, "confusion"),
    (None, 3000, "confusion"),         # never fitted, whatever validation did
])
def test_each_phase_from_the_threshold_steps(fit, val, want) -> None:
    run = _run(fit, val)
    assert phase_of(run, 1000) == want
    got = {phase: observe(_phase(phase), run) for phase in PHASES}
    assert got == {phase: (float(phase == want), True) for phase in PHASES}


def test_the_lag_is_declared_and_a_diverged_run_is_left_out() -> None:
    assert observe(_phase("grokking", lag=100), _run(200, 500)) == (1.0, True)
    assert observe(_phase("comprehension", lag=100), _run(200, 500)) == (0.0, True)
    assert seed_value(_phase("grokking"), {"result": _run(200, None, diverged=True)}) == DIVERGED
    spec = _phase("memorization", lag=500)
    assert spec.kind == "value" and spec.curves() == []
    assert spec.describe() == ("1 when the run is in the memorization phase of paper 2's "
                               "Table 1 (lag 500 steps between the training and validation "
                               "thresholds), else 0.")


@pytest.mark.parametrize("bad", [{"phase": "grokked"}, {"lag": 0}, {"lag": -5},
                                 {"threshold": 0.9}, {}])
def test_bad_fields_are_refused(bad: dict[str, Any]) -> None:
    fields = {"name": "phase_is", "phase": "grokking", **bad}
    if not bad:
        del fields["phase"]
    with pytest.raises(pydantic.ValidationError):
        PhaseIs.model_validate(fields)


CLAIM = """\
id: phase_tiny
title: Tiny phase claim
statement: test fixture.
source: {arxiv: "2205.10343", where: test fixture, role: inference, quote: test fixture}
base:
  task: {op: add, p: 7, modular: false, unordered: true, train_frac: 0.6, test_frac: null}
  model: {kind: toy_sum, hidden: 16, emb_dim: 1}
  optimizer: {name: adamw, lr: 0.01}
  training: {steps: 300, eval_interval: 50, train_threshold: 0.9, val_threshold: 0.9}
arms:
  toy: {}
scales:
  quick: {description: test scale}
seeds: 6
metric: {name: phase_is, phase: grokking, lag: 100}
criterion: {name: proportion, arm: toy, outcome: value_above, cut: 0.5, direction: greater,
            threshold: 0.1}
"""


def test_in_a_claim_every_seed_has_exactly_one_phase(tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM, encoding="utf-8")
    loaded = load_claim(path)
    records = train_seeds(loaded.resolved["quick"]["toy"], list(range(6)))
    for rec in records:
        values = [observe(_phase(ph, 100), rec)[0] for ph in PHASES]  # type: ignore[index]
        assert sorted(values) == [0.0, 0.0, 0.0, 1.0]
