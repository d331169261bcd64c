"""A refused claim in words (grokverify.claim.messages): each problem names the file, line and
field path, says what was expected and what YAML read, suggests the closest key or name, and
lists what is allowed; `validate` reports every problem of every file and exits 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from claimtext import (
    CLAIM,
    ROOT,
    SMALL_CLAIM,
    At,
    assert_bad,
    edit,
    line_no,
    problem_line,
    validate,
    write,
)
from conftest import REPO, Has, problems

from grokverify.claim.messages import deepest_defined
from grokverify.claim.optimizers import OPTIMIZER_NAMES as OPTIMIZERS
from grokverify.claim.yamlio import LineMap
from grokverify.kinds import CRITERIA, METRICS, MODELS, TASKS


def test_validate_reports_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, CLAIM, "good.yaml")
    bad = write(tmp_path, edit(CLAIM, ("    p: 31\n", "    p: 1\n")), "bad.yaml")
    rc, out, err = validate(capsys, bad, good)
    assert rc == 2
    assert str(good) in out and "ok" in out
    assert str(bad) in err and str(good) not in err


def test_every_problem_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("    p: 31\n", "    p: 1\n"), ("seeds: 12\n", "seeds: 0\n"))
    path = write(tmp_path, text)
    rc, _, err = validate(capsys, path)
    assert rc == 2
    problem_line(err, path, line_no(text, "    p: 1"), "base.task.p")
    problem_line(err, path, line_no(text, "seeds: 0"), "seeds")


# ---------------------------------------------------------------- not a claim at all


@pytest.mark.parametrize("text,got", [("5.5\n", "a float"), ("true\n", "a bool"),
                                      ("5\n", "an int"), ("- 1\n- 2\n", "a list"),
                                      ("~\n", "null"), ("null\n", "null")],
                         ids=["float", "bool", "int", "list", "tilde", "null"])
def test_a_file_that_is_not_a_mapping_says_what_it_is(tmp_path: Path, text: str,
                                                       got: str) -> None:
    """A file whose YAML is a number, a list or null is refused at line 1, with no field path,
    naming what YAML read."""
    (found,) = problems(tmp_path, text)
    assert found == At(1, "", "expected a mapping of claim fields", f"got {got}")
    assert found.startswith("1 expected")  # no field path


def test_a_file_that_is_not_a_mapping_has_the_empty_field_path(tmp_path: Path) -> None:
    from grokverify.claim.load import load_claim
    from grokverify.claim.yamlio import SpecError

    with pytest.raises(SpecError) as err:
        load_claim(write(tmp_path, "- 1\n"))
    assert [(p.line, p.path) for p in err.value.problems] == [(1, "")]


# ---------------------------------------------------------------- misspelled keys

TYPOS = [
    # (old, new, key whose line is reported, field path, bad key, suggestion)
    ("  optimizer:\n    name: sgd", "  optimiser:\n    name: sgd", "  optimiser:",
     "base.optimiser", "optimiser", "optimizer"),
    ("      emb_lr_mult: 10", "      emb_lr_mul: 10", "emb_lr_mul:",
     "arms.c10.optimizer.emb_lr_mul", "emb_lr_mul", "emb_lr_mult"),
    ("seeds: 12\n", "seed: 12\n", "seed: 12",
     "seed", "seed", "seeds"),
    ("        steps: 500", "        stpes: 500", "stpes:",
     "scales.quick.overrides.training.stpes", "stpes", "steps"),
    ("    val_threshold: 0.95", "    val_treshold: 0.95", "val_treshold:",
     "base.training.val_treshold", "val_treshold", "val_threshold"),
    ("  role: skeptic", "  rol: skeptic", "  rol:",
     "source.rol", "rol", "role"),
    ("    paper_setting: true", "    paper_settings: true", "paper_settings:",
     "scales.paper.paper_settings", "paper_settings", "paper_setting"),
    ("  min_effect: 0.2", "  min_efect: 0.2", "min_efect:",
     "criterion.min_efect", "min_efect", "min_effect"),
    ("    d: 64", "    dim: 64\n    hiden: 3", "hiden:",
     "base.model.hiden", "hiden", "hidden"),
    ("  c1:\n", "  c1:\n    trainer:\n      steps: 10\n", "trainer:",
     "arms.c1.trainer", "trainer", "training"),
]


@pytest.mark.parametrize("old,new,marker,field,key,hint", TYPOS, ids=[t[3] for t in TYPOS])
def test_misspelled_key(old: str, new: str, marker: str, field: str, key: str, hint: str,
                        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, (old, new))
    assert_bad(capsys, tmp_path, text, line_no(text, marker), field,
               f"unknown key {key!r}", f"did you mean {hint!r}")


def test_misspelled_key_in_shipped_claim(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    text = edit((ROOT / "claims" / "skeptic_sgd.yaml").read_text(encoding="utf-8"),
                ("c10: {optimizer: {emb_lr_mult: 10}}", "c10: {optimizer: {emb_lr_mul: 10}}"))
    found = assert_bad(capsys, tmp_path, text, line_no(text, "emb_lr_mul:"),
                       "arms.c10.optimizer.emb_lr_mul", "did you mean 'emb_lr_mult'")
    assert "allowed here:" in found


def test_arm_overrides_nonexistent_field(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("      emb_lr_mult: 1\n", "      foo: 1\n"))
    found = assert_bad(capsys, tmp_path, text, line_no(text, "foo: 1"), "arms.c1.optimizer.foo",
                       "unknown key 'foo'", "allowed here:")
    assert "emb_lr_mult" in found


def test_arm_overrides_nonexistent_section_flow_style(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("  c1:\n    optimizer:\n      emb_lr_mult: 1\n", "  c1: {trainer: {}}\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "c1: {trainer"), "arms.c1.trainer",
               "unknown key 'trainer'", "did you mean 'training'")


# ---------------------------------------------------------------- unknown keys: what is allowed


def test_unknown_key_in_a_scales_sequential_seeds_lists_the_seeds_fields(tmp_path: Path) -> None:
    """Under a scale's seeds mapping the allowed keys are min, max, step, spending (not the
    scale's own fields), and the misspelt one is suggested."""
    text = edit(SMALL_CLAIM, ("    description: small",
                              "    description: small\n    seeds: {min: 2, max: 4, stp: 1}"))
    at = line_no(text, "stp: 1")
    assert problems(tmp_path, text) == [
        At(at, "scales.quick.seeds.step", "required field is missing"),
        At(at, "scales.quick.seeds.stp", "unknown key 'stp'", "(did you mean 'step'?)",
           "allowed here: max, min, spending, step")]


