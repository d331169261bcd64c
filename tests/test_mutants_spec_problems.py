"""Pins what the mutation run of `grokverify/spec.py` (mutmut 3.8.1) left unpinned in the checks
made after a claim's fields validate, in grids, and in the merge of partial experiments.

What is pinned: the exact words of a metric of the wrong kind for its criterion (the metrics of
the kind wanted, the criteria that take the metric, a criterion's note on the kinds it takes
with other params, and when that note is shown); a family under a criterion that gives no
p-values (shown by swapping the catalog's survival_compare schema for one with
``family_ok=False``, since every shipped criterion takes families); which sequential ``seeds``
a refusal points at (the claim's, a scale's, none when the criterion has no refusal); that
every curve field of a metric is checked, and the words for a curve some units lack (which
arm, member and scale); a batch as large as the training split is allowed; a grid's own
problems (path and "allowed here" list), a grid into members (with and without a family), the
line a problem of a generated arm points at; the path of the "not a mapping" problem;
``LoadedClaim.experiments(scales)``; and that ``deep_merge`` shares no nested object with its
inputs, and keeps the settings an optimizer switch does not drop.

Each expected message is written out by hand from the rules the messages state (the metric
names of each kind and the criteria in catalog order, as listed in
``grokverify.claim.metrics``/``criteria``), and each line number is found in the claim text
itself (`line_no`), never copied from the loader's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mutants_spec import CLAIM, problems
from test_spec import edit, line_no

from grokverify.claim.load import LoadedClaim, deep_merge, load_claim
from grokverify.claim.yamlio import SpecError
from grokverify.kinds import CRITERIA

# the block-style claim of test_mutants_spec (one key per line: a wrong line number shows)

SURVIVAL = ("  name: survival_compare\n  baseline: c1\n  treated: c10\n  direction: less\n"
            "  min_effect: 0.2\n")
SCALAR = ("  name: scalar_compare\n  baseline: c1\n  treated: c10\n  direction: less\n"
          "  min_effect: 0.2\n")
VALUE_METRIC = ("metric:\n  name: val_threshold_step\n",
                "metric:\n  name: final_value\n  curve: val_acc\n")

# the words of each kind (catalog.metrics.KIND_WORDS) and its metrics, in catalog order
TIME_WORDS = ("time metric (a time to an event, censored at the budget: val_threshold_step, "
              "train_threshold_step, grokking_lag, delay_ratio, curve_reaches, fall_onset, "
              "fall_onset_ratio, reaches_ratio)")
VALUE_WORDS = "value metric (a signed per-seed value read off a curve, never censored)"
PROPORTION_NOTE = "value metrics with outcome value_below or value_above only"
# the criteria that take a value metric, in catalog order, proportion with its note
VALUE_TAKERS = (f"scalar_compare, equivalence, proportion ({PROPORTION_NOTE}), correlation, "
                "value, crossing")


def load(tmp_path: Path, text: str) -> LoadedClaim:
    path = tmp_path / "claim.yaml"
    path.write_text(text, encoding="utf-8")
    return load_claim(path, limits=None)


# ---------------------------------------------------------------- an unknown name, no close match


@pytest.mark.parametrize("old,new,field,message", [
    ("    train_frac: 0.5", "    train_frac: 0.5\n    split: zzzz", "base.task.split",
     "unknown split strategy 'zzzz'; known: random, skewed, uniform"),
    ("    name: adamw", "    name: qqqq", "base.optimizer.name",
     "unknown optimizer 'qqqq'; known: adam, adamw, sgd"),
    ("    op: add", "    op: zzzz", "base.task.op",
     "unknown operation 'zzzz'; known: add, div, mul, s3, sq_sum, sub"),
], ids=["split", "optimizer", "op"])
def test_an_unknown_name_with_no_close_match_lists_the_known_ones_only(
        tmp_path: Path, old: str, new: str, field: str, message: str) -> None:
    """No "did you mean" (nothing is close), nothing between the name and "; known:"."""
    text = edit(CLAIM, (old, new))
    marker = new.rsplit("\n", 1)[-1].strip()
    assert problems(tmp_path, text) == [f"{line_no(text, marker)} {field}: {message}"]


# ---------------------------------------------------------------- a metric of the wrong kind


def test_a_value_metric_under_survival_compare_names_both_kinds_and_the_takers(
        tmp_path: Path) -> None:
    """survival_compare takes time metrics only (no note of its own); the message lists every
    time metric and every criterion that takes a value metric."""
    text = edit(CLAIM, VALUE_METRIC)
    assert problems(tmp_path, text) == [
        f"{line_no(text, '  name: final_value')} metric.name: criterion 'survival_compare' takes "
        f"a {TIME_WORDS}; 'final_value' is a {VALUE_WORDS}: judge it with {VALUE_TAKERS}"]


def test_proportion_observed_with_a_value_metric_adds_its_note(tmp_path: Path) -> None:
    """proportion accepts value metrics, but not with outcome observed (the default): the
    message says so in the criterion's note, right after the kind it wants."""
    text = edit(CLAIM, VALUE_METRIC, (SURVIVAL, "  name: proportion\n  arm: c10\n"
                                                "  direction: greater\n  threshold: 0.5\n"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, '  name: final_value')} metric.name: criterion 'proportion' takes a "
        f"{TIME_WORDS} ({PROPORTION_NOTE}); 'final_value' is a {VALUE_WORDS}: judge it with "
        f"{VALUE_TAKERS}"]


