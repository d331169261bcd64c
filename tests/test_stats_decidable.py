"""A claim bounded by its budget: said by `plan` before the full run and first in the reason
after it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter

from grokverify.cli import main
from grokverify.kinds import CRITERIA
from grokverify.stats.decidable import budget_bound
from grokverify.stats.simulate import make_arm


def _params(min_effect: float, **kw: object) -> object:
    return TypeAdapter(CRITERIA.union()).validate_python(
        {"name": "survival_compare", "baseline": "b", "treated": "t", "direction": "less",
         "min_effect": min_effect} | kw)


def _arms(treated: list[float]) -> dict[str, object]:
    never = make_arm("b", [1000.0] * 6, [0] * 6)  # no seed of the baseline within 1,000 steps
    return {"b": never, "t": make_arm("t", treated, [1] * len(treated))}


def test_a_censored_baseline_bounds_the_ratio_and_names_the_budget_that_could_decide() -> None:
    arms = _arms([850.0, 880, 900, 900, 920, 950])
    why = budget_bound(_params(0.2), arms)
    for phrase in ("Bounded by the budget", "0 of 6 seeds reach the event",
                   "900 / 1000 = 0.9", "above θ = 0.8", "no number of seeds",
                   "A budget above 1125 steps"):
        assert phrase in why, why
    assert budget_bound(_params(0.2), _arms([400.0, 450, 500, 500, 550, 600])) is None
    assert budget_bound(_params(0.2, effect="difference"), arms) is None
    assert budget_bound(_params(0.2, summary="rmst", tau=900.0), arms) is None
    scalar = {"name": "scalar_compare", "censored": "restricted"}
    assert "900 / 1000 = 0.9" in budget_bound(_params(0.2, **scalar), arms)
    assert budget_bound(_params(0.2, statistic="mean", **scalar), arms) is None


def test_plan_says_before_the_run_and_the_reason_after(tmp_path: Path, tiny_claim: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    claim = tmp_path / "tiny.yaml"  # c1 reaches the threshold in 1 of 3 seeds; c10's median 190
    claim.write_text(tiny_claim.read_text().replace("min_effect: 0.2", "min_effect: 0.5"))
    store, reports = str(tmp_path / "s"), str(tmp_path / "r")
    assert main(["run", str(claim), "--executor", "local", "--store", store, "--reports",
                 reports, "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "Bounded by the budget" in out and "190 / 300 = 0.633" in out
    assert main(["plan", str(claim), "--store", store, "--n-sim", "20",
                 "--candidates", "4,8"]) == 0
    out = capsys.readouterr().out
    assert "Bounded by the budget" in out and "A budget above 380 steps" in out


def test_more_seeds_gives_the_chance_of_each_verdict_at_more_seeds() -> None:
    from conftest import lognormal_arm

    from grokverify.stats.decidable import more_seeds

    arms = {"b": lognormal_arm("b", 1000, seed=1, n=4), "t": lognormal_arm("t", 450, seed=2, n=4)}
    found = more_seeds(_params(0.2, n_boot=200), arms)
    assert found["seeds"] == [8, 16, 32] and found["n_sim"] == 40
    assert found["p_supported"][-1] >= 0.8 and found["p_refuted"] == [0.0, 0.0, 0.0]
    assert found["words"].startswith("More seeds, by resampling these 4 seeds per arm")
    assert "32 seeds per arm: P(SUPPORTED)" in found["words"]


def test_an_inconclusive_run_says_what_more_seeds_would_do(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["run", str(tiny_claim), "--executor", "local", "--store", str(tmp_path / "s"),
                 "--reports", str(tmp_path / "r"), "--device", "cpu"]) == 0
    assert "More seeds, by resampling these 3 seeds per arm" in capsys.readouterr().out
    result = json.loads((tmp_path / "r" / "tiny" / "result.json").read_text())
    assert result["verdict"] == "INCONCLUSIVE" and result["more_seeds"][""]["seeds"] == [6, 12, 24]
    assert "- Power: More seeds" in (tmp_path / "r" / "tiny" / "report.md").read_text()


def test_more_seeds_that_cannot_be_estimated_says_so_and_never_stops_a_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import lognormal_arm

    import grokverify.stats.power as power
    from grokverify.stats.decidable import more_seeds

    def broken(*args: object, **kw: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(power, "plan_seeds", broken)
    arms = {"b": lognormal_arm("b", 1000, seed=1, n=4), "t": lognormal_arm("t", 900, seed=2, n=4)}
    found = more_seeds(_params(0.2, n_boot=100), arms)
    assert found["words"] == "More seeds: not estimated (RuntimeError: boom)."
    assert found["p_supported"] is None