def test_unknown_key_in_a_model_lists_that_kinds_fields(tmp_path: Path) -> None:
    """A scalar_mlp (not the first model kind) with a stray key: scalar_mlp's fields, and no
    suggestion when none is close."""
    text = edit(SMALL_CLAIM, ("    kind: embed_mlp\n    d: 16\n",
                              "    kind: scalar_mlp\n    bogus: 1\n"))
    (found,) = problems(tmp_path, text)
    assert found == At(line_no(text, "bogus"), "base.model.bogus", "unknown key 'bogus'",
                       "allowed here: hidden, kind")
    assert "did you mean" not in found


def test_unknown_key_in_a_criterion_lists_that_criterions_fields(tmp_path: Path) -> None:
    """A stray key in a survival_compare criterion, with no close match: no "did you mean", the
    criterion's fields listed."""
    text = edit(SMALL_CLAIM, ("  min_effect: 0.2", "  min_effect: 0.2\n  zzzzz: 1"))
    (found,) = problems(tmp_path, text)
    assert found == At(
        line_no(text, "zzzzz"), "criterion.zzzzz", "unknown key 'zzzzz'",
        "allowed here: baseline, bootstrap_seed, ci_level, direction, effect, margin, "
        "min_effect, n_boot, name, paired, summary, tau, treated")
    assert "did you mean" not in found