def test_a_criterion_note_is_left_out_when_it_never_takes_that_kind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A criterion's kinds_note says when other params make it take more kinds: a criterion
    that does not accept the metric's kind at all (survival_compare, given a note here) gets no
    note, as the note could not help."""
    monkeypatch.setattr(CRITERIA["survival_compare"], "kinds_note", "a note")
    text = edit(CLAIM, VALUE_METRIC)
    assert problems(tmp_path, text) == [
        f"{line_no(text, '  name: final_value')} metric.name: criterion 'survival_compare' takes "
        f"a {TIME_WORDS}; 'final_value' is a {VALUE_WORDS}: judge it with {VALUE_TAKERS}"]


# ---------------------------------------------------------------- a family under a criterion


def test_a_family_under_a_criterion_without_p_values_is_refused_naming_the_takers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """survival_compare made family_ok=False: the family is refused at its line, and the
    message lists every other criterion (all take families), comma-separated."""
    monkeypatch.setattr(CRITERIA["survival_compare"], "family_ok", False)
    text = CLAIM + "family:\n  members:\n    a: {}\n    b: {}\n"
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'family:')} family: criterion 'survival_compare' gives no one-sided "
        "p-values against the boundary of its claimed region, so its members cannot be "
        "combined into a family; families take cox_hazard_ratio, scalar_compare, equivalence, "
        "proportion, correlation, value, crossing"]


# ---------------------------------------------------------------- sequential seeds


SEQUENTIAL = "    seeds:\n      min: 2\n      max: 4\n      step: 1\n"


def test_a_criterion_without_a_refusal_takes_sequential_seeds(tmp_path: Path) -> None:
    """cox_hazard_ratio has no sequential refusal: sequential seeds, the claim's and a
    scale's, load."""
    text = edit(CLAIM, ("  name: survival_compare", "  name: cox_hazard_ratio"),
                ("seeds: 3", "seeds:\n  min: 2\n  max: 6\n  step: 2"),
                ("    description: small\n", "    description: small\n" + SEQUENTIAL))
    loaded = load(tmp_path, text)
    assert loaded.max_seeds("quick") == 4


def test_rmst_refusal_points_at_the_scale_with_sequential_seeds_only(tmp_path: Path) -> None:
    """summary: rmst with a fixed top-level seed count and one scale with sequential seeds:
    one problem, at scales.quick.seeds (its line), none at the top-level seeds."""
    text = edit(CLAIM, ("  min_effect: 0.2\n", "  min_effect: 0.2\n  summary: rmst\n"),
                ("    description: small\n", "    description: small\n" + SEQUENTIAL))
    refusal = ("summary: rmst is calibrated at a fixed number of seeds only: its bootstrap "
               "interval gave false verdicts of 0.032 / 0.038 against the nominal 0.025 at the "
               "strict levels of early sequential looks (benchmarks/calibration.py); give "
               "`seeds` as a number, or use summary: median")
    assert problems(tmp_path, text) == [
        f"{line_no(text, '    seeds:')} scales.quick.seeds: {refusal}"]
    both = edit(text, ("seeds: 3", "seeds:\n  min: 2\n  max: 6\n  step: 2"))
    assert problems(tmp_path, both) == [
        f"{line_no(both, 'seeds:')} seeds: {refusal}",
        f"{line_no(both, '    seeds:')} scales.quick.seeds: {refusal}"]


