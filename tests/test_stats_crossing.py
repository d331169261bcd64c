"""crossing (grokverify/stats/crossing.py): the interpolated x where the arm means cross a
level, its percentile-bootstrap CI and its verdict against hand-computed crossings; censored
crossings, x from a metric, open questions, and crossing claims in a claim file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pydantic
import pytest
from conftest import Has, problems
from conftest import run_criterion as run

from grokverify.claim.load import load_claim
from grokverify.kinds import CRITERIA
from grokverify.stats.base import ArmSample, Verdict, judge, verdict_from_p
from grokverify.stats.crossing import crossings, order_k
from grokverify.stats.simulate import make_arm


def arm(name: str, ones: int, n: int) -> ArmSample:
    """An arm of n seeds of which `ones` have value 1 (mean ones / n), the rest 0."""
    return make_arm(name, (np.arange(n) < ones).astype(float), kind="value")


def params(**kw: Any) -> dict[str, Any]:
    return {"name": "crossing", "points": {"a": 0.2, "b": 0.3, "c": 0.4},
            "region": [0.3, 0.35], "n_boot": 999, **kw}


def three(n: int, means: tuple[float, float, float] = (0.2, 0.4, 0.8)) -> list[ArmSample]:
    return [arm(name, round(m * n), n) for name, m in zip("abc", means, strict=True)]


# means 0.2, 0.4, 0.8 at x 0.2, 0.3, 0.4: 0.5 is crossed between b and c, a quarter of the
# way from 0.4 to 0.8, so x = 0.3 + (0.5 - 0.4) / (0.8 - 0.4) * 0.1 = 0.325
HAND = 0.325


def test_crossings_interpolates_the_first_bracket() -> None:
    xs = np.array([0.2, 0.3, 0.4])
    means = np.array([[0.2, 0.4, 0.8],   # 0.325
                      [0.2, 0.5, 0.8],   # reaches 0.5 exactly at b: 0.3
                      [0.6, 0.7, 0.9],   # already past at the first x: -inf
                      [0.1, 0.2, 0.4],   # never reaches it: +inf
                      [0.4, 0.6, 0.3]])  # not monotone: the first bracket, a-b: 0.25
    got = crossings(xs, means, 0.5, rising=True)
    np.testing.assert_allclose(got, [HAND, 0.3, -math.inf, math.inf, 0.25])
    falling = crossings(xs, 1 - means[:1], 0.5, rising=False)  # 0.8, 0.6, 0.2
    np.testing.assert_allclose(falling, [0.3 + 0.1 / 0.4 * 0.1])


def test_estimate_is_the_hand_interpolation_and_the_ci_covers_it() -> None:
    res = run(params(), *three(400))
    assert res.estimate == pytest.approx(HAND)
    assert res.ci[0] <= HAND <= res.ci[1] and res.ci[1] - res.ci[0] < 0.03
    assert res.verdict == Verdict.SUPPORTED, res.reason
    assert "interpolated between b (x = 0.3, mean 0.4) and c (x = 0.4, mean 0.8)" in res.reason
    assert res.ci_level == 0.95 and res.details["alpha"] == pytest.approx(0.05)
    assert res.details["means"] == pytest.approx([0.2, 0.4, 0.8])
    assert res.p_value is None and res.details["bracket"] == ["b", "c"]
    assert [row.columns["x"] for row in res.arms] == [0.2, 0.3, 0.4]
    assert [row.columns["mean"] for row in res.arms] == pytest.approx([0.2, 0.4, 0.8])


def test_the_ci_is_the_percentile_order_statistics_of_a_reproducible_bootstrap() -> None:
    arms = three(40)
    first, again = run(params(), *arms), run(params(), *arms)
    assert first.ci == again.ci  # seeded from the claim's bootstrap_seed
    other = run(params(bootstrap_seed=7), *arms)
    assert other.details["bootstrap_seed"] == 7
    # by hand: the same draws, in points order, and the k-th order statistics
    rng = np.random.default_rng(0)
    boot = np.stack([a.values[rng.integers(0, a.n, (999, a.n))].mean(axis=1) for a in arms], 1)
    x = np.sort(crossings(np.array([0.2, 0.3, 0.4]), boot, 0.5, True))
    k = order_k(0.95, 999)
    assert k == 25  # floor(0.025 * 1000)
    assert first.ci == (x[k - 1], x[999 - k])


@pytest.mark.parametrize(("region", "verdict", "words"), [
    ([0.3, 0.35], Verdict.SUPPORTED, "lies wholly within the claimed region [0.3, 0.35]"),
    ([0.36, 0.5], Verdict.REFUTED, "lies wholly below the claimed region [0.36, 0.5]"),
    ([0.2, 0.31], Verdict.REFUTED, "lies wholly above the claimed region [0.2, 0.31]"),
    ([0.32, 0.33], Verdict.INCONCLUSIVE, "overlaps the claimed region [0.32, 0.33]"),
])
def test_verdicts_against_the_region(region: list[float], verdict: Verdict, words: str) -> None:
    res = run(params(region=region), *three(400))
    assert res.verdict == verdict and words in res.reason, res.reason
    assert verdict_from_p(res.p_support, res.p_refute, 0.025) == verdict


def test_few_seeds_give_a_wide_ci_and_no_verdict() -> None:
    res = run(params(region=[0.3, 0.35]), *three(10))
    assert res.verdict == Verdict.INCONCLUSIVE and (res.ci[0] < 0.3 or res.ci[1] > 0.35)


@pytest.mark.parametrize("seed", range(6))
def test_p_against_the_region_gives_the_ci_verdict(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in (20, 60, 200):
        arms = [make_arm(k, (rng.random(n) < q).astype(float), kind="value")
                for k, q in zip("abc", (0.1, 0.45, 0.9), strict=True)]
        for region in ([0.25, 0.3], [0.29, 0.33], [0.3, 0.4], [0.33, 0.5], [0.1, 0.28]):
            res = run(params(region=region, n_boot=400), *arms)
            assert verdict_from_p(res.p_support, res.p_refute, 0.025) == res.verdict, \
                (region, res.ci, res.p_support, res.p_refute)


def test_no_crossing_inside_the_points_is_censored() -> None:
    never = run(params(), *three(20, (0.1, 0.2, 0.4)))
    assert never.verdict == Verdict.INCONCLUSIVE and math.isnan(never.estimate)
    assert "the crossing lies beyond x = 0.4: censored" in never.reason
    assert never.p_support is None and never.to_dict()["ci"] == [None, None]
    already = run(params(), *three(20, (0.6, 0.7, 0.9)))
    assert already.verdict == Verdict.INCONCLUSIVE
    assert "already at or past 0.5, so the crossing lies at or below x = 0.2" in already.reason
    assert already.details["censored_estimate"] == "below the first x"


def test_resamples_without_a_crossing_make_the_ci_unbounded() -> None:
    """Means 1/3 and 2/3 over 6 seeds: many resamples put a's mean at or past 0.5, or b's
    short of it."""
    res = run(params(points={"a": 0.2, "b": 0.3}, region=[0.2, 0.3]),
              arm("a", 2, 6), arm("b", 4, 6))
    assert res.estimate == pytest.approx(0.25)
    assert res.ci[0] == -math.inf or res.ci[1] == math.inf
    assert res.details["resamples_crossing_below_first_x"] + \
        res.details["resamples_crossing_beyond_last_x"] > 0
    assert res.verdict == Verdict.INCONCLUSIVE


def test_falling_direction() -> None:
    res = run(params(direction="falling", region=[0.3, 0.35]), *three(400, (0.8, 0.6, 0.2)))
    assert res.estimate == pytest.approx(0.325) and res.verdict == Verdict.SUPPORTED
    assert "falls through 0.5" in res.effect_label


def test_values_outside_zero_one_and_too_few_seeds_are_inconclusive() -> None:
    bad = make_arm("b", [0.5, 1.5, 0.2], kind="value")
    res = run(params(), arm("a", 1, 3), bad, arm("c", 3, 3))
    assert res.verdict == Verdict.INCONCLUSIVE and "'b' has 1 value(s) outside [0, 1]" in \
        res.reason
    res = run(params(), arm("a", 1, 3), arm("b", 1, 1), arm("c", 3, 3))
    assert "arm 'b' has 1 usable seed(s), fewer than the 2" in res.reason


def test_a_time_metric_or_a_missing_arm_is_a_wiring_error() -> None:
    crit = CRITERIA["crossing"]
    p = crit.model_validate(params())
    with pytest.raises(KeyError):
        judge(p, {"a": arm("a", 1, 3)})
    times = {k: make_arm(k, [1.0, 2.0]) for k in "abc"}
    with pytest.raises(TypeError, match="crossing takes value metrics"):
        judge(p, times)


@pytest.mark.parametrize(("bad", "field", "words"), [
    ({"points": {"a": 0.2, "b": 0.2}}, "points", "x must increase strictly in the order "
     "written: 'b' has x = 0.2 after 'a' with x = 0.2"),
    ({"points": {"a": 0.3, "b": 0.2}}, "points", "'b' has x = 0.2 after 'a' with x = 0.3"),
    ({"points": {"a": 0.3}}, "points", "at least 2 items"),
    ({"points": {"a": 0.2, "b": "0.3"}}, "points", ""),
    ({"region": [0.4, 0.3]}, "region", "needs low < high, got [0.4, 0.3]"),
    ({"region": [0.3, 0.35, 0.4]}, "region", "at most 2 items"),
    ({"region": [0.3]}, "region", "at least 2 items"),
    ({"level": 1.0}, "level", "less than 1"),
    ({"level": 0.0}, "level", "greater than 0"),
    ({"direction": "up"}, "direction", "'rising' or 'falling'"),
    ({"n_boot": 10}, "n_boot", "greater than or equal to 100"),
    ({"ci_level": 1.5}, "ci_level", "less than 1"),
    ({"bootstrap_seed": -1}, "bootstrap_seed", "greater than or equal to 0"),
    ({"arms": ["a"]}, "arms", "Extra inputs are not permitted"),
])
def test_bad_params_are_refused_naming_the_field(bad: dict[str, Any], field: str,
                                                 words: str) -> None:
    p = params(**bad)
    with pytest.raises(pydantic.ValidationError) as info:
        CRITERIA["crossing"].model_validate(p)
    errors = info.value.errors()
    assert errors[0]["loc"][0] == field, errors
    assert words in str(info.value), str(info.value)


X_METRIC = {"name": "curve_at", "curve": "sample_fraction", "step": 0}
X_LABEL = "curve_at(curve=sample_fraction, step=0)"


def with_x(a: ArmSample, x: float | list[float]) -> ArmSample:
    """The arm with a per-seed x metric (the realised fraction) under the criterion's label."""
    xs = np.resize(np.asarray(x, dtype=float), a.values.shape)  # a list: repeated
    return make_arm(a.name, a.values, a.observed,
                    {X_LABEL: xs, X_LABEL + ".observed": np.ones(a.n, bool)}, kind="value")


