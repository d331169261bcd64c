"""Claim spec: shipped claims validate; every bad claim exits 2 naming file, line, field path.

Most tests mutate CLAIM, a block-style claim (one key per line, so a wrong line number shows),
written to tmp_path; a few mutate the shipped claims/skeptic_sgd.yaml text.
"""

from __future__ import annotations

import json
import math
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from grokverify.claim.load import deep_merge, load_claim
from grokverify.claim.models import EmbedMLPSpec, ScalarMLPSpec, ToySumSpec
from grokverify.claim.optimizers import OPTIMIZER_NAMES as OPTIMIZERS
from grokverify.claim.schema import Claim
from grokverify.claim.yamlio import SpecError
from grokverify.cli import main
from grokverify.kinds import CRITERIA, INTERVENTIONS, METRICS, MODELS, PROBES, TASKS

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "claims").glob("*.yaml"))
BAD_BASIC = Path(__file__).resolve().parent / "bad_claims_basic"

CLAIM = """\
id: test_claim
title: A test claim
statement: c10 reaches the validation threshold sooner than c1.
source:
  arxiv: "2505.15624"
  where: Fig. 6
  role: skeptic
  quote: a quote
base:
  task:
    op: add
    p: 31
    modular: true
    train_frac: 0.5
    test_frac: 0.2
    split: random
  model:
    kind: embed_mlp
    d: 64
    hidden: 256
  optimizer:
    name: sgd
    lr: 0.1
    momentum: 0.9
    weight_decay: 0.001
  training:
    steps: 1000
    batch_size: 128
    eval_interval: 100
    train_threshold: 0.99
    val_threshold: 0.95
arms:
  c1:
    optimizer:
      emb_lr_mult: 1
  c10:
    optimizer:
      emb_lr_mult: 10
scales:
  quick:
    description: small and fast
    seeds: 4
    overrides:
      task:
        p: 23
      training:
        steps: 500
        eval_interval: 50
  paper:
    description: the paper's setting
    paper_setting: true
    seeds: 20
seeds: 12
metric:
  name: val_threshold_step
criterion:
  name: survival_compare
  baseline: c1
  treated: c10
  effect: ratio
  direction: less
  min_effect: 0.2
"""


# ---------------------------------------------------------------- helpers


def edit(text: str, *replacements: tuple[str, str]) -> str:
    """Apply exact, unique text replacements (a test fails loudly if its anchor is gone)."""
    for old, new in replacements:
        assert text.count(old) == 1, f"anchor {old!r} should occur exactly once"
        text = text.replace(old, new)
    return text


def line_no(text: str, needle: str) -> int:
    """1-based line of the only line equal to `needle`, else of the only line containing it."""
    lines = text.splitlines()
    hits = ([i for i, line in enumerate(lines, 1) if line == needle]
            or [i for i, line in enumerate(lines, 1) if needle in line])
    assert len(hits) == 1, f"{needle!r} should be on exactly one line, found {hits}"
    return hits[0]


