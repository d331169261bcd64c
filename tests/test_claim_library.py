"""The shipped claims' quick scales keep the settings each claim is about (docs/verdicts.md,
"Faithful quick scales"): what a smaller scale may shrink and what it may not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grokverify.claim.load import load_claim

CLAIMS = Path(__file__).resolve().parents[1] / "claims"


def _arms(name: str, scale: str) -> dict[str, Any]:
    loaded = load_claim(CLAIMS / f"{name}.yaml")
    return {f"{m}/{a}": exp for m, arms in loaded.members(scale).items()
            for a, exp in arms.items()}


@pytest.mark.parametrize("name", ["p1_c_sweep_fastest", "p1_c32_fails"])
def test_a_c_sweep_keeps_the_papers_base_lr_and_every_multiplier(name: str) -> None:
    """c multiplies the base lr: the instability the claim is about is at c × 1e-2."""
    quick, paper = _arms(name, "quick"), _arms(name, "paper")
    assert quick.keys() == paper.keys()
    for arm, exp in quick.items():
        assert exp.optimizer.lr == paper[arm].optimizer.lr == 0.01, arm
        assert exp.optimizer.emb_lr_mult == paper[arm].optimizer.emb_lr_mult, arm


@pytest.mark.parametrize("name", ["p1_skewed_split_fails", "p1_skewed_split_fits",
                                  "p1_uniform_split_faster", "p1_uniform_split_gap_vanishes"])
def test_a_split_claim_keeps_the_papers_split_model_and_batch_share(name: str) -> None:
    """Token starvation depends on p, the training fraction and the batch's share of the
    training pairs: the quick scale shrinks only the budget (and the weight decay)."""
    quick, paper = _arms(name, "quick"), _arms(name, "paper")
    for arm, exp in quick.items():
        ref = paper[arm]
        assert exp.task == ref.task, arm
        assert exp.model == ref.model, arm
        assert exp.training.batch_size == ref.training.batch_size, arm
        assert exp.optimizer.lr == ref.optimizer.lr, arm
        assert exp.training.steps < ref.training.steps, arm
