"""Family claims (grokverify/stats/family.py): per-member verdicts, what a family claims (all or
any), the multiplicity correction, the family verdict and its reasons, for every criterion; and
families in claim files, run end to end."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import Has, lognormal_arm, normal_arm, run_criterion, share_arm
from rich.console import Console
from statsmodels.stats.multitest import multipletests

from grokverify.claim.load import load_claim
from grokverify.claim.yamlio import SpecError
from grokverify.kinds import CRITERIA
from grokverify.run.pipeline import RunOptions, run_claims
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge, verdict_from_p
from grokverify.stats.family import combine
from grokverify.stats.simulate import make_arm
from grokverify.stats.survival import SurvivalCompareParams

Case = tuple[dict[str, Any], list[ArmSample]]
times = partial(lognormal_arm, sigma=0.35)  # (name, median, seed, n): steps to threshold


def _result(p_support: float | None, p_refute: float | None,
            verdict: Verdict | None = None) -> CriterionResult:
    """A member whose own verdict is its p's (as a criterion's CI gives), unless `verdict`."""
    return CriterionResult(
        criterion="survival_compare", effect_label="x", estimate=0.5, ci=(0.4, 0.6),
        ci_level=0.95, p_value=0.01, test="t", threshold=0.8, claimed_region="r",
        verdict=verdict or verdict_from_p(p_support, p_refute, 0.025), reason="r", arms=[],
        details={}, p_support=p_support, p_refute=p_refute)


def test_holm_adjusts_across_members_and_any_lists_the_supported() -> None:
    p = [0.001, 0.01, 0.02, 0.03]
    results = {f"m{i}": _result(v, 0.9) for i, v in enumerate(p)}
    fam = combine(results, "holm", "any")
    expected = multipletests(p, alpha=0.025, method="holm")[1]
    assert [m.p_support_adj for m in fam.members] == pytest.approx(expected)
    assert [m.verdict for m in fam.members] == [Verdict.SUPPORTED] + [Verdict.INCONCLUSIVE] * 3
    assert fam.verdict == Verdict.PARTIAL and fam.claims == "any"
    assert "supported for m0; inconclusive for m1, m2, m3" in fam.reason
    unadjusted = combine(results, "none", "any")
    assert [m.verdict for m in unadjusted.members][:3] == [Verdict.SUPPORTED] * 3
    assert unadjusted.verdict == Verdict.PARTIAL and "supported for m0, m1, m2" in \
        unadjusted.reason


def test_family_verdicts_all_supported_all_refuted_and_mixed() -> None:
    for claims in ("all", "any"):
        assert combine({"a": _result(0.001, 0.99), "b": _result(0.002, 0.99)}, "holm",
                       claims).verdict == Verdict.SUPPORTED
        assert combine({"a": _result(0.99, 0.001), "b": _result(0.99, 0.002)}, "holm",
                       claims).verdict == Verdict.REFUTED
    # one refuted member refutes "all"; under "any" it is one of the members not supported
    assert combine({"a": _result(0.99, 0.001), "b": _result(0.5, 0.5)},
                   "holm").verdict == Verdict.REFUTED
    mixed = combine({"a": _result(0.99, 0.001), "b": _result(0.5, 0.5)}, "holm", "any")
    assert mixed.verdict == Verdict.INCONCLUSIVE and "refuted for a" in mixed.reason
    no_p = combine({"a": _result(None, None), "b": _result(0.001, 0.9)}, "holm", "any")
    assert [m.verdict for m in no_p.members] == [Verdict.INCONCLUSIVE, Verdict.SUPPORTED]
    assert no_p.members[1].p_support_adj == pytest.approx(0.002)  # a counts as p = 1


def test_four_members_at_p_002_support_all_but_not_holm_any() -> None:
    """The intersection-union test needs no correction to support "all"; Holm would make
    every member 0.08 and support nothing."""
    results = {f"task{i}": _result(0.02, 0.98) for i in range(4)}
    every = combine(results, "holm", "all")
    assert every.verdict == Verdict.SUPPORTED and "intersection-union" in every.reason
    assert [m.p_support_adj for m in every.members] == [0.02] * 4  # support is not corrected
    some = combine(results, "holm", "any")
    assert some.verdict == Verdict.INCONCLUSIVE
    assert [m.p_support_adj for m in some.members] == pytest.approx([0.08] * 4)


def test_refutation_of_all_is_corrected_across_members() -> None:
    """One member at p_refute 0.02 refutes "all" unadjusted, not after Holm over four."""
    results = {"a": _result(0.98, 0.02), **{f"b{i}": _result(0.5, 0.5) for i in range(3)}}
    assert combine(results, "none", "all").verdict == Verdict.REFUTED
    holm = combine(results, "holm", "all")
    assert holm.verdict == Verdict.INCONCLUSIVE and holm.members[0].p_refute_adj == \
        pytest.approx(0.08)


def test_reason_names_supported_members_and_never_says_none_is() -> None:
    results = {"add": _result(0.001, 0.99), "mul": _result(0.3, 0.7), "div": _result(0.5, 0.5)}
    for claims in ("all", "any"):
        fam = combine(results, "holm", claims)
        assert "No member is supported" not in fam.reason
        assert "supported for add" in fam.reason and "inconclusive for mul, div" in fam.reason
    assert combine(results, "holm", "all").verdict == Verdict.INCONCLUSIVE
    assert combine(results, "holm", "any").verdict == Verdict.PARTIAL
    assert combine(results, "holm").to_dict()["claims"] == "all"


def test_a_family_never_strengthens_a_withheld_member() -> None:
    """A member whose criterion withheld its verdict (lower-bound rule) stays INCONCLUSIVE."""
    withheld = _result(0.001, 0.99, Verdict.INCONCLUSIVE)
    fam = combine({"a": withheld, "b": _result(0.001, 0.99)}, "none", "all")
    assert [m.verdict for m in fam.members] == [Verdict.INCONCLUSIVE, Verdict.SUPPORTED]
    assert fam.verdict == Verdict.INCONCLUSIVE and "a (verdict withheld" in fam.reason


# ---------------------------------------------------------------- every criterion kind


def _two_arm(params: dict[str, Any], b: Callable[[int], ArmSample],
             t: Callable[[int, bool], ArmSample]) -> Callable[[int, bool], Case]:
    return lambda seed, inside: (params, [b(seed), t(seed, inside)])


# criterion -> (member seed, inside the claimed region?) -> a clear-cut dataset
CLEAR: dict[str, Callable[[int, bool], Case]] = {
    "survival_compare": _two_arm(
        {"name": "survival_compare", "baseline": "b", "treated": "t", "direction": "less",
         "min_effect": 0.2, "n_boot": 400},
        lambda s: times("b", 1000, 10 * s, 24),
        lambda s, inside: times("t", 400 if inside else 2000, 10 * s + 1, 24)),
    "cox_hazard_ratio": _two_arm(
        {"name": "cox_hazard_ratio", "baseline": "b", "treated": "t", "direction": "less"},
        lambda s: times("b", 1000, 10 * s, 30),
        lambda s, inside: times("t", 450 if inside else 2200, 10 * s + 1, 30)),
    "scalar_compare": _two_arm(
        {"name": "scalar_compare", "baseline": "b", "treated": "t", "direction": "less",
         "n_boot": 400},
        lambda s: times("b", 1000, 10 * s, 24),
        lambda s, inside: times("t", 450 if inside else 1800, 10 * s + 1, 24)),
    "equivalence": _two_arm(
        {"name": "equivalence", "baseline": "b", "treated": "t", "margin": 1.0},
        lambda s: normal_arm("b", 5.0, 10 * s, n=40),
        lambda s, inside: normal_arm("t", 5.0 if inside else 8.0, 10 * s + 1, n=40)),
    "proportion": lambda s, inside: (
        {"name": "proportion", "arm": "a", "direction": "greater", "threshold": 0.5},
        [make_arm("a", np.arange(20.0) + s, np.arange(20) < (19 if inside else 1))]),
    "correlation": lambda s, inside: (
        {"name": "correlation", "arm": "a", "x": "val_threshold_step",
         "y": "train_threshold_step", "direction": "positive", "min_effect": 0.3},
        [make_arm("a", x := np.random.default_rng(s).uniform(0, 1, 30),
             extra={"train_threshold_step": (1 if inside else -1) * x +
                    np.random.default_rng(s + 1).normal(0, 0.03, 30)})]),
    "value": lambda s, inside: (
        {"name": "value", "arm": "a", "target": 3.0, "tol": 1.0, "n_boot": 400},
        [normal_arm("a", 3.0 if inside else 6.0, 10 * s, n=40)]),
    "crossing": lambda s, inside: (
        {"name": "crossing", "points": {"a": 0.2, "b": 0.3, "c": 0.4},
         "region": [0.28, 0.36] if inside else [0.36, 0.5], "n_boot": 400},
        [share_arm(k, q, 10 * s + i, n=200) for i, (k, q) in enumerate(
            zip("abc", (0.1, 0.45, 0.9), strict=True))]),
    # family_ok=False: a phase diagram is one claim (its family tests skip), data kept for when
    # it gives p's against θ
    "phase_order": lambda s, inside: (
        {"name": "phase_order", "cells": {"a": [1, 0], "b": [2, 0], "c": [3, 0]},
         "n_boot": 400},
        [phase_codes(k, code if inside else 2 - code, 10 * s + i, n=40)
         for i, (k, code) in enumerate(zip("abc", (0, 1, 2), strict=True))]),
}


def phase_codes(name: str, code: int, seed: int, n: int) -> ArmSample:
    """n seeds in phase `code`, one in ten in another phase (codes 0-2)."""
    rng = np.random.default_rng(seed)
    values = np.where(rng.random(n) < 0.9, code, (code + 1) % 3).astype(float)
    return make_arm(name, values, kind="value")


def _members(name: str, refuted: str | None = None) -> dict[str, CriterionResult]:
    """Three members of clear-cut data for criterion `name`; `refuted` lies outside."""
    if not CRITERIA[name].family_ok:
        pytest.skip(f"{name} declares family_ok=False: a family of it is refused at load")
    out = {}
    for seed, member in enumerate(("add", "mul", "div")):
        params, arms = CLEAR[name](seed, member != refuted)
        res = run_criterion(params, *arms)
        assert res.verdict == (Verdict.REFUTED if member == refuted else Verdict.SUPPORTED), \
            f"{name} {member}: {res.reason}"
        out[member] = res
    return out


def test_every_criterion_has_clear_data() -> None:
    assert set(CLEAR) == set(CRITERIA)


@pytest.mark.parametrize("name", sorted(CRITERIA))
def test_family_of_each_criterion_supported_members_is_supported(name: str) -> None:
    members = _members(name)
    for claims in ("all", "any"):
        fam = combine(members, "holm", claims)
        assert fam.verdict == Verdict.SUPPORTED, fam.reason
        assert [m.verdict for m in fam.members] == [Verdict.SUPPORTED] * 3


@pytest.mark.parametrize("name", sorted(CRITERIA))
def test_one_refuted_member_refutes_an_all_family(name: str) -> None:
    fam = combine(_members(name, refuted="mul"), "holm", "all")
    assert fam.verdict == Verdict.REFUTED, fam.reason
    assert "refuted for mul" in fam.reason and "supported for add, div" in fam.reason
    some = combine(_members(name, refuted="mul"), "holm", "any")
    assert some.verdict == Verdict.PARTIAL and "supported for add, div" in some.reason


@pytest.mark.parametrize("seed", range(12))
def test_single_member_without_correction_agrees_with_the_ci_rule(seed: int) -> None:
    """A member's p-values against the boundary reproduce its own CI verdict exactly."""
    rng = np.random.default_rng(seed)
    base_t = rng.lognormal(np.log(1000), 0.4, 10)
    treat_t = rng.lognormal(np.log(1000 * rng.uniform(0.4, 1.3)), 0.4, 10)
    budget = 1600.0
    arms = {
        "b": make_arm("b", np.minimum(base_t, budget), base_t < budget),
        "t": make_arm("t", np.minimum(treat_t, budget), treat_t < budget),
    }
    for direction, m in (("less", 0.2), ("greater", 0.1)):
        params = SurvivalCompareParams(name="survival_compare", baseline="b", treated="t",
                                       direction=direction, min_effect=m, n_boot=400)
        result = judge(params, arms)
        for claims in ("all", "any"):
            member = combine({"only": result}, "none", claims).members[0]
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