def test_x_from_a_metric_replaces_the_declared_x() -> None:
    """Declared 0.2, 0.3, 0.4 but realised 0.2, 0.32, 0.42: the crossing is interpolated at the
    realised x (0.32 + 0.25 · 0.1 = 0.345), the CI moves with it, and the rows show the x used."""
    crit = CRITERIA["crossing"]
    spec = crit.model_validate(params(x=X_METRIC))
    assert [m.label() for m in spec.metrics_needed()] == [X_LABEL]
    declared = run(params(), *three(400))
    moved = run(params(x=X_METRIC), *(with_x(a, x) for a, x in
                                      zip(three(400), [0.2, [0.31, 0.33], 0.42], strict=True)))
    assert moved.estimate == pytest.approx(0.345)
    assert moved.ci[0] - declared.ci[0] == pytest.approx(0.02, abs=0.005)
    assert [row.columns["x"] for row in moved.arms] == pytest.approx([0.2, 0.32, 0.42])
    assert moved.details["x"] == f"arm mean of {X_LABEL}"
    assert crit.model_validate(params()).metrics_needed() == []


def test_arms_of_one_realised_x_are_pooled() -> None:
    """b and c realise one x (0.3): their seeds are one point of mean (0.4 + 0.8) / 2 = 0.6,
    crossed three quarters of the way from a (x 0.2, mean 0.2): 0.2 + 0.75 · 0.1 = 0.275."""
    res = run(params(x=X_METRIC), *(with_x(a, x) for a, x in zip(three(400), [0.2, 0.3, 0.3],
                                                                    strict=True)))
    assert res.estimate == pytest.approx(0.275)
    assert res.details["bracket"] == ["a", "b+c"] and res.details["means"] == \
        pytest.approx([0.2, 0.6])
    assert len(res.arms) == 3  # the report still lists every arm


