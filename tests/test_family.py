"""Family claims: per-member results, multiplicity correction, one family verdict."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from statsmodels.stats.multitest import multipletests

from grokverify.family import combine
from grokverify.pipeline import RunOptions, run_claims
from grokverify.spec import load_claim
from grokverify.stats import CRITERIA, ArmSample, CriterionResult, Verdict
from grokverify.stats.survival import SurvivalCompareParams
from grokverify.yamlio import SpecError


def _result(p_support: float | None, p_refute: float | None) -> CriterionResult:
    return CriterionResult(
        criterion="survival_compare", effect_label="x", estimate=0.5, ci=(0.4, 0.6),
        ci_level=0.95, p_value=0.01, test="t", threshold=0.8, claimed_region="r",
        verdict=Verdict.INCONCLUSIVE, reason="r", arms=[], details={},
        p_support=p_support, p_refute=p_refute)


def test_holm_adjusts_across_members_and_partial_is_reported() -> None:
    p = [0.001, 0.01, 0.02, 0.03]
    results = {f"m{i}": _result(v, 0.9) for i, v in enumerate(p)}
    fam = combine(results, "holm")
    expected = multipletests(p, alpha=0.025, method="holm")[1]
    assert [m.p_support_adj for m in fam.members] == pytest.approx(expected)
    assert [m.verdict for m in fam.members] == [Verdict.SUPPORTED] + [Verdict.INCONCLUSIVE] * 3
    assert fam.verdict == Verdict.PARTIAL and "m0" in fam.reason and "m3" in fam.reason
    unadjusted = combine(results, "none")
    assert [m.verdict for m in unadjusted.members][:3] == [Verdict.SUPPORTED] * 3


def test_family_verdicts_all_supported_all_refuted_and_mixed() -> None:
    assert combine({"a": _result(0.001, 0.99), "b": _result(0.002, 0.99)},
                   "holm").verdict == Verdict.SUPPORTED
    assert combine({"a": _result(0.99, 0.001), "b": _result(0.99, 0.002)},
                   "holm").verdict == Verdict.REFUTED
    mixed = combine({"a": _result(0.99, 0.001), "b": _result(0.5, 0.5)}, "holm")
    assert mixed.verdict == Verdict.INCONCLUSIVE and "refuted for a" in mixed.reason
    no_p = combine({"a": _result(None, None), "b": _result(0.001, 0.9)}, "holm")
    assert [m.verdict for m in no_p.members] == [Verdict.INCONCLUSIVE, Verdict.SUPPORTED]


@pytest.mark.parametrize("seed", range(12))
def test_single_member_without_correction_agrees_with_the_ci_rule(seed: int) -> None:
    """A member's p-values against the boundary reproduce its own CI verdict exactly."""
    rng = np.random.default_rng(seed)
    base_t = rng.lognormal(np.log(1000), 0.4, 10)
    treat_t = rng.lognormal(np.log(1000 * rng.uniform(0.4, 1.3)), 0.4, 10)
    budget = 1600.0
    arms = {
        "b": ArmSample("b", np.minimum(base_t, budget), base_t < budget, tuple(range(10))),
        "t": ArmSample("t", np.minimum(treat_t, budget), treat_t < budget, tuple(range(10))),
    }
    for direction, m in (("less", 0.2), ("greater", 0.1)):
        params = SurvivalCompareParams(name="survival_compare", baseline="b", treated="t",
                                       direction=direction, min_effect=m, n_boot=400)
        result = CRITERIA["survival_compare"].run(params, arms)
        member = combine({"only": result}, "none").members[0]
        assert member.verdict == result.verdict


FAMILY = """
family:
  correction: holm
  members:
    small: {{task: {{p: 10}}}}
    {second}
"""


def _family_claim(tmp_path: Path, tiny_claim: Path, second: str) -> Path:
    path = tmp_path / "family.yaml"
    path.write_text(tiny_claim.read_text() + FAMILY.format(second=second))
    return path


def test_family_member_overrides_resolve_between_scale_and_arm(tmp_path: Path,
                                                               tiny_claim: Path) -> None:
    loaded = load_claim(_family_claim(tmp_path, tiny_claim, "big: {task: {p: 12}}"))
    members = loaded.members("quick")
    assert set(members) == {"small", "big"}
    assert members["small"]["c10"].task.p == 10 and members["big"]["c10"].task.p == 12
    assert members["big"]["c10"].optimizer.emb_lr_mult == 10  # the arm still applies
    assert loaded.resolved == {}  # a family has no single resolution


def test_bad_family_member_names_its_path_and_line(tmp_path: Path, tiny_claim: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = _family_claim(tmp_path, tiny_claim, "big: {task: {pp: 12}}")
    with pytest.raises(SpecError) as err:
        load_claim(path)
    line = path.read_text().splitlines().index("    big: {task: {pp: 12}}") + 1
    assert f"{path}:{line}: family.members.big.task.pp: unknown key 'pp'" in str(err.value)


def test_family_run_reports_a_row_per_member(tmp_path: Path, tiny_claim: Path) -> None:
    loaded = load_claim(_family_claim(tmp_path, tiny_claim, "lr_up: {optimizer: {lr: 0.004}}"))
    opts = RunOptions(store=tmp_path / "store", reports=tmp_path / "reports", executor="local",
                      device="cpu", seeds=3)
    (run,) = run_claims([loaded], opts, Console(quiet=True))
    assert set(run.results) == {"small", "lr_up"} and run.family is not None
    result = json.loads((tmp_path / "reports" / "tiny" / "result.json").read_text())
    assert result["result"] is None and result["verdict"] == run.verdict.value
    assert [m["member"] for m in result["family"]["members"]] == ["small", "lr_up"]
    assert {"small/c1", "small/c10", "lr_up/c1", "lr_up/c10"} == set(result["arms"])
    report = (tmp_path / "reports" / "tiny" / "report.md").read_text()
    assert "| small |" in report and "| lr_up |" in report and "Family verdict" in report
    assert "`holm`" in report
