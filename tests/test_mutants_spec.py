"""Pins what the mutation run of `grokverify/spec.py` (mutmut 3.8.1) found unpinned.

The surviving mutants sat in the words of the problems a claim file is refused with: what a
value was taken for ("got a mapping", "got null", "(got 1)"), the YAML hints after a number
or string written the wrong way, how a long value is cut short, which of a union's complaints
are kept (seeds: an int or a mapping), the "allowed here" list after an unknown key (which
model's fields, through tagged unions and list items), the field path and line a problem
points at, where a per-unit problem is blamed (a family member's override), and the prime test
behind op 'div'. Each test below writes a small claim, loads it and compares the problems
with the exact lines a reader sees (file name left out), worked out by hand from the rules in
the messages themselves.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_spec import edit, line_no

from grokverify.claim.load import load_claim
from grokverify.claim.messages import deepest_defined
from grokverify.claim.schema import Claim
from grokverify.claim.yamlio import LineMap, SpecError
from grokverify.kinds import CRITERIA

# A block-style claim, one key per line, so that a wrong line number shows.
CLAIM = """\
id: mut_claim
title: A claim
statement: c10 is faster than c1.
source:
  arxiv: "2505.15624"
  where: Fig. 6
  role: skeptic
  quote: a quote
base:
  task:
    op: add
    p: 31
    train_frac: 0.5
  model:
    kind: embed_mlp
    d: 16
    hidden: 32
  optimizer:
    name: adamw
    lr: 0.001
  training:
    steps: 100
    eval_interval: 10
arms:
  c1:
    optimizer:
      emb_lr_mult: 1
  c10:
    optimizer:
      emb_lr_mult: 10
scales:
  quick:
    description: small
seeds: 3
metric:
  name: val_threshold_step
criterion:
  name: survival_compare
  baseline: c1
  treated: c10
  direction: less
  min_effect: 0.2
"""


# ---------------------------------------------------------------- helpers


def problems(tmp_path: Path, text: str) -> list[str]:
    """The problems a claim is refused with, each as `line path: message` (file left out)."""
    path = tmp_path / "claim.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_claim(path, limits=None)
    out = []
    for p in info.value.problems:
        assert p.file == str(path)
        out.append(f"{p.line} {p.path}: {p.message}" if p.path else f"{p.line} {p.message}")
    return out


def test_the_claim_loads(tmp_path: Path) -> None:
    """The claim the tests below break is itself fine (each refusal is the edit's)."""
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM, encoding="utf-8")
    assert sorted(load_claim(path, limits=None).claim.arms) == ["c1", "c10"]


# ---------------------------------------------------------------- not a claim at all


@pytest.mark.parametrize("text,got", [("5.5\n", "a float"), ("true\n", "a bool"),
                                      ("5\n", "an int"), ("- 1\n- 2\n", "a list"),
                                      ("~\n", "null"), ("null\n", "null")],
                         ids=["float", "bool", "int", "list", "tilde", "null"])
def test_a_file_that_is_not_a_mapping_says_what_it_is(tmp_path: Path, text: str,
                                                       got: str) -> None:
    """A file whose YAML is a number, a list or null is refused naming what YAML read."""
    assert problems(tmp_path, text) == [f"1 expected a mapping of claim fields, got {got}"]


# ---------------------------------------------------------------- a value of the wrong kind