# ---------------------------------------------------------------- curves


def test_every_curve_field_of_a_metric_is_checked(tmp_path: Path) -> None:
    """curve_ratio's numerator is recorded, its denominator is not: the denominator is
    refused (a known first field does not end the check)."""
    text = edit(CLAIM, ("metric:\n  name: val_threshold_step\n",
                        "metric:\n  name: curve_ratio\n  start: 0\n  end: 100\n"
                        "  numerator: val_acc\n  denominator: val_los\n"), (SURVIVAL, SCALAR))
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'denominator: val_los')} metric.denominator: unknown curve 'val_los' "
        "(did you mean 'val_loss'?); the experiment records: train_acc, train_loss, val_acc, "
        "val_loss"]


def test_an_unknown_curve_with_no_close_match_has_no_hint(tmp_path: Path) -> None:
    text = edit(CLAIM, ("metric:\n  name: val_threshold_step\n",
                        "metric:\n  name: final_value\n  curve: zzzz\n"), (SURVIVAL, SCALAR))
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'curve: zzzz')} metric.curve: unknown curve 'zzzz'; the experiment "
        "records: train_acc, train_loss, val_acc, val_loss"]


def test_a_curve_one_member_lacks_names_each_unit_that_lacks_it(tmp_path: Path) -> None:
    """Member `a` adds the update_norm probe, member `b` does not: the metric's curve is
    missing from both compared arms of `b` (listed, comma-separated, with member and scale),
    and what `b` records is listed."""
    text = edit(CLAIM, ("metric:\n  name: val_threshold_step\n",
                        "metric:\n  name: final_value\n  curve: update_norm_ratio\n"),
                (SURVIVAL, SCALAR))
    text += ("family:\n  members:\n    a:\n      probes:\n        - name: update_norm\n"
             "          every: 10\n    b: {}\n")
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'curve: update_norm_ratio')} metric.curve: curve 'update_norm_ratio' "
        "is not recorded by arm 'c1' of member 'b' at scale 'quick', arm 'c10' of member 'b' "
        "at scale 'quick'; it records: train_acc, train_loss, val_acc, val_loss"]


# ---------------------------------------------------------------- batch size


def test_a_batch_as_large_as_the_training_split_is_allowed(tmp_path: Path) -> None:
    """p 20: 400 ordered pairs, 200 for training at train_frac 0.5; batch_size 200 is the full
    training set, not more: it loads (201 is refused)."""
    text = edit(CLAIM, ("    p: 31", "    p: 20"),
                ("    eval_interval: 10\n", "    eval_interval: 10\n    batch_size: 200\n"))
    loaded = load(tmp_path, text)
    assert {exp.training.batch_size for *_, exp in loaded.experiments()} == {200}
    over = edit(text, ("batch_size: 200", "batch_size: 201"))
    assert problems(tmp_path, over) == [
        f"{line_no(over, 'batch_size: 201')} base.training.batch_size: batch_size 201 exceeds "
        "the 200 training pairs of this split (p 20, train_frac 0.5); use null for full batch "
        "(at scale 'quick', arm 'c1', and 1 more)"]


# ---------------------------------------------------------------- grids


GRID_ARMS = ("arms:\n  c1:\n    optimizer:\n      emb_lr_mult: 1\n  c10:\n    optimizer:\n"
             "      emb_lr_mult: 10\n")


def test_a_grid_problem_under_a_capitalised_axis_keeps_the_axis_in_its_path(
        tmp_path: Path) -> None:
    """An axis named `C` (a name pydantic might use for a union branch) with one value: the
    problem is at grid.axes.C.values, on the values line."""
    text = edit(CLAIM, (GRID_ARMS, "")) + (
        "grid:\n  into: arms\n  axes:\n    C:\n      path: optimizer.emb_lr_mult\n"
        "      values: [1]\n  name: \"c{C}\"\n")
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'values: [1]')} grid.axes.C.values: List should have at least 2 items "
        "after validation, not 1"]


def test_an_unknown_grid_key_lists_the_grid_fields(tmp_path: Path) -> None:
    text = edit(CLAIM, (GRID_ARMS, "")) + (
        "grid:\n  into: arms\n  axes:\n    c:\n      path: optimizer.emb_lr_mult\n"
        "      values: [1, 10]\n  name: \"c{c}\"\n  bases: {}\n")
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'bases:')} grid.bases: unknown key 'bases' (did you mean 'base'?); "
        "allowed here: axes, base, into, name"]