def test_unknown_key_in_a_later_criterion_lists_its_own_fields(tmp_path: Path) -> None:
    """cox_hazard_ratio (not the first criterion) with a stray key: cox_hazard_ratio's fields,
    as its parameter model declares them."""
    text = edit(SMALL_CLAIM, ("  name: survival_compare", "  name: cox_hazard_ratio"),
                ("  min_effect: 0.2", "  min_effect: 0.2\n  zzzzz: 1"))
    fields = sorted(CRITERIA["cox_hazard_ratio"].model_fields)
    assert fields != sorted(CRITERIA["survival_compare"].model_fields)
    stray = [p for p in problems(tmp_path, text) if " criterion.zzzzz: " in p]
    assert stray == [At(line_no(text, "zzzzz"), "criterion.zzzzz", "unknown key 'zzzzz'",
                        f"allowed here: {', '.join(fields)}")]
    assert stray[0].endswith(f"allowed here: {', '.join(fields)}")


def test_unknown_key_in_a_probe_points_at_the_list_item(tmp_path: Path) -> None:
    """A stray key in a probe (an item of a list of tagged models): its path runs through the
    item's index (not the probe's name), and the message never ends in an empty list (it may
    or may not list the probe's fields)."""
    text = edit(SMALL_CLAIM, ("    eval_interval: 10\n", "    eval_interval: 10\n  probes:\n"
                              "    - name: sigma_max\n      every: 10\n      bogus: 1\n"))
    found = problems(tmp_path, text)
    assert len(found) == 1
    assert found[0].startswith(f"{line_no(text, 'bogus')} base.probes[0].bogus: ")
    message = found[0].split(": ", 1)[1]
    assert re.fullmatch(r"unknown key 'bogus'(; allowed here: every, name, of)?", message), message


# ---------------------------------------------------------------- unknown names

def _names(registry: dict[str, object]) -> list[str]:
    return sorted(registry)


UNKNOWN_NAMES = [
    ("    op: add", "    op: addd", "op: addd", "base.task.op", TASKS),
    ("    name: sgd", "    name: sgdd", "name: sgdd", "base.optimizer.name", OPTIMIZERS),
    ("    kind: embed_mlp", "    kind: lstm", "kind: lstm", "base.model.kind",
     MODELS),
    ("  name: survival_compare", "  name: bayes_factor", "name: bayes_factor", "criterion.name",
     CRITERIA),
    ("  name: val_threshold_step", "  name: val_step", "name: val_step", "metric.name", METRICS),
]


@pytest.mark.parametrize("old,new,marker,field,registry", UNKNOWN_NAMES,
                         ids=[t[3] for t in UNKNOWN_NAMES])
def test_unknown_name_lists_known(old: str, new: str, marker: str, field: str,
                                  registry: dict[str, object], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, (old, new))
    found = assert_bad(capsys, tmp_path, text, line_no(text, marker), field,
                       repr(new.split(":")[-1].strip()))
    for name in _names(registry):
        assert f"'{name}'" in found or f" {name}" in found, f"{name!r} not listed in {found!r}"


def test_an_unknown_metric_in_a_criterions_x_is_named_a_metric(tmp_path: Path) -> None:
    text = (REPO / "claims" / "p2_grokking_rate_predicts.yaml").read_text()
    text = edit(text, ("x: {name: curve_at,", "x: {name: curve_att,"))
    found = problems(tmp_path, text)
    assert len(found) == 1, found
    assert found[0].startswith(f"{line_no(text, 'curve_att')} criterion.x.name: unknown metric "
                               "'curve_att'"), found
    assert "criterion" not in found[0].split(": ", 1)[1], found


def test_a_word_for_a_number_or_mapping_names_both_alternatives(tmp_path: Path) -> None:
    text = (REPO / "claims" / "adam_lr.yaml").read_text()
    text = re.sub(r"(?m)^seeds: .*$", "seeds: many", text)
    found = problems(tmp_path, text)
    assert found == [Has(f"{line_no(text, 'seeds: many')} seeds: Input should be a valid integer "
                         "(got 'many'); or: Input should be a mapping (got 'many')")], found


def test_unknown_split_lists_known(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("    split: random", "    split: stratified"))
    found = assert_bad(capsys, tmp_path, text, line_no(text, "split:"), "base.task.split",
                       "'stratified'")
    assert "random" in found and "uniform" in found and "skewed" in found


def test_unknown_kind_in_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("  c1:\n", "  c1:\n    model:\n      kind: lstm\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "kind: lstm"), "arms.c1.model.kind",
               "lstm", "'embed_mlp'")


