"""Resolving a claim (grokverify.claim.load): base, scale overrides, family member, arm and the
scale's arm override merged in that order; a problem of a resolved experiment blamed on the
claim field that sets it; and the checks across fields (arms named, metric kind against
criterion, families, sequential seeds, curves, batch size)."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimtext import CLAIM, SMALL_CLAIM, At, assert_bad, edit, line_no, load, validate, write
from conftest import problems

from grokverify.claim.load import deep_merge, load_claim
from grokverify.claim.models import EmbedMLPSpec, ScalarMLPSpec, ToySumSpec
from grokverify.kinds import CRITERIA

SURVIVAL = ("  name: survival_compare\n  baseline: c1\n  treated: c10\n  direction: less\n"
            "  min_effect: 0.2\n")
SCALAR = ("  name: scalar_compare\n  baseline: c1\n  treated: c10\n  direction: less\n"
          "  min_effect: 0.2\n")
VALUE_METRIC = ("metric:\n  name: val_threshold_step\n",
                "metric:\n  name: final_value\n  curve: val_acc\n")

# the words of each kind (claim.metrics.KIND_WORDS) and its metrics, in registry order
TIME_WORDS = ("time metric (a time to an event, censored at the budget: val_threshold_step, "
              "train_threshold_step, grokking_lag, delay_ratio, curve_reaches, fall_onset, "
              "fall_onset_ratio, reaches_ratio)")
VALUE_WORDS = "value metric (a signed per-seed value read off a curve, never censored)"
PROPORTION_NOTE = "value metrics with outcome value_below or value_above only"
# the criteria that take a value metric, in registry order, proportion with its note
VALUE_TAKERS = (f"scalar_compare, equivalence, proportion ({PROPORTION_NOTE}), correlation, "
                "value, crossing")


def test_the_small_claim_loads(tmp_path: Path) -> None:
    """The claim the tests below break is itself fine (each refusal is the edit's)."""
    assert sorted(load(tmp_path, SMALL_CLAIM).claim.arms) == ["c1", "c10"]


# ---------------------------------------------------------------- merging


def test_deep_merge_does_not_mutate_inputs() -> None:
    base = {"a": {"x": 1, "y": 2}, "b": [1, 2]}
    override = {"a": {"y": 3}, "c": {"z": 4}}
    merged = deep_merge(base, override)
    assert merged == {"a": {"x": 1, "y": 3}, "b": [1, 2], "c": {"z": 4}}
    assert base == {"a": {"x": 1, "y": 2}, "b": [1, 2]}
    assert override == {"a": {"y": 3}, "c": {"z": 4}}
    merged["b"].append(3)
    merged["c"]["z"] = 5
    assert base["b"] == [1, 2] and override["c"]["z"] == 4


def test_deep_merge_kind_change_replaces_section() -> None:
    assert deep_merge({"kind": "a", "d": 1}, {"kind": "b", "e": 2}) == {"kind": "b", "e": 2}
    assert deep_merge({"kind": "a", "d": 1}, {"kind": "a", "e": 2}) == {"kind": "a", "d": 1, "e": 2}


def test_a_kind_change_shares_nothing_with_the_override() -> None:
    """The replaced section is a deep copy of the override: changing it leaves the override."""
    override = {"kind": "b", "sizes": [1, 2], "sub": {"x": [1]}}
    merged = deep_merge({"kind": "a", "d": 1}, override)
    assert merged == {"kind": "b", "sizes": [1, 2], "sub": {"x": [1]}}
    merged["sizes"].append(3)
    merged["sub"]["x"].append(2)
    assert override == {"kind": "b", "sizes": [1, 2], "sub": {"x": [1]}}


def test_an_overriding_list_of_mappings_is_copied_deeply() -> None:
    """A probe list from an override: changing a probe of the result leaves the override."""
    override = {"probes": [{"name": "sigma_max", "every": 10}]}
    merged = deep_merge({"probes": []}, override)
    merged["probes"][0]["every"] = 20
    assert override == {"probes": [{"name": "sigma_max", "every": 10}]}


def test_an_optimizer_switch_keeps_the_settings_the_new_one_has() -> None:
    """adam -> adamw: betas and eps apply to both (claim.optimizers.ONLY_FOR), so they stay;
    adam -> sgd drops them and keeps lr."""
    base = {"name": "adam", "lr": 0.01, "betas": [0.8, 0.9], "eps": 1e-6}
    assert deep_merge(base, {"name": "adamw"}) == {
        "name": "adamw", "lr": 0.01, "betas": [0.8, 0.9], "eps": 1e-6}
    assert deep_merge(base, {"name": "sgd"}) == {"name": "sgd", "lr": 0.01}


def test_arm_switching_optimizer_drops_the_old_optimizers_own_settings(tmp_path: Path) -> None:
    """An adam base with betas and an arm that switches to sgd: the arm is plain sgd with the
    base's shared settings (lr, weight decay), not an error about adam's betas."""
    text = edit(CLAIM, ("    name: sgd\n    lr: 0.1\n    momentum: 0.9\n",
                        "    name: adam\n    lr: 0.1\n    betas: [0.9, 0.98]\n"),
                ("  c1:\n    optimizer:\n", "  c1:\n    optimizer:\n      name: sgd\n"
                                            "      momentum: 0.5\n"))
    arms = load_claim(write(tmp_path, text)).resolved["paper"]
    sgd, adam = arms["c1"].optimizer, arms["c10"].optimizer
    assert (sgd.name, sgd.lr, sgd.weight_decay, sgd.momentum, sgd.betas) == \
        ("sgd", 0.1, 0.001, 0.5, None)
    assert (adam.name, adam.betas, adam.momentum) == ("adam", (0.9, 0.98), 0.0)
    assert deep_merge({"name": "adam", "lr": 1, "eps": 1e-6}, {"name": "sgd"}) == \
        {"name": "sgd", "lr": 1}


def test_arm_override_changes_only_named_fields(tmp_path: Path) -> None:
    loaded = load_claim(write(tmp_path, CLAIM))
    assert set(loaded.resolved) == {"quick", "paper"}
    for scale in loaded.resolved:
        c1, c10 = loaded.resolved[scale]["c1"], loaded.resolved[scale]["c10"]
        assert (c1.optimizer.emb_lr_mult, c10.optimizer.emb_lr_mult) == (1, 10)
        assert c10.optimizer.model_copy(update={"emb_lr_mult": 1}) == c1.optimizer
        assert (c1.task, c1.model, c1.training) == (c10.task, c10.model, c10.training)
    paper = loaded.resolved["paper"]["c10"]
    assert (paper.optimizer.name, paper.optimizer.lr, paper.optimizer.momentum,
            paper.optimizer.weight_decay) == ("sgd", 0.1, 0.9, 0.001)
    assert paper.task.p == 31 and paper.training.steps == 1000


def test_scale_override_applies_to_every_arm(tmp_path: Path) -> None:
    loaded = load_claim(write(tmp_path, CLAIM))
    assert loaded.scale_seeds("quick") == 4
    for arm in ("c1", "c10"):
        quick, paper = loaded.resolved["quick"][arm], loaded.resolved["paper"][arm]
        assert (quick.task.p, quick.training.steps, quick.training.eval_interval) == (23, 500, 50)
        assert (paper.task.p, paper.training.steps, paper.training.eval_interval) == (31, 1000, 100)
        # fields the scale does not name are the base's
        assert quick.task.model_copy(update={"p": 31}) == paper.task
        assert quick.training.batch_size == 128 and quick.training.val_threshold == 0.95
        assert quick.model == paper.model


def test_scale_arm_override_wins_over_arm(tmp_path: Path) -> None:
    text = edit(CLAIM, ("        eval_interval: 50\n",
                        "        eval_interval: 50\n    arms:\n      c10:\n        optimizer:\n"
                        "          emb_lr_mult: 3\n        training:\n          steps: 700\n"))
    loaded = load_claim(write(tmp_path, text))
    assert loaded.resolved["quick"]["c10"].optimizer.emb_lr_mult == 3
    assert loaded.resolved["quick"]["c10"].training.steps == 700  # over the scale's 500 too
    assert loaded.resolved["quick"]["c10"].training.eval_interval == 50
    assert loaded.resolved["quick"]["c1"].optimizer.emb_lr_mult == 1
    assert loaded.resolved["quick"]["c1"].training.steps == 500
    assert loaded.resolved["paper"]["c10"].optimizer.emb_lr_mult == 10


def test_arm_kind_change_replaces_model(tmp_path: Path) -> None:
    text = edit(CLAIM, ("  c1:\n", "  c1:\n    model:\n      kind: toy_sum\n      hidden: 50\n"))
    loaded = load_claim(write(tmp_path, text))
    for scale in ("quick", "paper"):
        model = loaded.resolved[scale]["c1"].model
        assert isinstance(model, ToySumSpec)
        assert model == ToySumSpec(kind="toy_sum", hidden=50)  # nothing of embed_mlp leaks in
        assert isinstance(loaded.resolved[scale]["c10"].model, EmbedMLPSpec)


def test_arm_kind_change_to_scalar_mlp(tmp_path: Path) -> None:
    text = edit(CLAIM, ("  c10:\n    optimizer:\n      emb_lr_mult: 10\n",
                        "  c10:\n    model:\n      kind: scalar_mlp\n"))
    loaded = load_claim(write(tmp_path, text))
    assert loaded.resolved["quick"]["c10"].model == ScalarMLPSpec(kind="scalar_mlp")


def test_arm_same_kind_merges_model(tmp_path: Path) -> None:
    text = edit(CLAIM, ("  c1:\n", "  c1:\n    model:\n      kind: embed_mlp\n      hidden: 99\n"))
    model = load_claim(write(tmp_path, text)).resolved["paper"]["c1"].model
    assert isinstance(model, EmbedMLPSpec)
    assert (model.d, model.hidden) == (64, 99)


def test_arm_kind_change_drops_base_fields_that_do_not_apply(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Merging toy_sum fields over embed_mlp's `d` would be a spec error; replacement is not."""
    text = edit(CLAIM, ("  c1:\n", "  c1:\n    model:\n      kind: toy_sum\n"))
    rc, _, err = validate(capsys, write(tmp_path, text))
    assert (rc, err) == (0, "")


def test_experiments_at_named_scales_only(tmp_path: Path) -> None:
    """Two scales (full with p 23): experiments(["full"]) yields the full scale's experiments only,
    experiments() both scales'."""
    text = edit(SMALL_CLAIM, ("    description: small\n",
                              "    description: small\n  full:\n    description: big\n"
                              "    overrides:\n      task:\n        p: 23\n"))
    loaded = load(tmp_path, text)
    assert [(s, m, a, e.task.p) for s, m, a, e in loaded.experiments(["full"])] == [
        ("full", "", "c1", 23), ("full", "", "c10", 23)]
    assert [(s, a, e.task.p) for s, _, a, e in loaded.experiments()] == [
        ("quick", "c1", 31), ("quick", "c10", 31), ("full", "c1", 23), ("full", "c10", 23)]


# ---------------------------------------------------------------- where a problem is blamed


def test_typo_reported_once_across_scales(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """An arm override is resolved at every scale; its problem must still be listed once."""
    text = edit(CLAIM, ("      emb_lr_mult: 10", "      emb_lr_mul: 10"))
    _, _, err = validate(capsys, write(tmp_path, text))
    assert err.count("emb_lr_mul'") == 1, err


def test_scale_override_error_points_at_scale(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The base is fine; the quick scale's p = 12 makes div impossible there."""
    text = edit(CLAIM, ("    op: add\n", "    op: div\n"), ("        p: 23", "        p: 12"))
    assert_bad(capsys, tmp_path, text, line_no(text, "      task:"),
               "scales.quick.overrides.task", "prime")


def test_scale_override_conflict_points_at_scale(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("        eval_interval: 50", "        eval_interval: 900"))
    assert_bad(capsys, tmp_path, text, line_no(text, "      training:"),
               "scales.quick.overrides.training", "exceeds steps (500)")


def test_arm_bad_value_points_at_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("      emb_lr_mult: 10", "      emb_lr_mult: 10\n      lr: -1"))
    assert_bad(capsys, tmp_path, text, line_no(text, "lr: -1"), "arms.c10.optimizer.lr",
               "greater than 0", "(got -1)")


def test_scale_arm_bad_value_points_at_scale_arm(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("    seeds: 20\n", "    seeds: 20\n    arms:\n      c1:\n"
                                          "        optimizer:\n          momentum: 1.5\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "momentum: 1.5"),
               "scales.paper.arms.c1.optimizer.momentum", "less than 1")


# ---------------------------------------------------------------- arms


def test_scale_names_missing_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("    seeds: 20\n", "    seeds: 20\n    arms:\n      c3:\n"
                                          "        optimizer:\n          lr: 0.2\n"))
    found = assert_bad(capsys, tmp_path, text, line_no(text, "c3:"), "scales.paper.arms.c3",
                       "no arm named 'c3'")
    assert "c1" in found and "c10" in found


@pytest.mark.parametrize("role", ["baseline", "treated"])
def test_criterion_names_missing_arm(role: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    old = "  baseline: c1\n" if role == "baseline" else "  treated: c10\n"
    text = edit(CLAIM, (old, f"  {role}: c100\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "c100"), f"criterion.{role}",
               "'c100'", "does not exist")


# ---------------------------------------------------------------- a metric of the wrong kind


def test_a_value_metric_under_survival_compare_names_both_kinds_and_the_takers(
        tmp_path: Path) -> None:
    """survival_compare takes time metrics only (no note of its own); the message lists every
    time metric and every criterion that takes a value metric."""
    text = edit(SMALL_CLAIM, VALUE_METRIC)
    (found,) = problems(tmp_path, text)
    assert found == At(line_no(text, "  name: final_value"), "metric.name",
                       f"criterion 'survival_compare' takes a {TIME_WORDS}; ",
                       f"'final_value' is a {VALUE_WORDS}: ", f"judge it with {VALUE_TAKERS}")
    assert f"{TIME_WORDS} (" not in found  # no note


def test_proportion_observed_with_a_value_metric_adds_its_note(tmp_path: Path) -> None:
    """proportion accepts value metrics, but not with outcome observed (the default): the
    message says so in the criterion's note, right after the kind it wants."""
    text = edit(SMALL_CLAIM, VALUE_METRIC, (SURVIVAL, "  name: proportion\n  arm: c10\n"
                                                      "  direction: greater\n  threshold: 0.5\n"))
    assert problems(tmp_path, text) == [
        At(line_no(text, "  name: final_value"), "metric.name",
           f"criterion 'proportion' takes a {TIME_WORDS} ({PROPORTION_NOTE}); ",
           f"'final_value' is a {VALUE_WORDS}: ", f"judge it with {VALUE_TAKERS}")]


def test_a_criterion_note_is_left_out_when_it_never_takes_that_kind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A criterion's kinds_note says when other params make it take more kinds: a criterion
    that does not accept the metric's kind at all (survival_compare, given a note here) gets no
    note, as the note could not help."""
    monkeypatch.setattr(CRITERIA["survival_compare"], "kinds_note", "a note")
    text = edit(SMALL_CLAIM, VALUE_METRIC)
    (found,) = problems(tmp_path, text)
    assert found == At(line_no(text, "  name: final_value"), "metric.name",
                       f"criterion 'survival_compare' takes a {TIME_WORDS}; ",
                       f"judge it with {VALUE_TAKERS}")
    assert "a note" not in found


# ---------------------------------------------------------------- a family under a criterion


def test_a_family_under_a_criterion_without_p_values_is_refused_naming_the_takers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """survival_compare made family_ok=False: the family is refused at its line, and the
    message lists every other criterion (all take families), comma-separated."""
    monkeypatch.setattr(CRITERIA["survival_compare"], "family_ok", False)
    text = SMALL_CLAIM + "family:\n  members:\n    a: {}\n    b: {}\n"
    assert problems(tmp_path, text) == [
        At(line_no(text, "family:"), "family", "criterion 'survival_compare'",
           "no one-sided p-values", "cannot be combined into a family",
           "families take cox_hazard_ratio, scalar_compare, equivalence, proportion, "
           "correlation, value, crossing")]


# ---------------------------------------------------------------- sequential seeds


SEQUENTIAL = "    seeds:\n      min: 2\n      max: 4\n      step: 1\n"


def test_a_criterion_without_a_refusal_takes_sequential_seeds(tmp_path: Path) -> None:
    """cox_hazard_ratio has no sequential refusal: sequential seeds, the claim's and a
    scale's, load."""
    text = edit(SMALL_CLAIM, ("  name: survival_compare", "  name: cox_hazard_ratio"),
                ("seeds: 3", "seeds:\n  min: 2\n  max: 6\n  step: 2"),
                ("    description: small\n", "    description: small\n" + SEQUENTIAL))
    loaded = load(tmp_path, text)
    assert loaded.max_seeds("quick") == 4


def test_rmst_refusal_points_at_the_scale_with_sequential_seeds_only(tmp_path: Path) -> None:
    """summary: rmst with a fixed top-level seed count and one scale with sequential seeds:
    one problem, at scales.quick.seeds (its line), none at the top-level seeds."""
    text = edit(SMALL_CLAIM, ("  min_effect: 0.2\n", "  min_effect: 0.2\n  summary: rmst\n"),
                ("    description: small\n", "    description: small\n" + SEQUENTIAL))
    refusal = ("summary: rmst is calibrated at a fixed number of seeds only",
               "false verdicts of 0.032 / 0.038 against the nominal 0.025",
               "(benchmarks/calibration.py)", "give `seeds` as a number, or use summary: median")
    assert problems(tmp_path, text) == [At(line_no(text, "    seeds:"), "scales.quick.seeds",
                                           *refusal)]
    both = edit(text, ("seeds: 3", "seeds:\n  min: 2\n  max: 6\n  step: 2"))
    assert problems(tmp_path, both) == [
        At(line_no(both, "seeds:"), "seeds", *refusal),
        At(line_no(both, "    seeds:"), "scales.quick.seeds", *refusal)]


# ---------------------------------------------------------------- curves


def test_every_curve_field_of_a_metric_is_checked(tmp_path: Path) -> None:
    """curve_ratio's numerator is recorded, its denominator is not: the denominator is
    refused (a known first field does not end the check)."""
    text = edit(SMALL_CLAIM, ("metric:\n  name: val_threshold_step\n",
                              "metric:\n  name: curve_ratio\n  start: 0\n  end: 100\n"
                              "  numerator: val_acc\n  denominator: val_los\n"),
                (SURVIVAL, SCALAR))
    assert problems(tmp_path, text) == [
        At(line_no(text, "denominator: val_los"), "metric.denominator", "unknown curve 'val_los'",
           "(did you mean 'val_loss'?)",
           "the experiment records: train_acc, train_loss, val_acc, val_loss")]


def test_an_unknown_curve_with_no_close_match_has_no_hint(tmp_path: Path) -> None:
    text = edit(SMALL_CLAIM, ("metric:\n  name: val_threshold_step\n",
                              "metric:\n  name: final_value\n  curve: zzzz\n"), (SURVIVAL, SCALAR))
    (found,) = problems(tmp_path, text)
    assert found == At(line_no(text, "curve: zzzz"), "metric.curve", "unknown curve 'zzzz'; ",
                       "the experiment records: train_acc, train_loss, val_acc, val_loss")
    assert "did you mean" not in found


def test_a_curve_one_member_lacks_names_each_experiment_that_lacks_it(tmp_path: Path) -> None:
    """Member `a` adds the update_norm probe, member `b` does not: the metric's curve is
    missing from both compared arms of `b` (listed, comma-separated, with member and scale),
    and what `b` records is listed."""
    text = edit(SMALL_CLAIM, ("metric:\n  name: val_threshold_step\n",
                              "metric:\n  name: final_value\n  curve: update_norm_ratio\n"),
                (SURVIVAL, SCALAR))
    text += ("family:\n  members:\n    a:\n      probes:\n        - name: update_norm\n"
             "          every: 10\n    b: {}\n")
    assert problems(tmp_path, text) == [
        At(line_no(text, "curve: update_norm_ratio"), "metric.curve",
           "curve 'update_norm_ratio' is not recorded by arm 'c1' of member 'b' at scale "
           "'quick', arm 'c10' of member 'b' at scale 'quick'; ",
           "it records: train_acc, train_loss, val_acc, val_loss")]


# ---------------------------------------------------------------- batch size


def test_a_batch_larger_than_an_arms_split_names_the_arm(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    """The base's batch of 128 fits every split; an arm's train_frac leaves the quick scale
    (p 23) fewer pairs than that: refused where the batch size is set, naming where it fails."""
    text = edit(CLAIM, ("  c1:\n", "  c1:\n    task:\n      train_frac: 0.2\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "    batch_size: 128"),
               "base.training.batch_size", "batch_size 128 exceeds the 106 training pairs",
               "(p 23, train_frac 0.2)", "use null for full batch", "(at scale 'quick', arm 'c1')")
    text = edit(text, ("    task:\n      train_frac: 0.2\n",
                       "    task:\n      train_frac: 0.2\n    training:\n      batch_size: null\n"))
    assert load_claim(write(tmp_path, text)).resolved["quick"]["c1"].training.batch_size is None


def test_a_batch_as_large_as_the_training_split_is_allowed(tmp_path: Path) -> None:
    """p 20: 400 ordered pairs, 200 for training at train_frac 0.5; batch_size 200 is the full
    training set, not more: it loads (201 is refused)."""
    text = edit(SMALL_CLAIM, ("    p: 31", "    p: 20"),
                ("    eval_interval: 10\n", "    eval_interval: 10\n    batch_size: 200\n"))
    loaded = load(tmp_path, text)
    assert {exp.training.batch_size for *_, exp in loaded.experiments()} == {200}
    over = edit(text, ("batch_size: 200", "batch_size: 201"))
    assert problems(tmp_path, over) == [
        At(line_no(over, "batch_size: 201"), "base.training.batch_size",
           "batch_size 201 exceeds the 200 training pairs", "(p 20, train_frac 0.5)",
           "(at scale 'quick', arm 'c1', and 1 more)")]


def test_an_image_tasks_batch_is_counted_in_rows(tmp_path: Path) -> None:
    """An image task's training set is rows (images), not pairs."""
    mnist = (Path(__file__).resolve().parent.parent / "claims" / "p2_mnist_grokking.yaml")
    text = edit(mnist.read_text(), ("    batch_size: 200\n", "    batch_size: 1001\n"))
    (found,) = problems(tmp_path, text)
    assert found == At(line_no(text, "batch_size: 1001"), "base.training.batch_size",
                       "batch_size 1001 exceeds the 1000 training rows of this split",
                       "(mnist, n_train 1000)")


def test_a_family_members_batch_is_blamed_on_the_member(tmp_path: Path) -> None:
    """Member `small` sets p 20 (400 pairs, 200 for training at 0.5) and batch_size 300: the
    problem names family.members.small.training.batch_size, at its line, and the experiments it
    fails at (both arms at the one scale)."""
    text = SMALL_CLAIM + ("family:\n  members:\n    small:\n      task:\n        p: 20\n"
                          "      training:\n        batch_size: 300\n    wide: {}\n")
    assert 20 * 20 * 0.5 == 200
    assert problems(tmp_path, text) == [
        At(line_no(text, "batch_size: 300"), "family.members.small.training.batch_size",
           "batch_size 300 exceeds the 200 training pairs", "(p 20, train_frac 0.5)",
           "(at scale 'quick', member 'small', arm 'c1', and 1 more)")]


def test_a_check_that_cannot_measure_an_arm_names_the_arm_member_and_scale(
        tmp_path: Path) -> None:
    """rare_value_coverage cannot read an unordered task: refused at the check, naming where it
    fails (the member only in a family)."""
    checked = SMALL_CLAIM + ("checks:\n  - kind: rare_value_coverage\n    arm: c1\n"
                             "    at_most: 0.6\n    why: w\n")
    rare = "which an unordered task (a <= b) makes rare by construction"
    unordered = edit(checked, ("    train_frac: 0.5\n",
                               "    train_frac: 0.5\n    unordered: true\n"))
    (found,) = problems(tmp_path, unordered)
    assert found.endswith(f"checks[0]: check rare_value_coverage counts the pairs of each value "
                          f"of a, {rare} (arm 'c1', scale 'quick')")
    family = checked + "family:\n  members:\n    plain: {}\n    sym:\n      task:\n" \
                       "        unordered: true\n"
    (found,) = problems(tmp_path, family)
    assert found.endswith(f"{rare} (arm 'c1', member 'sym', scale 'quick')")
