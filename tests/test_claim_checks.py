"""A claim's validity checks and interpretation as the loader and `validate` see them."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimtext import CLAIM, assert_bad, line_no, load, validate, write

from grokverify.claim.schema import NOT_TESTED_MEANS, InterpretationSpec

CHECKS = """\
checks:
  - kind: event_share
    arm: c1
    at_least: 0.5
  - kind: value_within
    curve: sigma_max.E
    at_most: 3.0
"""


def test_checks_load_with_their_arm_and_bounds(tmp_path: Path) -> None:
    text = CLAIM + CHECKS.replace("value_within\n    curve: sigma_max.E", "value_within\n"
                                  "    curve: val_acc")
    checks = load(tmp_path, text).claim.checks
    assert [c.kind for c in checks] == ["event_share", "value_within"]
    assert checks[0].arm == "c1" and checks[0].needed() == "≥ 0.5"
    assert checks[1].needed() == "≤ 3"


def test_a_check_on_an_unknown_arm_names_its_line(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    text = CLAIM + CHECKS.replace("arm: c1", "arm: c3")
    assert_bad(capsys, tmp_path, text, line_no(text, "arm: c3"), "checks[0].arm",
               "no arm named 'c3'", "'c1', 'c10'")


def test_a_check_of_a_curve_the_arms_do_not_record_is_refused(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = CLAIM + CHECKS
    assert_bad(capsys, tmp_path, text, line_no(text, "- kind: value_within"), "checks[1]",
               "reads curve 'sigma_max.E'", "it records: train_acc")


def test_an_unknown_check_kind_lists_the_known_ones(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    text = CLAIM + CHECKS.replace("kind: event_share", "kind: event_shares")
    found = assert_bad(capsys, tmp_path, text, line_no(text, "kind: event_shares"),
                       "checks[0].kind", "event_share")
    assert "rare_value_coverage" in found


def test_validate_names_the_built_in_checks_that_apply(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    skewed = CLAIM.replace("split: random", "split: skewed")
    rc, out, _ = validate(capsys, write(tmp_path, skewed))
    assert rc == 0 and "checks declared: none" in out
    assert "check event_share applies" in out and "check rare_value_coverage applies" in out
    assert "no interpretation" in out
    declared = skewed + CHECKS.replace("value_within\n    curve: sigma_max.E",
                                       "rare_value_coverage")
    rc, out, _ = validate(capsys, write(tmp_path, declared))
    assert rc == 0 and "checks declared: event_share, rare_value_coverage" in out
    assert "applies and is not declared" not in out


def test_init_sigma_ratio_applies_to_a_rescaled_arm_and_needs_e_and_w(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    matched = CLAIM.replace("  training:\n", "  interventions: [{name: rescale_embedding, "
                            "sigma_max: W}]\n  training:\n", 1)
    rc, out, _ = validate(capsys, write(tmp_path, matched))
    assert rc == 0 and "check init_sigma_ratio applies" in out
    check = "checks:\n  - kind: init_sigma_ratio\n    at_least: 0.99\n"
    transformer = CLAIM.replace("kind: embed_mlp\n    d: 64\n    hidden: 256\n",
                                "kind: transformer\n    d: 16\n    mlp: 32\n") + check
    assert_bad(capsys, tmp_path, transformer, line_no(transformer, "- kind: init_sigma_ratio"),
               "checks[0]", "reads the embedding E and the weights W", "'transformer' has: E")


def test_the_interpretation_gives_the_sentence_under_each_verdict() -> None:
    spec = InterpretationSpec(supported="c = 10 helps SGD too.\n", refuted="It does not.",
                              inconclusive="Undecided.",
                              favours={"supported": "paper", "refuted": "critic"})
    assert spec.meaning("SUPPORTED") == "c = 10 helps SGD too. (favours the paper's account)"
    assert spec.meaning("REFUTED").endswith("(favours its critic's account)")
    assert spec.meaning("PARTIAL") == spec.meaning("INCONCLUSIVE") == "Undecided."
    assert spec.meaning("NOT TESTED") == NOT_TESTED_MEANS and spec.meaning("FINDING") is None
    with pytest.raises(ValueError, match="at least one verdict"):
        InterpretationSpec()