# (old, new, the text on the line reported, field path, the exact message)
WRONG_VALUES = [
    # what the value was taken for: a container is named, not printed
    ("title: A claim", "title: {a: 1}", "title:", "title",
     "Input should be a valid string (got a mapping)"),
    ("    p: 31", "    p: [1]", "p: [1]", "base.task.p",
     "Input should be a valid integer (got a list)"),
    # a string field given what YAML read as a number or a date
    ("title: A claim", "title: 5", "title:", "title",
     "Input should be a valid string (got 5); YAML read it as a number, boolean or date: put it "
     "in quotes"),
    # a number field given a boolean, a quoted number, a word, a float, a non-finite float
    ("    p: 31", "    p: true", "p: true", "base.task.p",
     "Input should be a valid integer (got True); YAML reads an unquoted yes/no, on/off or "
     "true/false as a boolean: write a number"),
    ("    p: 31", '    p: "31"', '"31"', "base.task.p",
     "Input should be a valid integer (got '31'); YAML reads a quoted number as a string: remove "
     "the quotes"),
    ("    p: 31", "    p: abc", "p: abc", "base.task.p",
     "Input should be a valid integer (got 'abc')"),
    ("    p: 31", "    p: 31.5", "p: 31.5", "base.task.p",
     "Input should be a valid integer (got 31.5); YAML's .inf and .nan, and numbers too large "
     "for a float (1e400), are refused"),
    ("    lr: 0.001", "    lr: .inf", "lr: .inf", "base.optimizer.lr",
     "Input should be a finite number (got inf); YAML's .inf and .nan, and numbers too large for "
     "a float (1e400), are refused"),
    # a number out of range: the value is shown, with no YAML hint (it was a number)
    ("    p: 31", "    p: 1", "p: 1", "base.task.p",
     "Input should be greater than or equal to 2 (got 1)"),
    # a constraint on a mapping's size: no "(got a mapping)" tacked on
    ("arms:\n  c1:\n    optimizer:\n      emb_lr_mult: 1\n  c10:\n    optimizer:\n"
     "      emb_lr_mult: 10\n", "arms: {}\n", "arms: {}", "arms",
     "Dictionary should have at least 1 item after validation, not 0"),
    # a validator's own sentence, without pydantic's "Value error, " prefix
    ("    train_frac: 0.5", "    train_frac: 0.5\n    test_frac: 0.6", "  task:", "base.task",
     "train_frac + test_frac must be <= 1, got 0.5 + 0.6"),
    # a message that already quotes the value does not repeat it
    ("    op: add", "    op: addd", "op: addd", "base.task.op",
     "unknown operation 'addd' (did you mean 'add'?); known: add, div, mul, s3, sq_sum, sub"),
    # an unknown tag with no close match: no "did you mean", the known ones listed
    ("    kind: embed_mlp", "    kind: zzz", "kind: zzz", "base.model.kind",
     "unknown model kind 'zzz'; known: 'embed_mlp', 'image_mlp', 'scalar_mlp', 'toy_matrix', "
     "'toy_sum', 'transformer'"),
]


@pytest.mark.parametrize("old,new,marker,field,message", WRONG_VALUES,
                         ids=[f"{w[3]}-{i}" for i, w in enumerate(WRONG_VALUES)])
def test_a_wrong_value_is_refused_in_words(tmp_path: Path, old: str, new: str, marker: str,
                                           field: str, message: str) -> None:
    """The one problem a wrong value makes: at its key's line, its path, the exact sentence."""
    text = edit(CLAIM, (old, new))
    assert problems(tmp_path, text) == [f"{line_no(text, marker)} {field}: {message}"]


@pytest.mark.parametrize("p,prime", [(4, False), (9, False), (7, True)])
def test_div_needs_a_prime_p(tmp_path: Path, p: int, prime: bool) -> None:
    """op 'div' takes a modular inverse: 4 = 2·2 and 9 = 3·3 are refused, 7 is prime."""
    text = edit(CLAIM, ("    op: add\n    p: 31", f"    op: div\n    p: {p}"))
    if prime:
        path = tmp_path / "claim.yaml"
        path.write_text(text, encoding="utf-8")
        assert load_claim(path, limits=None).claim.base.task.p == p
    else:
        assert problems(tmp_path, text) == [
            f"{line_no(text, '  task:')} base.task: op 'div' needs modular: true and a prime p "
            "(modular inverse)"]


# ---------------------------------------------------------------- long values are cut short


def test_a_long_number_is_cut_after_40_digits(tmp_path: Path) -> None:
    """A value whose repr is up to 60 characters is shown whole; a longer one shows its first
    40 characters and its length in digits."""
    sixty, sixty_one = 10**59, 10**60  # 60 and 61 digits
    assert len(str(sixty)) == 60 and len(str(sixty_one)) == 61
    head = "1" + "0" * 39
    for value, shown in [(sixty, str(sixty)), (sixty_one, f"{head}... (61 digits)"),
                         (10**70, f"{head}... (71 digits)")]:
        text = edit(CLAIM, ("    p: 31", f"    p: {value}"))
        assert problems(tmp_path, text) == [
            f"{line_no(text, '    p: ')} base.task.p: Input should be less than or equal to "
            f"10000 (got {shown})"]