def test_family_claims_all_by_default_and_any_when_declared(tmp_path: Path,
                                                            tiny_claim: Path) -> None:
    path = _family_claim(tmp_path, tiny_claim, "big: {task: {p: 12}}")
    loaded = load_claim(path)
    assert loaded.claim.family is not None and loaded.claim.family.claims == "all"
    path.write_text(path.read_text().replace("  correction: holm", "  claims: any\n"
                                                                     "  correction: holm"))
    loaded = load_claim(path)
    assert loaded.claim.family is not None and loaded.claim.family.claims == "any"


def test_family_of_an_uncombinable_criterion_is_refused_at_load(
        tmp_path: Path, tiny_claim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A criterion whose schema declares family_ok=False (no p against θ) cannot be a family."""
    name = load_claim(tiny_claim).claim.criterion.name
    monkeypatch.setattr(CRITERIA[name], "family_ok", False)
    path = _family_claim(tmp_path, tiny_claim, "big: {task: {p: 12}}")
    with pytest.raises(SpecError) as err:
        load_claim(path)
    line = path.read_text().splitlines().index("family:") + 1
    assert f"{path}:{line}: family: criterion {name!r} gives no one-sided p-values" in \
        str(err.value)


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
    assert "`holm`" in report and "`claims: all`" in report and "p(support) " in report
    assert result["family"]["claims"] == "all"


def test_family_reasons_state_their_rules_and_the_json_keeps_every_field() -> None:
    """What a reader of the report gets: the rule with its correction and level in the reason,
    member notes, and every field of the family in result.json."""
    fam = combine({"a": _result(0.001, 0.99), "b": _result(0.5, 0.5)}, "holm", "all")
    assert fam.verdict == Verdict.INCONCLUSIVE and fam.alpha_one_sided == pytest.approx(0.025)
    assert fam.reason == Has("claims: all;",
                             "supported at unadjusted one-sided p(support) <= 0.025",
                             "refuted at holm-adjusted p(refute) < 0.025")
    out = fam.to_dict()
    assert {k: out[k] for k in ("claims", "correction", "alpha_one_sided", "verdict")} == {
        "claims": "all", "correction": "holm", "alpha_one_sided": pytest.approx(0.025),
        "verdict": "INCONCLUSIVE"}
    assert out["reason"] == fam.reason and [m["member"] for m in out["members"]] == ["a", "b"]
    unadj = combine({"a": _result(0.001, 0.99), "b": _result(0.5, 0.5)}, "none", "any")
    assert unadj.reason == Has("claims: any; unadjusted one-sided p against θ",
                               "p(support) <= 0.025 supports", "p(refute) < 0.025 refutes")
    bonf = combine({"a": _result(0.001, 0.99), "b": _result(0.5, 0.5)}, "bonferroni", "any")
    assert "claims: any; bonferroni-adjusted one-sided p" in bonf.reason


def test_member_notes_say_why_an_inconclusive_member_has_no_say() -> None:
    no_p = _result(None, None, Verdict.INCONCLUSIVE)
    one_p = _result(0.5, None, Verdict.INCONCLUSIVE)
    withheld = _result(0.001, 0.99, Verdict.INCONCLUSIVE)  # its CI supports; the criterion withheld
    plain = _result(0.04, 0.7)  # above the member's one-sided 0.025: its own CI is undecided
    fam = combine({"a": _result(0.001, 0.99), "np": no_p, "op": one_p, "w": withheld,
                   "pl": plain}, "none", "any")
    # withheld on either side, and at p(support) 0.02 (below 0.025, the 95% member's level)
    for name, member in (("r", _result(0.99, 0.001, Verdict.INCONCLUSIVE)),
                         ("s", _result(0.02, 0.9, Verdict.INCONCLUSIVE))):
        one = combine({name: member}, "none", "any")
        assert f"{name} (verdict withheld by its criterion: see its reason)" in one.reason
    # np: no p; op: one p missing; w: its CI supports but its criterion withheld; pl: no note
    assert ("inconclusive for np (no p against θ), op (verdict withheld by its criterion: see "
            "its reason), w (verdict withheld by its criterion: see its reason), pl (claims: any"
            ) in fam.reason
    # a member without p's enters the correction as p = 1 and keeps None
    holm = combine({"a": _result(0.01, 0.99), "np": no_p}, "holm", "any")
    assert [m.p_support_adj for m in holm.members] == [pytest.approx(0.02), None]
    # a 90% member: its own level is 0.05, so p(support) 0.04 is its CI's SUPPORTED
    r90 = dataclasses.replace(_result(0.04, 0.9, Verdict.INCONCLUSIVE), ci_level=0.90)
    fam90 = combine({"x": r90}, "none", "any")
    assert "x (verdict withheld by its criterion" in fam90.reason


def test_combine_names_what_a_family_can_claim() -> None:
    with pytest.raises(ValueError, match="a family claims 'all' or 'any', not 'each'"):
        combine({"a": _result(0.001, 0.99)}, "holm", "each")


def test_a_not_tested_member_makes_the_family_not_tested_unless_left_out() -> None:
    results = {"a": _result(0.001, 0.99), "b": _result(0.001, 0.99, Verdict.NOT_TESTED),
               "c": _result(0.002, 0.99)}
    fam = combine(results, "holm", "all")
    assert fam.verdict == Verdict.NOT_TESTED and "checks of b failed" in fam.reason
    assert [m.verdict for m in fam.members] == [Verdict.SUPPORTED, Verdict.NOT_TESTED,
                                                Verdict.SUPPORTED]
    left = combine(results, "holm", "all", "leave_out")
    assert left.verdict == Verdict.SUPPORTED and "Left out as not tested" in left.reason
    assert [m.member for m in left.members] == ["a", "b", "c"]
    assert left.members[1].verdict == Verdict.NOT_TESTED
    assert (fam.claims, fam.correction, fam.alpha_one_sided) == ("all", "holm",
                                                                  pytest.approx(0.025))
    assert [(m.member, m.result, m.p_support_adj, m.p_refute_adj) for m in fam.members] == [
        (n, r, None, None) for n, r in results.items()]
    assert [(m.p_support, m.p_refute) for m in fam.members] == [(0.001, 0.99), (0.001, 0.99),
                                                                 (0.002, 0.99)]
    untested = {n: _result(0.001, 0.99, Verdict.NOT_TESTED) for n in "ab"}
    whole = combine(untested, "holm", "any", "leave_out")
    assert whole.verdict == Verdict.NOT_TESTED and whole.reason == Has(
        "Not tested: the checks of a, b failed (see each member's reason), and a family with an "
        "untested member is not tested (untested: leave_out).")
    with pytest.raises(ValueError, match="not_tested' or 'leave_out"):
        combine(results, "holm", "all", "drop")


def test_an_open_questions_family_reports_each_member_and_judges_nothing() -> None:
    found = {"p7": _result(None, None, Verdict.FINDING), "p11": _result(None, None,
                                                                         Verdict.FINDING)}
    fam = combine(found, "holm", "any")
    assert (fam.verdict, fam.claims, fam.correction, fam.alpha_one_sided) == (
        Verdict.FINDING, "any", "holm", pytest.approx(0.025))
    assert [(m.member, m.verdict, m.p_support_adj) for m in fam.members] == [
        ("p7", Verdict.FINDING, None), ("p11", Verdict.FINDING, None)]
    assert fam.reason == Has("An open question: each member's estimate and CI are reported and "
                             "nothing is judged") and fam.reason.endswith("judged.")
    fam = combine({**found, "p13": _result(None, None, Verdict.INCONCLUSIVE),
                   "p17": _result(None, None, Verdict.NOT_TESTED)}, "none")
    assert fam.verdict == Verdict.FINDING and fam.reason.endswith(
        "judged; no estimate for p13, p17 (see each reason).")