@pytest.mark.parametrize(("xs", "words"), [
    ([0.2, 0.45, 0.4], "arm 'c' has x = 0.4 after 'b' with x = 0.45"),
    ([0.2, math.nan, 0.4], "undefined for arm(s) b")])
def test_realised_x_out_of_order_or_undefined_gives_no_estimate(xs, words) -> None:
    res = run(params(x=X_METRIC), *(with_x(a, x) for a, x in zip(three(100), xs, strict=True)))
    assert res.verdict == Verdict.INCONCLUSIVE and math.isnan(res.estimate)
    assert words in res.reason, res.reason


def test_without_a_region_the_crossing_is_a_finding_with_no_p() -> None:
    p = params()
    del p["region"]
    judged = run(params(), *three(400))
    res = run(p, *three(400))
    assert res.verdict == Verdict.FINDING
    assert (res.estimate, res.ci) == (judged.estimate, judged.ci)
    assert res.p_support is None and res.p_refute is None
    assert res.reason.startswith("An open question, estimated and not judged: ")
    assert "95% CI [" in res.reason and res.details["region"] is None
    schema = CRITERIA["crossing"]
    assert not schema.judged(schema.model_validate(p))
    assert schema.judged(schema.model_validate(params()))


# ---------------------------------------------------------------- in a claim file