MEMBER_GRID = ("grid:\n  into: members\n  axes:\n    p:\n      path: task.p\n"
               "      values: [23, 31]\n  name: \"p{p}\"\n")


def test_a_grid_into_members_needs_a_family(tmp_path: Path) -> None:
    text = CLAIM + MEMBER_GRID
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'into: members')} grid.into: a grid into members needs a family: "
        "section (claims, correction) to put them in"]


def test_a_grid_into_members_adds_family_members(tmp_path: Path) -> None:
    """The generated members join those the family has; one it already has is refused,
    naming family.members."""
    text = CLAIM + "family:\n  members:\n    p17:\n      task:\n        p: 17\n" + MEMBER_GRID
    loaded = load(tmp_path, text)
    assert {m: arms["c1"].task.p for m, arms in loaded.members("quick").items()} == {
        "p17": 17, "p23": 23, "p31": 31}
    taken = edit(text, ("    p17:\n      task:\n        p: 17\n",
                        "    p23:\n      task:\n        p: 17\n"))
    name_line = line_no(taken, '  name: "p{p}"')
    assert problems(tmp_path, taken) == [
        f"{name_line} grid.name: the grid generates 'p23', which "
        "family.members already has"]


def test_a_generated_members_problem_points_at_the_grid_value(tmp_path: Path) -> None:
    """A member generated with p 1 (below the minimum of 2): the problem is blamed on the
    generated member's field, at the line of the grid's value."""
    text = CLAIM + "family:\n  members:\n    p17:\n      task:\n        p: 17\n" + edit(
        MEMBER_GRID, ("values: [23, 31]", "values: [23,\n        1]"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, '        1]')} family.members.p1.task.p: Input should be greater than "
        "or equal to 2 (got 1)"]


def test_a_problem_of_a_whole_generated_arm_points_at_the_grid_name(tmp_path: Path) -> None:
    """A scalar_mlp (no embedding) with a grid over emb_lr_mult: arm c2 fails as a whole (not
    at one field), and the problem points at the line of the grid's name."""
    text = edit(CLAIM, (GRID_ARMS, ""),
                ("    kind: embed_mlp\n    d: 16\n", "    kind: scalar_mlp\n"),
                ("  treated: c10", "  treated: c2")) + (
        "grid:\n  into: arms\n  axes:\n    c:\n      path: optimizer.emb_lr_mult\n"
        "      values: [1, 2]\n  name: \"c{c}\"\n")
    name_line = line_no(text, '  name: "c{c}"')
    assert problems(tmp_path, text) == [
        f"{name_line} arms.c2: model 'scalar_mlp' has no embedding "
        "group: emb_lr_mult/emb_lr/emb_weight_decay do not apply"]


# ---------------------------------------------------------------- loading


def test_a_file_that_is_not_a_mapping_has_an_empty_path(tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text("- 1\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_claim(path, limits=None)
    (problem,) = info.value.problems
    assert (problem.line, problem.path) == (1, "")
    assert problem.message == "expected a mapping of claim fields, got a list"


def test_experiments_at_named_scales_only(tmp_path: Path) -> None:
    """Two scales (full with p 23): experiments(["full"]) yields the full scale's units only,
    experiments() both scales'."""
    text = edit(CLAIM, ("    description: small\n",
                        "    description: small\n  full:\n    description: big\n"
                        "    overrides:\n      task:\n        p: 23\n"))
    loaded = load(tmp_path, text)
    assert [(s, m, a, e.task.p) for s, m, a, e in loaded.experiments(["full"])] == [
        ("full", "", "c1", 23), ("full", "", "c10", 23)]
    assert [(s, a, e.task.p) for s, _, a, e in loaded.experiments()] == [
        ("quick", "c1", 31), ("quick", "c10", 31), ("full", "c1", 23), ("full", "c10", 23)]


# ---------------------------------------------------------------- deep_merge


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
    """adam -> adamw: betas and eps apply to both (catalog.optimizers.ONLY_FOR), so they stay;
    adam -> sgd drops them and keeps lr."""
    base = {"name": "adam", "lr": 0.01, "betas": [0.8, 0.9], "eps": 1e-6}
    assert deep_merge(base, {"name": "adamw"}) == {
        "name": "adamw", "lr": 0.01, "betas": [0.8, 0.9], "eps": 1e-6}
    assert deep_merge(base, {"name": "sgd"}) == {"name": "sgd", "lr": 0.01}