@pytest.mark.parametrize("old,new,field,known", [
    ("    train_frac: 0.5", "    train_frac: 0.5\n    split: zzzz", "base.task.split",
     "unknown split strategy 'zzzz'; known: random, skewed, uniform"),
    ("    name: adamw", "    name: qqqq", "base.optimizer.name",
     "unknown optimizer 'qqqq'; known: adam, adamw, sgd"),
    ("    op: add", "    op: zzzz", "base.task.op",
     "unknown operation 'zzzz'; known: add, div, mul, s3, s5, s5_conj, sq_sum, sub"),
], ids=["split", "optimizer", "op"])
def test_an_unknown_name_with_no_close_match_lists_the_known_ones_only(
        tmp_path: Path, old: str, new: str, field: str, known: str) -> None:
    """No "did you mean" (nothing is close), nothing between the name and "; known:"."""
    text = edit(SMALL_CLAIM, (old, new))
    marker = new.rsplit("\n", 1)[-1].strip()
    assert problems(tmp_path, text) == [At(line_no(text, marker), field, known)]


# ---------------------------------------------------------------- a value of the wrong kind

# (old, new, the text on the line reported, field path, phrases the message holds, phrases it
# must not hold)
WRONG_VALUES = [
    # what the value was taken for: a container is named, not printed
    ("title: A claim", "title: {a: 1}", "title:", "title",
     ("Input should be a valid string", "(got a mapping)"), ("{'a': 1}",)),
    ("    p: 31", "    p: [1]", "p: [1]", "base.task.p",
     ("Input should be a valid integer", "(got a list)"), ("[1]",)),
    # a string field given what YAML read as a number or a date
    ("title: A claim", "title: 5", "title:", "title",
     ("Input should be a valid string", "(got 5)", "YAML read it as a number, boolean or date",
      "put it in quotes"), ()),
    # a number field given a boolean, a quoted number, a word, a float, a non-finite float
    ("    p: 31", "    p: true", "p: true", "base.task.p",
     ("Input should be a valid integer", "(got True)",
      "YAML reads an unquoted yes/no, on/off or true/false as a boolean", "write a number"), ()),
    ("    p: 31", '    p: "31"', '"31"', "base.task.p",
     ("Input should be a valid integer", "(got '31')", "YAML reads a quoted number as a string",
      "remove the quotes"), ()),
    ("    p: 31", "    p: abc", "p: abc", "base.task.p",
     ("Input should be a valid integer", "(got 'abc')"), ("YAML",)),
    ("    p: 31", "    p: 31.5", "p: 31.5", "base.task.p",
     ("Input should be a valid integer", "(got 31.5)", "YAML's .inf and .nan",
      "numbers too large for a float (1e400), are refused"), ()),
    ("    lr: 0.001", "    lr: .inf", "lr: .inf", "base.optimizer.lr",
     ("Input should be a finite number", "(got inf)", "YAML's .inf and .nan",
      "numbers too large for a float (1e400), are refused"), ()),
    # a number out of range: the value is shown, with no YAML hint (it was a number)
    ("    p: 31", "    p: 1", "p: 1", "base.task.p",
     ("greater than or equal to 2", "(got 1)"), ("YAML",)),
    # a constraint on a mapping's size: no "(got a mapping)" tacked on
    ("arms:\n  c1:\n    optimizer:\n      emb_lr_mult: 1\n  c10:\n    optimizer:\n"
     "      emb_lr_mult: 10\n", "arms: {}\n", "arms: {}", "arms",
     ("Dictionary should have at least 1 item after validation, not 0",), ("(got",)),
    # a validator's own sentence, without pydantic's "Value error, " prefix
    ("    train_frac: 0.5", "    train_frac: 0.5\n    test_frac: 0.6", "  task:", "base.task",
     ("train_frac + test_frac must be <= 1", "got 0.5 + 0.6"), ("Value error",)),
    # a message that already quotes the value does not repeat it
    ("    op: add", "    op: addd", "op: addd", "base.task.op",
     ("unknown operation 'addd' (did you mean 'add'?)",
      "known: add, div, mul, s3, s5, s5_conj, sq_sum, sub"),
     ("(got",)),
    # an unknown tag with no close match: no "did you mean", the known ones listed
    ("    kind: embed_mlp", "    kind: zzz", "kind: zzz", "base.model.kind",
     ("unknown model kind 'zzz'", "known: 'embed_mlp', 'image_mlp', 'scalar_mlp', "
      "'toy_matrix', 'toy_sum', 'transformer'"), ("did you mean",)),
]