CLAIM = """\
id: crossing_tiny
title: Tiny crossing claim
statement: test fixture.
source: {arxiv: "2205.10343", where: test fixture, role: inference, quote: test fixture}
base:
  task: {op: add, p: 6, modular: false, unordered: true, train_frac: 0.4, test_frac: null}
  model: {kind: toy_sum, hidden: 4, emb_dim: 1}
  optimizer: {name: adamw, lr: 0.001}
  training: {steps: 0, eval_interval: 1}
  probes: [{name: parallelogram_nullity, every: 1}, {name: sample_fraction, every: 1}]
arms: {}
grid:
  name: "f{f}"
  axes:
    f: {path: task.train_frac, values: [0.4, 0.6, 0.8]}
scales:
  quick: {description: test scale}
seeds: 3
metric: {name: curve_at, curve: parallelogram_nullity.is2, step: 0}
criterion:
  name: crossing
  points: {f0.4: 0.4, f0.6: 0.6, f0.8: 0.8}
  region: [0.5, 0.7]
"""


def test_a_claim_with_a_grid_loads(tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM, encoding="utf-8")
    loaded = load_claim(path)
    assert loaded.claim.criterion.arms() == ["f0.4", "f0.6", "f0.8"]


def test_a_missing_arm_is_named_at_its_key(tmp_path: Path) -> None:
    found = problems(tmp_path, CLAIM.replace("f0.8: 0.8}", "f0.9: 0.8}"))
    line = CLAIM.splitlines().index("  points: {f0.4: 0.4, f0.6: 0.6, f0.8: 0.8}") + 1
    assert found == [Has(f"{line} criterion.points['f0.9']: criterion refers to arm 'f0.9'",
                         "does not exist; arms are ['f0.4', 'f0.6', 'f0.8']")]
    # a key that is part of an earlier field's text ("crossing") is still found at its key
    found = problems(tmp_path, CLAIM.replace("f0.8: 0.8}", "cross: 0.8}"))
    assert found == [Has(f"{line} criterion.points.cross: criterion refers to arm 'cross'")]


def test_a_time_metric_is_refused(tmp_path: Path) -> None:
    text = CLAIM.replace("metric: {name: curve_at, curve: parallelogram_nullity.is2, step: 0}",
                         "metric: {name: val_threshold_step}")
    found = problems(tmp_path, text)
    assert any("metric.name: criterion 'crossing' takes a value metric" in f for f in found), \
        found


def test_only_an_open_question_leaves_the_region_out(tmp_path: Path) -> None:
    no_region = CLAIM.replace("  region: [0.5, 0.7]\n", "")
    found = problems(tmp_path, no_region)
    line = CLAIM.splitlines().index("criterion:") + 1
    assert found == [Has(f"{line} criterion: criterion 'crossing' declares no claimed region",
                         "only an open question (source.role: open_question) may do",
                         "this claim's role is 'inference': declare the region")]
    asks = CLAIM.replace("role: inference", "role: open_question")
    block = asks.replace('source: {arxiv: "2205.10343", where: test fixture, role: open_question, '
                         'quote: test fixture}', 'source:\n  arxiv: "2205.10343"\n  where: '
                         'test fixture\n  role: open_question\n  quote: test fixture')
    assert block != asks
    found = problems(tmp_path, block)
    role = block.splitlines().index("  role: open_question") + 1
    assert found == [Has(f"{role} source.role: an open question is reported as a finding")]
    found = problems(tmp_path, asks)
    role = next(n for n, text in enumerate(asks.splitlines(), 1) if "role: open_question" in text)
    assert found == [Has(f"{role} source.role: an open question is reported as a finding")]
    path = tmp_path / "open.yaml"
    path.write_text(asks.replace("  region: [0.5, 0.7]\n", ""), encoding="utf-8")
    assert load_claim(path).claim.criterion.region is None  # type: ignore[union-attr]


