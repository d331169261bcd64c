"""The four ways a verdict used to be decided by the encoding, each as a tiny claim that now
ends NOT TESTED or INCONCLUSIVE for the right reason (docs/verdicts.md, "In five minutes")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grokverify.cli import main


def _run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> dict:
    claim = tmp_path / "claim.yaml"
    claim.write_text(text)
    code = main(["run", str(claim), "--executor", "local", "--device", "cpu", "--store",
                 str(tmp_path / "s"), "--reports", str(tmp_path / "r")])
    capsys.readouterr()
    assert code == 0
    return json.loads((tmp_path / "r" / "tiny" / "result.json").read_text())


def test_class_1_a_probe_coarser_than_the_event_it_times_is_not_tested(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tiny_claim.read_text().replace(
        "  training:", "  probes: [{name: sigma_max, of: [E], every: 100}]\n  training:") + (
        "checks: [{kind: probe_resolution, arm: c10, curve: sigma_max.E, at_most: 0.25}]\n")
    result = _run(tmp_path, text, capsys)
    assert result["verdict"] == "NOT TESTED"  # every 100 steps against an event at ~190
    assert result["checks"][0]["measured"] == pytest.approx(100 / 190)


def test_class_2_a_skew_that_starves_nothing_is_not_tested(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tiny_claim.read_text().replace(
        "unordered: true, train_frac: 0.7}", "unordered: false, train_frac: 0.7, split: skewed}"
    ) + "checks: [{kind: rare_value_coverage, at_most: 0.15}]\n"
    result = _run(tmp_path, text, capsys)
    assert result["verdict"] == "NOT TESTED"
    assert all(c["measured"] > 0.15 and not c["passes"] for c in result["checks"])


def test_class_3_values_without_spread_decide_nothing(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tiny_claim.read_text().replace(
        "  training:", "  probes: [{name: token_frequency, every: 100}]\n  training:").replace(
        "metric: {name: val_threshold_step}",
        "metric: {name: curve_mean, curve: token_frequency.E, start: 0, end: 100}")
    text = text[:text.index("criterion:")] + (
        "criterion: {name: value, arm: c10, target: 1.0, tol: 0.01, n_boot: 200}\n")
    result = _run(tmp_path, text, capsys)
    values = {r["metric"] for r in result["per_seed"] if r["arm"] == "c10"}
    assert values == {1.0}  # full batch: every embedding row is in every update
    assert result["verdict"] == "INCONCLUSIVE"
    assert result["result"]["details"]["verdict_if_interval_held"] == "SUPPORTED"
    assert "interval method does not hold" in result["reason"]


def test_class_4_a_member_outside_the_sources_question_is_left_out(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tiny_claim.read_text() + (
        "family:\n  untested: leave_out\n  members:\n"
        "    lr_ok: {optimizer: {lr: 0.002}}\n    lr_dead: {optimizer: {lr: 1.0e-8}}\n"
        "checks: [{kind: event_share, arm: c1, at_least: 0.3}]\n")
    result = _run(tmp_path, text, capsys)
    members = {m["member"]: m["verdict"] for m in result["family"]["members"]}
    assert members["lr_dead"] == "NOT TESTED" and members["lr_ok"] != "NOT TESTED"
    assert result["verdict"] == members["lr_ok"]
    assert "Left out as not tested (untested: leave_out): lr_dead" in result["reason"]