def test_a_long_name_is_cut_after_40_characters(tmp_path: Path) -> None:
    """A refused arm name of 70 characters: its repr's first 40 characters (the quote and 39
    letters), then its length in characters."""
    name = "a" * 70
    text = edit(CLAIM, ("  c10:\n", f"  {name}:\n"),
                ("  treated: c10", f"  treated: {name}"))
    found = problems(tmp_path, text)
    assert found == [
        f"{line_no(text, name + ':')} arms: arm name '{'a' * 39}... (70 characters): expected "
        "1-48 characters: letters, digits, '_', '.' and '-', starting with a letter or digit"]


# ---------------------------------------------------------------- seeds: an int or a mapping


def test_seeds_out_of_range_gets_the_integer_complaint_only(tmp_path: Path) -> None:
    """seeds: 0 fits the integer branch's type but not its range; the mapping branch's "should
    be a mapping" would only confuse."""
    text = edit(CLAIM, ("seeds: 3", "seeds: 0"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'seeds: 0')} seeds: Input should be greater than or equal to 1 (got 0)"]


def test_seeds_mapping_gets_the_mapping_complaint_only(tmp_path: Path) -> None:
    """A sequential seeds mapping with max < min: its own complaint, not "should be an
    integer"."""
    text = edit(CLAIM, ("seeds: 3", "seeds: {min: 4, max: 2, step: 1}"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'seeds: {')} seeds: max (2) must be >= min (4)"]


def test_a_dropped_union_complaint_does_not_hide_the_later_problems(tmp_path: Path) -> None:
    """seeds: 0 and a negative min_effect: both reported, each once, in file order."""
    text = edit(CLAIM, ("seeds: 3", "seeds: 0"), ("  min_effect: 0.2", "  min_effect: -1"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'seeds: 0')} seeds: Input should be greater than or equal to 1 (got 0)",
        f"{line_no(text, 'min_effect')} criterion.min_effect: Input should be greater than or "
        "equal to 0 (got -1)"]


def test_a_mapping_for_a_string_is_reported_beside_other_problems(tmp_path: Path) -> None:
    """A mapping where a string belongs is reported even when another field is wrong too."""
    text = edit(CLAIM, ("title: A claim", "title: {a: 1}"), ("    p: 31", "    p: 1"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'title:')} title: Input should be a valid string (got a mapping)",
        f"{line_no(text, 'p: 1')} base.task.p: Input should be greater than or equal to 2 "
        "(got 1)"]


# ---------------------------------------------------------------- unknown keys: what is allowed


def test_unknown_key_in_a_scales_sequential_seeds_lists_the_seeds_fields(tmp_path: Path) -> None:
    """Under a scale's seeds mapping the allowed keys are min, max, step, spending (not the
    scale's own fields), and the misspelt one is suggested."""
    text = edit(CLAIM, ("    description: small",
                        "    description: small\n    seeds: {min: 2, max: 4, stp: 1}"))
    at = line_no(text, "stp: 1")
    assert problems(tmp_path, text) == [
        f"{at} scales.quick.seeds.step: required field is missing",
        f"{at} scales.quick.seeds.stp: unknown key 'stp' (did you mean 'step'?); allowed here: "
        "max, min, spending, step"]


def test_unknown_key_in_a_model_lists_that_kinds_fields(tmp_path: Path) -> None:
    """A scalar_mlp (not the first model kind) with a stray key: scalar_mlp's fields."""
    text = edit(CLAIM, ("    kind: embed_mlp\n    d: 16\n", "    kind: scalar_mlp\n    bogus: 1\n"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'bogus')} base.model.bogus: unknown key 'bogus'; allowed here: hidden, "
        "kind"]


def test_unknown_key_in_a_criterion_lists_that_criterions_fields(tmp_path: Path) -> None:
    """A stray key in a survival_compare criterion, with no close match: no "did you mean", the
    criterion's fields listed."""
    text = edit(CLAIM, ("  min_effect: 0.2", "  min_effect: 0.2\n  zzzzz: 1"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'zzzzz')} criterion.zzzzz: unknown key 'zzzzz'; allowed here: baseline, "
        "bootstrap_seed, ci_level, direction, effect, margin, min_effect, n_boot, name, paired, "
        "summary, tau, treated"]