def write(tmp_path: Path, text: str, name: str = "claim.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def validate(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, str, str]:
    rc = main(["validate", *map(str, paths)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out
    return rc, out, err


def problem_line(err: str, file: Path, line: int | None, field: str) -> str:
    """The stderr line for the problem at file:line and field path; fails if there is none."""
    where = f"{file}" if line is None else f"{file}:{line}"
    prefix = f"{where}: {field}:" if field else f"{where}: "
    hits = [ln for ln in err.splitlines() if ln.startswith(prefix)]
    assert hits, f"no problem starting {prefix!r} in:\n{err}"
    return hits[0]


def assert_bad(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, line: int | None,
               field: str, *fragments: str) -> str:
    """The claim fails validation with exit 2 and a problem at line/field containing fragments."""
    path = write(tmp_path, text)
    rc, out, err = validate(capsys, path)
    assert rc == 2, f"expected exit 2, got {rc}; stderr:\n{err}"
    assert "ok" not in out
    found = problem_line(err, path, line, field)
    for fragment in fragments:
        assert fragment in found, f"{fragment!r} not in {found!r}"
    return found


# ---------------------------------------------------------------- valid claims


def test_claims_directory_is_not_empty() -> None:
    assert SHIPPED, "claims/*.yaml should hold at least one claim"


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_claim_validates(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = validate(capsys, path)
    assert rc == 0, err
    assert err == ""
    assert "ok" in out


def test_base_claim_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = validate(capsys, write(tmp_path, CLAIM))
    assert (rc, err) == (0, "")
    assert "test_claim" in out


def test_validate_reports_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, CLAIM, "good.yaml")
    bad = write(tmp_path, edit(CLAIM, ("    p: 31\n", "    p: 1\n")), "bad.yaml")
    rc, out, err = validate(capsys, bad, good)
    assert rc == 2
    assert str(good) in out and "ok" in out
    assert str(bad) in err and str(good) not in err


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


def test_typo_reported_once_across_scales(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """An arm override is resolved at every scale; its problem must still be listed once."""
    text = edit(CLAIM, ("      emb_lr_mult: 10", "      emb_lr_mul: 10"))
    _, _, err = validate(capsys, write(tmp_path, text))
    assert err.count("emb_lr_mul'") == 1, err


# ---------------------------------------------------------------- impossible values

# (old, new, key whose line is reported, field path, message fragments)
IMPOSSIBLE = [
    ("    p: 31\n", "    p: 1\n", "    p: 1", "base.task.p", ["greater than or equal to 2"]),
    ("    train_frac: 0.5", "    train_frac: 0", "train_frac:", "base.task.train_frac",
     ["greater than 0"]),
    ("    train_frac: 0.5", "    train_frac: 1.5", "train_frac:", "base.task.train_frac",
     ["less than or equal to 1"]),
    ("    train_frac: 0.5", "    train_frac: 0.9", "  task:", "base.task",
     ["train_frac + test_frac must be <= 1"]),
    ("    steps: 1000", "    steps: 0", "    steps: 0", "base.training.steps",
     ["a budget of 0 steps measures the initialisation only", "time to an event"]),
    ("    steps: 1000", "    steps: -5", "    steps: -5", "base.training.steps",
     ["greater than or equal to 0"]),
    ("    eval_interval: 100", "    eval_interval: 5000", "  training:", "base.training",
     ["eval_interval (5000) exceeds steps (1000)"]),
    ("    val_threshold: 0.95", "    val_threshold: 1.5", "val_threshold:",
     "base.training.val_threshold", ["less than or equal to 1"]),
    ("    train_threshold: 0.99", "    train_threshold: -0.1", "train_threshold:",
     "base.training.train_threshold", ["greater than or equal to 0"]),
    ("seeds: 12\n", "seeds: 0\n", "seeds: 0", "seeds", ["greater than or equal to 1"]),
    ("    seeds: 20\n", "    seeds: 0\n", "    seeds: 0", "scales.paper.seeds",
     ["greater than or equal to 1"]),
    ("    lr: 0.1", "    lr: 0", "lr: 0", "base.optimizer.lr", ["greater than 0"]),
    ("    op: add\n    p: 31", "    op: div\n    p: 30", "  task:", "base.task",
     ["'div'", "prime"]),
    ("    modular: true", "    modular: maybe", "modular:", "base.task.modular", ["bool"]),
    ("    momentum: 0.9\n", "    momentum: 0.9\n    betas: [0.9, 0.98]\n", "  optimizer:",
     "base.optimizer", ["betas applies to adam/adamw only, not sgd"]),
    ("    name: sgd\n", "    name: adamw\n", "  optimizer:", "base.optimizer",
     ["momentum applies to sgd only, not adamw"]),
    ("    train_frac: 0.5\n", "    train_frac: 0.0001\n", "  task:", "base.task",
     ["0 training and 192 validation pairs of 961"]),
]


@pytest.mark.parametrize("old,new,marker,field,fragments", IMPOSSIBLE,
                         ids=[f"{t[3]}={t[1].split(':')[-1].strip()}" for t in IMPOSSIBLE])
def test_impossible_value(old: str, new: str, marker: str, field: str, fragments: list[str],
                          tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, (old, new))
    assert_bad(capsys, tmp_path, text, line_no(text, marker), field, *fragments)


def test_div_is_fine_with_prime_p(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("    op: add\n", "    op: div\n"))  # base p 31, quick p 23: both prime
    rc, _, err = validate(capsys, write(tmp_path, text))
    assert (rc, err) == (0, "")


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


def test_unknown_split_lists_known(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("    split: random", "    split: stratified"))
    found = assert_bad(capsys, tmp_path, text, line_no(text, "split:"), "base.task.split",
                       "'stratified'")
    assert "random" in found and "uniform" in found and "skewed" in found


def test_unknown_kind_in_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("  c1:\n", "  c1:\n    model:\n      kind: lstm\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "kind: lstm"), "arms.c1.model.kind",
               "lstm", "'embed_mlp'")


# ---------------------------------------------------------------- arms, scales, criterion

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


def test_arm_section_of_wrong_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("  c1:\n    optimizer:\n      emb_lr_mult: 1\n",
                        "  c1:\n    optimizer: 5\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "optimizer: 5"), "arms.c1.optimizer",
               "(got 5)")


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


def test_every_problem_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("    p: 31\n", "    p: 1\n"), ("seeds: 12\n", "seeds: 0\n"))
    path = write(tmp_path, text)
    rc, _, err = validate(capsys, path)
    assert rc == 2
    problem_line(err, path, line_no(text, "    p: 1"), "base.task.p")
    problem_line(err, path, line_no(text, "seeds: 0"), "seeds")


# ---------------------------------------------------------------- file-level failures

BASIC = {
    # file: (line or None, message fragment)
    "empty.yaml": (None, "empty"),
    "comment_only.yaml": (None, "empty"),
    "syntax_error.yaml": (6, "YAML syntax error"),
    "duplicate_key.yaml": (7, "duplicate key 'steps' (first defined on line 5)"),
    "top_level_list.yaml": (2, "expected a mapping of claim fields, got a list"),
    "top_level_scalar.yaml": (2, "expected a mapping of claim fields, got a string"),
    "recursive_alias.yaml": (None, "recursive alias"),
}


@pytest.mark.parametrize("name", sorted(BASIC))
def test_bad_basic_file(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = BAD_BASIC / name
    line, fragment = BASIC[name]
    rc, out, err = validate(capsys, path)
    assert rc == 2
    assert out == ""
    assert fragment in err
    assert err.startswith(f"{path}:" if line is None else f"{path}:{line}:"), err
    if name == "duplicate_key.yaml":
        assert err.startswith(f"{path}:7: base.training.steps:")


def test_bad_basic_files_are_all_covered() -> None:
    assert sorted(p.name for p in BAD_BASIC.glob("*.yaml")) == sorted(BASIC)


def test_tab_indentation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("    steps: 1000\n", "\tsteps: 1000\n"))
    path = write(tmp_path, text)
    rc, _, err = validate(capsys, path)
    assert rc == 2
    assert err.startswith(f"{path}:{line_no(text, 'steps: 1000')}: ")
    assert "tab" in err and "spaces" in err


def test_duplicate_key_in_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("      emb_lr_mult: 10\n", "      emb_lr_mult: 10\n      emb_lr_mult: 3\n"))
    path = write(tmp_path, text)
    rc, _, err = validate(capsys, path)
    assert rc == 2
    line = line_no(text, "emb_lr_mult: 3")
    assert err.startswith(f"{path}:{line}: arms.c10.optimizer.emb_lr_mult:")
    assert f"first defined on line {line_no(text, 'emb_lr_mult: 10')}" in err


MERGED_ARMS = ("arms:\n  c1:\n    optimizer:\n      emb_lr_mult: 1\n  c10:\n    optimizer:\n"
                "      emb_lr_mult: 10\n",
                "arms:\n  c1: &shared\n    optimizer:\n      emb_lr_mult: 1\n    training:\n"
                "      steps: 900\n  c10:\n    <<: *shared\n    optimizer:\n"
                "      emb_lr_mult: 10\n")


def test_yaml_merge_keys_share_settings_between_arms(tmp_path: Path) -> None:
    """`<<: *anchor` (YAML merge) copies the anchored mapping's keys, shallowly; keys written in
    the mapping itself win."""
    arms = load_claim(write(tmp_path, edit(CLAIM, MERGED_ARMS))).resolved["paper"]
    assert (arms["c1"].optimizer.emb_lr_mult, arms["c1"].training.steps) == (1, 900)
    assert (arms["c10"].optimizer.emb_lr_mult, arms["c10"].training.steps) == (10, 900)


def test_error_inside_a_merged_anchor_points_at_the_anchor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, MERGED_ARMS, ("      steps: 900\n", "      steps: -9\n"))
    line = line_no(text, "steps: -9")
    for arm in ("c1", "c10"):  # c10 has the value through the merge: the same line
        assert_bad(capsys, tmp_path, text, line, f"arms.{arm}.training.steps",
                   "greater than or equal to 0")


def test_merge_key_needs_a_mapping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("  c10:\n    optimizer:\n", "  c10:\n    <<: 3\n    optimizer:\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "<<: 3"), "arms.c10",
               "'<<' (YAML merge) takes a mapping")


def test_non_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(edit(CLAIM, ("title: A test claim", "title: A caf\xe9 claim"))
                     .encode("latin-1"))
    rc, _, err = validate(capsys, path)
    assert rc == 2
    assert err.startswith(f"{path}:2: ")
    assert "UTF-8" in err and "0xe9" in err


def test_nonexistent_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nope.yaml"
    rc, _, err = validate(capsys, path)
    assert rc == 2
    assert err.startswith(f"{path}: ") and "no such file" in err


def test_directory_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = validate(capsys, tmp_path)
    assert rc == 2
    assert err.startswith(f"{tmp_path}: ") and "directory" in err


def test_python_tags_are_not_executed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"
    text = edit(CLAIM, ("id: test_claim",
                        f"id: !!python/object/apply:os.system ['touch {marker}']"))
    rc, _, _ = validate(capsys, write(tmp_path, text))
    assert rc == 2
    assert not marker.exists()


def test_python_scalar_tag_is_spec_error(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    text = edit(CLAIM, ("id: test_claim", "id: !!python/name:os.system"))
    path = write(tmp_path, text)
    rc, _, err = validate(capsys, path)
    assert rc == 2
    assert err.startswith(f"{path}:1: ")


# ---------------------------------------------------------------- schema


def test_schema_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    out, err = capsys.readouterr()
    schema = json.loads(out)
    assert {"id", "base", "arms", "scales", "criterion", "seeds", "metric"} <= set(
        schema["properties"])
    assert {"id", "base", "arms", "scales", "criterion"} <= set(schema["required"])


# ---------------------------------------------------------------- deep-merge semantics


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


# ---------------------------------------------------------------- numbers and names


def _spec_models() -> list[type[BaseModel]]:
    """Every pydantic model a claim file can reach, from Claim down through its unions."""
    seen: list[type[BaseModel]] = []

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in seen:
                seen.append(annotation)
                for info in annotation.model_fields.values():
                    visit(info.annotation)
            return
        for arg in typing.get_args(annotation):
            visit(arg)

    visit(Claim)
    return seen


def _mentions(annotation: Any, kind: type) -> bool:
    return annotation is kind or any(_mentions(a, kind) for a in typing.get_args(annotation))


def _fields(kind: type) -> list[tuple[str, TypeAdapter[Any], bool]]:
    """(model.field, a validator of the field's value, whether it is a pair) of every field of
    every spec model whose type mentions `kind`."""
    out = []
    for model in _spec_models():
        for name, info in model.model_fields.items():
            if _mentions(info.annotation, kind):
                pair = typing.get_origin(info.annotation) is tuple or any(
                    typing.get_origin(a) is tuple for a in typing.get_args(info.annotation))
                out.append((f"{model.__name__}.{name}",
                            TypeAdapter(info.rebuild_annotation()), pair))
    return out


def test_the_walk_reaches_every_registry() -> None:
    models = _spec_models()
    for registry in (MODELS, METRICS, PROBES, INTERVENTIONS, CRITERIA):
        assert set(registry.values()) <= set(models)


@pytest.mark.parametrize("field,adapter,pair", _fields(float), ids=lambda v: v if isinstance(
    v, str) else "")
def test_every_float_of_every_spec_is_a_finite_number(field: str, adapter: TypeAdapter[Any],
                                                      pair: bool) -> None:
    """A boolean, a quoted number, .inf and .nan are refused wherever a float is read."""
    for bad in (True, "0.5", math.inf, -math.inf, math.nan):
        with pytest.raises(ValidationError):
            adapter.validate_python((bad, bad) if pair else bad)


@pytest.mark.parametrize("field,adapter,pair", _fields(int), ids=lambda v: v if isinstance(
    v, str) else "")
def test_every_integer_of_every_spec_is_bounded(field: str, adapter: TypeAdapter[Any],
                                                pair: bool) -> None:
    for bad in (10**30, True, "3"):
        with pytest.raises(ValidationError):
            adapter.validate_python(bad)


def test_an_integer_is_a_number(tmp_path: Path) -> None:
    text = edit(CLAIM, ("    lr: 0.1\n", "    lr: 1\n"))
    lr = load_claim(write(tmp_path, text)).resolved["paper"]["c1"].optimizer.lr
    assert lr == 1.0 and isinstance(lr, float)


@pytest.mark.parametrize("old,new,anchor,path,what", [
    ("  c1:\n", "  c 1:\n", "  c 1:", "arms", "arm name 'c 1'"),
    ("  quick:\n", "  quick|x:\n", "  quick|x:", "scales", "scale name 'quick|x'"),
    ("  c1:\n", "  " + "c" * 49 + ":\n", "c" * 49, "arms", "arm name 'ccc"),
    ("  c1:\n", "  _c1:\n", "_c1:", "arms", "arm name '_c1'"),
])
def test_names_are_refused_at_their_key(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        old: str, new: str, anchor: str, path: str,
                                        what: str) -> None:
    text = edit(CLAIM, (old, new))
    assert_bad(capsys, tmp_path, text, line_no(text, anchor), path, what,
               "expected 1-48 characters: letters, digits")


def test_scale_arm_and_member_names_are_refused(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    text = edit(CLAIM, ("        eval_interval: 50\n",
                        "        eval_interval: 50\n    arms:\n      'c1 x': {}\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "'c1 x'"), "scales.quick.arms",
               "arm name 'c1 x'")
    text = edit(CLAIM, ("seeds: 12\n", "seeds: 12\nfamily:\n  members:\n    add: {}\n"
                                       "    'mul*': {task: {op: mul}}\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "'mul*'"), "family.members",
               "family member name 'mul*'")


def test_names_at_their_limits_are_fine(tmp_path: Path) -> None:
    arm = "C1.x-" + "y" * 43
    text = edit(CLAIM, ("id: test_claim\n", f"id: {'a' * 64}\n"), ("  c1:\n", f"  {arm}:\n"),
                ("  baseline: c1\n", f"  baseline: {arm}\n"))
    loaded = load_claim(write(tmp_path, text))
    assert arm in loaded.claim.arms and len(loaded.claim.id) == 64
    text = edit(CLAIM, ("id: test_claim\n", f"id: {'a' * 65}\n"))
    with pytest.raises(SpecError, match="expected 1-64 characters"):
        load_claim(write(tmp_path, text))


def test_a_batch_larger_than_an_arms_split_names_the_arm(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    """The base's batch of 128 fits every split; an arm's train_frac leaves the quick scale
    (p 23) fewer pairs than that: refused where the batch size is set, naming where it fails."""
    text = edit(CLAIM, ("  c1:\n", "  c1:\n    task:\n      train_frac: 0.2\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, "    batch_size: 128"),
               "base.training.batch_size",
               "batch_size 128 exceeds the 106 training pairs of this split (p 23, train_frac "
               "0.2); use null for full batch (at scale 'quick', arm 'c1')")
    text = edit(text, ("    task:\n      train_frac: 0.2\n",
                       "    task:\n      train_frac: 0.2\n    training:\n      batch_size: null\n"))
    assert load_claim(write(tmp_path, text)).resolved["quick"]["c1"].training.batch_size is None