@pytest.mark.parametrize("old,new,marker,field,phrases,absent", WRONG_VALUES,
                         ids=[f"{w[3]}-{i}" for i, w in enumerate(WRONG_VALUES)])
def test_a_wrong_value_is_refused_in_words(tmp_path: Path, old: str, new: str, marker: str,
                                           field: str, phrases: tuple[str, ...],
                                           absent: tuple[str, ...]) -> None:
    """The one problem a wrong value makes: at its key's line and path, in its words."""
    text = edit(SMALL_CLAIM, (old, new))
    (found,) = problems(tmp_path, text)
    assert found == At(line_no(text, marker), field, *phrases)
    message = found.split(": ", 1)[1]
    for phrase in absent:
        assert phrase not in message, (phrase, found)


@pytest.mark.parametrize(("new", "value"), [("    p: abc", "'abc'"), ("    p: [1]", "a list")])
def test_a_wrong_value_without_a_yaml_hint_ends_at_the_value(tmp_path: Path, new: str,
                                                              value: str) -> None:
    (found,) = problems(tmp_path, edit(SMALL_CLAIM, ("    p: 31", new)))
    assert found.endswith(f"(got {value})"), found


def test_arm_section_of_wrong_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("  c1:\n    optimizer:\n      emb_lr_mult: 1\n",
                        "  c1:\n    optimizer: 5\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "optimizer: 5"), "arms.c1.optimizer",
               "(got 5)")


# ---------------------------------------------------------------- long values are cut short


def test_a_long_number_is_cut_after_40_digits(tmp_path: Path) -> None:
    """A value whose repr is up to 60 characters is shown whole; a longer one shows its first
    40 characters and its length in digits."""
    sixty, sixty_one = 10**59, 10**60  # 60 and 61 digits
    assert len(str(sixty)) == 60 and len(str(sixty_one)) == 61
    head = "1" + "0" * 39
    for value, shown in [(sixty, str(sixty)), (sixty_one, f"{head}... (61 digits)"),
                         (10**70, f"{head}... (71 digits)")]:
        text = edit(SMALL_CLAIM, ("    p: 31", f"    p: {value}"))
        (found,) = problems(tmp_path, text)
        assert found == At(line_no(text, "    p: "), "base.task.p", "less than or equal to 10000",
                           f"(got {shown})")
        assert found.endswith(f"(got {shown})")


def test_a_long_name_is_cut_after_40_characters(tmp_path: Path) -> None:
    """A refused arm name of 70 characters: its repr's first 40 characters (the quote and 39
    letters), then its length in characters."""
    name = "a" * 70
    text = edit(SMALL_CLAIM, ("  c10:\n", f"  {name}:\n"), ("  treated: c10", f"  treated: {name}"))
    assert problems(tmp_path, text) == [
        At(line_no(text, name + ":"), "arms", f"arm name '{'a' * 39}... (70 characters): ",
           "expected 1-48 characters: letters, digits")]


# ---------------------------------------------------------------- seeds: an int or a mapping


def test_seeds_out_of_range_gets_the_integer_complaint_only(tmp_path: Path) -> None:
    """seeds: 0 fits the integer branch's type but not its range; the mapping branch's "should
    be a mapping" would only confuse."""
    text = edit(SMALL_CLAIM, ("seeds: 3", "seeds: 0"))
    (found,) = problems(tmp_path, text)
    assert found == At(line_no(text, "seeds: 0"), "seeds", "greater than or equal to 1",
                       "(got 0)")
    assert "mapping" not in found


def test_seeds_mapping_gets_the_mapping_complaint_only(tmp_path: Path) -> None:
    """A sequential seeds mapping with max < min: its own complaint, not "should be an
    integer"."""
    text = edit(SMALL_CLAIM, ("seeds: 3", "seeds: {min: 4, max: 2, step: 1}"))
    (found,) = problems(tmp_path, text)
    assert found == At(line_no(text, "seeds: {"), "seeds", "max (2) must be >= min (4)")
    assert "integer" not in found