def test_unknown_key_in_a_later_criterion_lists_its_own_fields(tmp_path: Path) -> None:
    """cox_hazard_ratio (not the first criterion) with a stray key: cox_hazard_ratio's fields,
    as its parameter model declares them."""

    text = edit(CLAIM, ("  name: survival_compare", "  name: cox_hazard_ratio"),
                ("  min_effect: 0.2", "  min_effect: 0.2\n  zzzzz: 1"))
    fields = sorted(CRITERIA["cox_hazard_ratio"].model_fields)
    assert fields != sorted(CRITERIA["survival_compare"].model_fields)
    stray = [p for p in problems(tmp_path, text) if " criterion.zzzzz: " in p]
    assert stray == [f"{line_no(text, 'zzzzz')} criterion.zzzzz: unknown key 'zzzzz'; allowed "
                     f"here: {', '.join(fields)}"]


def test_unknown_key_in_a_probe_points_at_the_list_item(tmp_path: Path) -> None:
    """A stray key in a probe (an item of a list of tagged models): its path runs through the
    item's index (not the probe's name), and the message never ends in an empty list. (The
    probe's fields are not listed today; listing them would be fine here.)"""
    text = edit(CLAIM, ("    eval_interval: 10\n", "    eval_interval: 10\n  probes:\n"
                        "    - name: sigma_max\n      every: 10\n      bogus: 1\n"))
    found = problems(tmp_path, text)
    assert len(found) == 1
    assert found[0].startswith(f"{line_no(text, 'bogus')} base.probes[0].bogus: ")
    message = found[0].split(": ", 1)[1]
    assert re.fullmatch(r"unknown key 'bogus'(; allowed here: every, name, of)?", message), message


def test_a_missing_field_of_a_probe_or_pair_names_the_item(tmp_path: Path) -> None:
    """A probe without `every`, and adam betas with one value: each at its item's line."""
    text = edit(CLAIM, ("    eval_interval: 10\n", "    eval_interval: 10\n  probes:\n"
                        "    - name: sigma_max\n"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, '- name: sigma_max')} base.probes[0].every: required field is missing"]
    text = edit(CLAIM, ("    lr: 0.001", "    lr: 0.001\n    betas: [0.9]"))
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'betas')} base.optimizer.betas[1]: required field is missing"]


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


# ---------------------------------------------------------------- where a unit's problem is blamed


def test_a_family_members_batch_is_blamed_on_the_member(tmp_path: Path) -> None:
    """Member `small` sets p 20 (400 pairs, 200 for training at 0.5) and batch_size 300: the
    problem names family.members.small.training.batch_size, at its line, and the units it
    fails at (both arms at the one scale)."""
    text = CLAIM + ("family:\n  members:\n    small:\n      task:\n        p: 20\n"
                    "      training:\n        batch_size: 300\n    wide: {}\n")
    assert 20 * 20 * 0.5 == 200
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'batch_size: 300')} family.members.small.training.batch_size: "
        "batch_size 300 exceeds the 200 training pairs of this split (p 20, train_frac 0.5); use "
        "null for full batch (at scale 'quick', member 'small', arm 'c1', and 1 more)"]


# ---------------------------------------------------------------- a grid's axis names


def test_a_grid_axis_with_a_bad_name_is_named_as_a_key(tmp_path: Path) -> None:
    """A grid axis whose name is not a name: "key '...'" at the axis's line, under grid.axes."""
    if "grid" not in Claim.model_fields:
        pytest.skip("this copy of grokverify.spec has no grids")
    text = CLAIM + ("grid:\n  name: \"g{c}\"\n  axes:\n    c d:\n      path: optimizer.lr\n"
                    "      values: [0.2, 0.1]\n")
    assert problems(tmp_path, text) == [
        f"{line_no(text, 'c d:')} grid.axes: key 'c d': expected 1-48 characters: letters, "
        "digits, '_', '.' and '-', starting with a letter or digit"]