def test_an_x_metric_must_read_a_recorded_curve(tmp_path: Path) -> None:
    text = CLAIM.replace("  region: [0.5, 0.7]\n", "  region: [0.5, 0.7]\n  x: {name: curve_at, "
                         "curve: sample_fractions, step: 0}\n")
    found = problems(tmp_path, text)
    assert len(found) == 1 and "criterion.x.curve: unknown curve " \
        "'sample_fractions' (did you mean 'sample_fraction'?)" \
        in found[0], found


def test_bad_points_in_a_claim_name_the_field(tmp_path: Path) -> None:
    found = problems(tmp_path, CLAIM.replace("f0.6: 0.6,", "f0.6: 0.3,"))
    assert any("criterion.points: " in f and "x must increase strictly" in f for f in found), \
        found


# CLAIM's id, title, source and base, asked as an open question
OPEN_QUESTION = CLAIM[:CLAIM.index("arms: {}")].replace("crossing_tiny", "open_tiny").replace(
    "Tiny crossing claim", "Tiny open question").replace("role: inference",
                                                         "role: open_question") + """\
arms:
  f0.2: {task: {train_frac: 0.2}}
  f0.4: {}
  f0.6: {task: {train_frac: 0.6}}
  f0.8: {task: {train_frac: 0.8}}
  f0.9: {task: {train_frac: 0.9}}
family:
  trend: {x: {p6: 6, p7: 7, p8: 8}}
grid:
  into: members
  name: "p{p}"
  axes:
    p: {path: task.p, values: [6, 7, 8]}
scales:
  quick: {description: test scale}
seeds: 30
metric: {name: curve_at, curve: parallelogram_nullity.is2, step: 0}
criterion:
  name: crossing
  points: {f0.2: 0.2, f0.4: 0.4, f0.6: 0.6, f0.8: 0.8, f0.9: 0.9}
  x: {name: curve_at, curve: sample_fraction, step: 0}
  n_boot: 200
"""


def test_an_open_questions_family_is_a_finding_with_its_trend(tmp_path: Path) -> None:
    """End to end: each p's crossing at its realised fractions, the family's verdict FINDING,
    the trend through the three estimates, in result.json and the report."""
    from rich.console import Console

    from grokverify.run.pipeline import RunOptions, run_claims
    from grokverify.stats.trend import fit_trend

    path = tmp_path / "open.yaml"
    path.write_text(OPEN_QUESTION, encoding="utf-8")
    opts = RunOptions(store=tmp_path / "store", reports=tmp_path / "reports", executor="local",
                      device="cpu")
    (run,) = run_claims([load_claim(path)], opts, Console(quiet=True))
    assert run.verdict == Verdict.FINDING and run.family is not None
    assert {m.verdict for m in run.family.members} == {Verdict.FINDING}
    for m in run.family.members:
        p = int(m.member[1:])
        n = p * (p + 1) // 2  # the realised fractions are k / N
        assert [row.columns["x"] for row in m.result.arms] == pytest.approx(
            [round(f * n) / n for f in (0.2, 0.4, 0.6, 0.8, 0.9)])
    want = fit_trend({m.member: (int(m.member[1:]), m.result.estimate, m.result.ci, 0.95)
                      for m in run.family.members}, "power", 0.95)
    result = json.loads((tmp_path / "reports" / "open_tiny" / "result.json").read_text())
    assert result["verdict"] == "FINDING"
    assert result["family"]["trend"]["slope"] == pytest.approx(want["slope"])
    report = (tmp_path / "reports" / "open_tiny" / "report.md").read_text()
    assert "**Verdict: FINDING**" in report and "Trend (power): estimate ≈ " in report
    assert "| p7 | 7 | " in report and "no claimed region, nothing tested" in report


def test_an_open_question_takes_a_fixed_seed_count(tmp_path: Path) -> None:
    text = OPEN_QUESTION.replace("seeds: 30", "seeds: {min: 10, max: 30, step: 10}")
    found = problems(tmp_path, text)
    line = text.splitlines().index("seeds: {min: 10, max: 30, step: 10}") + 1
    assert Has(f"{line} seeds: an open question is estimated at a fixed number of seeds",
               "(nothing is tested, so sequential looks have nothing to stop on)",
               "give seeds as a number") in found, found


def test_a_trend_names_every_member(tmp_path: Path) -> None:
    found = problems(tmp_path, OPEN_QUESTION.replace("p8: 8}", "p9: 8}"))
    assert any("trend.x must give every member its x, and no other" in f for f in found), found