def test_a_dropped_union_complaint_does_not_hide_the_later_problems(tmp_path: Path) -> None:
    """seeds: 0 and a negative min_effect: both reported, each once, in file order."""
    text = edit(SMALL_CLAIM, ("seeds: 3", "seeds: 0"), ("  min_effect: 0.2", "  min_effect: -1"))
    assert problems(tmp_path, text) == [
        At(line_no(text, "seeds: 0"), "seeds", "greater than or equal to 1", "(got 0)"),
        At(line_no(text, "min_effect"), "criterion.min_effect", "greater than or equal to 0",
           "(got -1)")]


def test_a_mapping_for_a_string_is_reported_beside_other_problems(tmp_path: Path) -> None:
    """A mapping where a string belongs is reported even when another field is wrong too."""
    text = edit(SMALL_CLAIM, ("title: A claim", "title: {a: 1}"), ("    p: 31", "    p: 1"))
    assert problems(tmp_path, text) == [
        At(line_no(text, "title:"), "title", "valid string", "(got a mapping)"),
        At(line_no(text, "p: 1"), "base.task.p", "greater than or equal to 2", "(got 1)")]


# ---------------------------------------------------------------- missing fields


def test_no_arms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start = CLAIM.index("arms:\n")
    text = CLAIM[:start] + "arms: {}\n" + CLAIM[CLAIM.index("scales:\n"):]
    assert_bad(capsys, tmp_path, text, line_no(text, "arms: {}"), "arms", "at least 1")


def test_missing_quick_scale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("  quick:\n", "  smoke:\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "scales:"), "scales",
               "'quick' scale is required", "smoke")


MISSING = [
    ("title: A test claim\n", 1, "title"),
    ("    lr: 0.1\n", "  optimizer:", "base.optimizer.lr"),
    ("    steps: 1000\n", "  training:", "base.training.steps"),
    ("  direction: less\n", "criterion:", "criterion.direction"),
    ("  quote: a quote\n", "source:", "source.quote"),
    ("    description: small and fast\n", "  quick:", "scales.quick.description"),
]


@pytest.mark.parametrize("gone,at,field", MISSING, ids=[t[2] for t in MISSING])
def test_missing_required_field(gone: str, at: int | str, field: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, (gone, ""))
    line = at if isinstance(at, int) else line_no(text, at)
    assert_bad(capsys, tmp_path, text, line, field, "required field is missing")


def test_missing_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    start, end = CLAIM.index("metric:\n"), CLAIM.index("criterion:\n")
    text = CLAIM[:start] + CLAIM[end:]
    assert_bad(capsys, tmp_path, text, 1, "metric", "required field is missing")


def test_a_missing_field_of_a_probe_or_pair_names_the_item(tmp_path: Path) -> None:
    """A probe without `every`, and adam betas with one value: each at its item's line."""
    text = edit(SMALL_CLAIM, ("    eval_interval: 10\n", "    eval_interval: 10\n  probes:\n"
                              "    - name: sigma_max\n"))
    assert problems(tmp_path, text) == [
        At(line_no(text, "- name: sigma_max"), "base.probes[0].every",
           "required field is missing")]
    text = edit(SMALL_CLAIM, ("    lr: 0.001", "    lr: 0.001\n    betas: [0.9]"))
    assert problems(tmp_path, text) == [
        At(line_no(text, "betas"), "base.optimizer.betas[1]", "required field is missing")]


def test_a_problem_line_is_that_of_the_deepest_key_the_file_has() -> None:
    """A problem whose path the file does not spell out in full (a field nobody wrote) is put
    at the line of the deepest key of its path that the file has: one level down, three, none.
    (Through load_claim this is reached only for a field that no override writes, e.g. a
    required field missing from a probe an arm adds, which is then blamed on base.)"""
    lines = LineMap({(): 1, ("base",): 9, ("base", "model"): 14})
    assert deepest_defined(lines, ("base", "model", "d")) == ("base", "model")
    assert deepest_defined(lines, ("base", "probes", 0, "every")) == ("base",)
    assert deepest_defined(lines, ("base", "x", "y", "z", "w")) == ("base",)
    assert deepest_defined(lines, ("arms", "c1")) == ()
