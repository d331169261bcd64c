"""Grids (grokverify.claim.grid): a sweep written once becomes ordinary named arms (or family
members) that criteria, families and scales refer to; a bad grid, or a generated entry that does
not validate, is refused at the grid's line."""

from __future__ import annotations

from pathlib import Path

import pytest
from claimtext import CLAIM, SMALL_CLAIM, At, assert_bad, edit, line_no, load, write
from conftest import problems

from grokverify.claim.grid import GridSpec, value_name
from grokverify.claim.load import load_claim

ARMS = """arms:
  c1:
    optimizer:
      emb_lr_mult: 1
  c10:
    optimizer:
      emb_lr_mult: 10
"""
GRID = """grid:
  name: "c{c}"
  axes:
    c:
      path: optimizer.emb_lr_mult
      values: [1, 2, 10, 32]
"""


def _grid_claim(grid: str = GRID, arms: str = "") -> str:
    return edit(CLAIM, (ARMS, arms + grid))


def test_a_grid_generates_the_arms_a_criterion_names(tmp_path: Path) -> None:
    """c ∈ {1, 2, 10, 32}: arms c1, c2, c10, c32, in order, each the base with its c; the
    criterion's c1 and c10 are generated arms; scales apply to each."""
    loaded = load_claim(write(tmp_path, _grid_claim()))
    for scale in ("quick", "paper"):
        arms = loaded.resolved[scale]
        assert list(arms) == ["c1", "c2", "c10", "c32"]
        assert [exp.optimizer.emb_lr_mult for exp in arms.values()] == [1, 2, 10, 32]
        assert {exp.optimizer.lr for exp in arms.values()} == {0.1}
    assert {exp.task.p for exp in loaded.resolved["quick"].values()} == {23}


def test_two_axes_give_their_product_first_axis_slowest(tmp_path: Path) -> None:
    grid = """grid:
  name: "c{c}_lr{lr}"
  axes:
    c:
      path: optimizer.emb_lr_mult
      values: [1, 10]
    lr:
      path: optimizer.lr
      values: [0.01, 0.3]
  base:
    optimizer:
      momentum: 0.5
"""
    text = edit(_grid_claim(grid), ("  baseline: c1\n", "  baseline: c1_lr0.01\n"),
                ("  treated: c10\n", "  treated: c10_lr0.01\n"))
    arms = load_claim(write(tmp_path, text)).resolved["paper"]
    assert list(arms) == ["c1_lr0.01", "c1_lr0.3", "c10_lr0.01", "c10_lr0.3"]
    assert [(e.optimizer.emb_lr_mult, e.optimizer.lr) for e in arms.values()] == [
        (1, 0.01), (1, 0.3), (10, 0.01), (10, 0.3)]
    assert {e.optimizer.momentum for e in arms.values()} == {0.5}  # the grid's base


def test_explicit_arms_and_a_grid_live_together(tmp_path: Path) -> None:
    grid = GRID.replace("values: [1, 2, 10, 32]", "values: [2, 32]")
    arms = load_claim(write(tmp_path, _grid_claim(grid, ARMS))).resolved["paper"]
    assert list(arms) == ["c1", "c10", "c2", "c32"]


def test_a_grid_over_the_optimizer_uses_the_claims_merge_rule(tmp_path: Path) -> None:
    """Switching optimizer by grid keeps the shared settings and drops the old optimizer's own
    (sgd's momentum), as an arm switching optimizer does."""
    grid = """grid:
  name: "{opt}"
  axes:
    opt:
      path: optimizer.name
      values: [sgd, adamw]
"""
    text = edit(_grid_claim(grid), ("  baseline: c1\n", "  baseline: sgd\n"),
                ("  treated: c10\n", "  treated: adamw\n"))
    arms = load_claim(write(tmp_path, text)).resolved["paper"]
    assert arms["sgd"].optimizer.momentum == 0.9
    assert arms["adamw"].optimizer.name == "adamw" and arms["adamw"].optimizer.lr == 0.1


def test_a_grid_into_members_makes_a_family(tmp_path: Path) -> None:
    """F1's shape: the same comparison once per SGD learning rate."""
    grid = """family:
  claims: all
grid:
  into: members
  name: "lr{lr}"
  axes:
    lr:
      path: optimizer.lr
      values: [0.01, 0.03, 0.1, 0.3]
"""
    loaded = load_claim(write(tmp_path, _grid_claim(grid, ARMS)))
    members = loaded.members("paper")
    assert list(members) == ["lr0.01", "lr0.03", "lr0.1", "lr0.3"]
    assert [m["c10"].optimizer.lr for m in members.values()] == [0.01, 0.03, 0.1, 0.3]
    assert {m["c10"].optimizer.emb_lr_mult for m in members.values()} == {10}


@pytest.mark.parametrize(("value", "name"), [
    (1, "1"), (0.01, "0.01"), (1e-5, "1e-05"), (2e6, "2e06"), (True, "true"), ("add", "add")])
def test_value_names(value: object, name: str) -> None:
    assert value_name(value) == name  # type: ignore[arg-type]


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(("old", "new", "anchor", "field", "fragment"), [
    ('  name: "c{c}"\n', '  name: "c"\n', '  name: "c"', "grid.name", "must use every axis once"),
    ('  name: "c{c}"\n', '  name: "c {c}"\n', '  name: "c {c}"', "grid.name",
     "generates 'c 1', not a name"),
    ("      values: [1, 2, 10, 32]\n", "      values: [1, 1.0]\n", "values: [1, 1.0]",
     "grid.axes.c.values", "each value once"),
    ("      values: [1, 2, 10, 32]\n", "      values: [1]\n", "values: [1]",
     "grid.axes.c.values", "at least 2"),
    ("      path: optimizer.emb_lr_mult\n", "      path: optimizer/lr\n", "optimizer/lr",
     "grid.axes.c.path", "dotted field path"),
    ("  axes:\n", "  axis:\n", "  axis:", "grid.axis", "unknown key 'axis'"),
    ("      values: [1, 2, 10, 32]\n", "      values: [{a: 1}, 0.1]\n", "values: [{a: 1}",
     "grid.axes.c.values", "each value is a number, a string or true/false; item 0 is a mapping"),
    ("      values: [1, 2, 10, 32]\n", "      values: [1, .nan]\n", "values: [1, .nan]",
     "grid.axes.c.values", "item 1 is nan"),
])
def test_a_bad_grid_is_refused_at_its_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           old: str, new: str, anchor: str, field: str,
                                           fragment: str) -> None:
    text = edit(_grid_claim(), (old, new))
    assert_bad(capsys, tmp_path, text, line_no(text, anchor), field, fragment)


def test_a_generated_name_that_is_taken_is_refused(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    text = _grid_claim(arms=ARMS)
    assert_bad(capsys, tmp_path, text, line_no(text, '  name: "c{c}"'), "grid.name",
               "the grid generates 'c1', 'c10'", "arms already has")


def test_members_need_a_family(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = _grid_claim(GRID.replace("grid:\n", "grid:\n  into: members\n"), ARMS)
    assert_bad(capsys, tmp_path, text, line_no(text, "  into: members"), "grid.into",
               "needs a family: section")


def test_a_generated_arm_that_does_not_validate_points_at_the_grid(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A value of the wrong kind for its field: the problem names the generated arm's field at
    the line of the value in the grid."""
    text = _grid_claim(GRID.replace("values: [1, 2, 10, 32]", 'values: [1, "x"]'))
    text = edit(text, ("  treated: c10\n", "  treated: cx\n"))
    assert_bad(capsys, tmp_path, text, line_no(text, 'values: [1, "x"]'),
               "arms.cx.optimizer.emb_lr_mult", "Input should be a valid number (got 'x')")


def test_grid_schema_alone() -> None:
    spec = GridSpec.model_validate({"name": "x{a}", "axes": {"a": {"path": "task.p",
                                                                  "values": [23, 31]}}})
    entries = spec.entries()
    assert {name: [st.partial() for st in settings] for name, settings in entries.items()} \
        == {"x23": [{"task": {"p": 23}}], "x31": [{"task": {"p": 31}}]}
    assert [(st.axis, st.index, st.value) for st in entries["x31"]] == [("a", 1, 31)]


def test_a_bad_value_in_the_grids_base_is_refused_at_its_own_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The grid's base is written once for every generated arm: its bad value is blamed on the
    generated arm at the base's line, not on the claim's base (whose own lr is fine)."""
    grid = GRID + "  base:\n    optimizer:\n      lr: -1\n"
    text = _grid_claim(grid)
    assert_bad(capsys, tmp_path, text, line_no(text, "      lr: -1"), "arms.c1.optimizer.lr",
               "greater than 0")


def test_a_span_gives_evenly_spaced_settings_rounded_to_its_digits(tmp_path: Path) -> None:
    """lr from 1e-4 to 1e-2 in 5 log-spaced steps: 10^-4, 10^-3.5, ... rounded to 3 digits;
    a linear span of weight decays 0..8 in 5: 0, 2, ..., 8."""
    grid = """grid:
  name: "lr{lr}_wd{wd}"
  axes:
    lr:
      path: optimizer.lr
      span: {low: 0.0001, high: 0.01, num: 5, scale: log}
    wd:
      path: optimizer.weight_decay
      span: {low: 0, high: 8, num: 5}
"""
    arms = {name: exp for name, exp in load_claim(write(tmp_path, _grid_claim(
        grid, arms=ARMS))).resolved["quick"].items() if name.startswith("lr")}
    lrs = [0.0001, 0.000316, 0.001, 0.00316, 0.01]
    assert list(arms)[:6] == ["lr0.0001_wd0", "lr0.0001_wd2", "lr0.0001_wd4", "lr0.0001_wd6",
                              "lr0.0001_wd8", "lr0.000316_wd0"]
    assert sorted({exp.optimizer.lr for exp in arms.values()}) == lrs
    assert sorted({exp.optimizer.weight_decay for exp in arms.values()}) == [0, 2, 4, 6, 8]


def test_a_generated_arms_own_problem_is_at_the_grid_name_and_its_bases_key_at_its_line(
        tmp_path: Path) -> None:
    """A problem of the whole generated arm is blamed on the grid's name line (not its base's);
    an unknown key its base writes, on that key's line."""
    text = _grid_claim(GRID + "  base:\n    model:\n      kind: image_mlp\n")
    assert problems(tmp_path, text)[0] == At(line_no(text, '  name: "c{c}"'), "arms.c1",
                                              "model 'image_mlp' reads images")
    text = _grid_claim(GRID + "  base:\n    optimiser:\n      lr: 0.1\n")
    assert problems(tmp_path, text)[0] == At(line_no(text, "    optimiser:"), "arms.c1.optimiser",
                                              "unknown key 'optimiser'")


@pytest.mark.parametrize(("axis", "field", "fragment"), [
    ("{path: optimizer.lr, values: [0.1, 0.2], span: {low: 0.1, high: 1, num: 2}}",
     "grid.axes.lr", "values (a list) or span"),
    ("{path: optimizer.lr}", "grid.axes.lr", "values (a list) or span"),
    ("{path: optimizer.lr, span: {low: 0, high: 1, num: 3, scale: log}}", "grid.axes.lr.span",
     "log scale needs low"),
    ("{path: optimizer.lr, span: {low: 1, high: 1, num: 3}}", "grid.axes.lr.span", "low < high"),
])
def test_a_bad_span_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, axis: str,
                               field: str, fragment: str) -> None:
    text = _grid_claim(f"""grid:
  name: "lr{{lr}}"
  axes:
    lr: {axis}
""")
    assert_bad(capsys, tmp_path, text, line_no(text, "    lr: {path"), field, fragment)


# ---------------------------------------------------------------- problems of a grid's own fields


GRID_ARMS = ("arms:\n  c1:\n    optimizer:\n      emb_lr_mult: 1\n  c10:\n    optimizer:\n"
             "      emb_lr_mult: 10\n")


def test_a_grid_problem_under_a_capitalised_axis_keeps_the_axis_in_its_path(
        tmp_path: Path) -> None:
    """An axis named `C` (a name pydantic might use for a union branch) with one value: the
    problem is at grid.axes.C.values, on the values line."""
    text = edit(SMALL_CLAIM, (GRID_ARMS, "")) + (
        "grid:\n  into: arms\n  axes:\n    C:\n      path: optimizer.emb_lr_mult\n"
        "      values: [1]\n  name: \"c{C}\"\n")
    assert problems(tmp_path, text) == [
        At(line_no(text, "values: [1]"), "grid.axes.C.values", "at least 2 items", "not 1")]


def test_an_unknown_grid_key_lists_the_grid_fields(tmp_path: Path) -> None:
    text = edit(SMALL_CLAIM, (GRID_ARMS, "")) + (
        "grid:\n  into: arms\n  axes:\n    c:\n      path: optimizer.emb_lr_mult\n"
        "      values: [1, 10]\n  name: \"c{c}\"\n  bases: {}\n")
    assert problems(tmp_path, text) == [
        At(line_no(text, "bases:"), "grid.bases", "unknown key 'bases' (did you mean 'base'?)",
           "allowed here: axes, base, into, name")]


def test_a_grid_axis_with_a_bad_name_is_named_as_a_key(tmp_path: Path) -> None:
    """A grid axis whose name is not a name: "key '...'" at the axis's line, under grid.axes."""
    text = SMALL_CLAIM + ("grid:\n  name: \"g{c}\"\n  axes:\n    c d:\n      path: optimizer.lr\n"
                          "      values: [0.2, 0.1]\n")
    assert problems(tmp_path, text) == [
        At(line_no(text, "c d:"), "grid.axes", "key 'c d': ",
           "expected 1-48 characters: letters, digits")]


# ---------------------------------------------------------------- a grid into family members


MEMBER_GRID = ("grid:\n  into: members\n  axes:\n    p:\n      path: task.p\n"
               "      values: [23, 31]\n  name: \"p{p}\"\n")


def test_a_grid_into_members_needs_a_family_section(tmp_path: Path) -> None:
    text = SMALL_CLAIM + MEMBER_GRID
    assert problems(tmp_path, text) == [
        At(line_no(text, "into: members"), "grid.into",
           "a grid into members needs a family: section (claims, correction) to put them in")]


def test_a_grid_into_members_adds_family_members(tmp_path: Path) -> None:
    """The generated members join those the family has; one it already has is refused,
    naming family.members."""
    text = SMALL_CLAIM + "family:\n  members:\n    p17:\n      task:\n        p: 17\n" + MEMBER_GRID
    loaded = load(tmp_path, text)
    assert {m: arms["c1"].task.p for m, arms in loaded.members("quick").items()} == {
        "p17": 17, "p23": 23, "p31": 31}
    taken = edit(text, ("    p17:\n      task:\n        p: 17\n",
                        "    p23:\n      task:\n        p: 17\n"))
    assert problems(tmp_path, taken) == [
        At(line_no(taken, '  name: "p{p}"'), "grid.name", "the grid generates 'p23'",
           "family.members already has")]


def test_a_generated_members_problem_points_at_the_grid_value(tmp_path: Path) -> None:
    """A member generated with p 1 (below the minimum of 2): the problem is blamed on the
    generated member's field, at the line of the grid's value."""
    text = SMALL_CLAIM + "family:\n  members:\n    p17:\n      task:\n        p: 17\n" + edit(
        MEMBER_GRID, ("values: [23, 31]", "values: [23,\n        1]"))
    assert problems(tmp_path, text) == [
        At(line_no(text, "        1]"), "family.members.p1.task.p", "greater than or equal to 2",
           "(got 1)")]


def test_a_problem_of_a_whole_generated_arm_points_at_the_grid_name(tmp_path: Path) -> None:
    """A scalar_mlp (no embedding) with a grid over emb_lr_mult: arm c2 fails as a whole (not
    at one field), and the problem points at the line of the grid's name."""
    text = edit(SMALL_CLAIM, (GRID_ARMS, ""),
                ("    kind: embed_mlp\n    d: 16\n", "    kind: scalar_mlp\n"),
                ("  treated: c10", "  treated: c2")) + (
        "grid:\n  into: arms\n  axes:\n    c:\n      path: optimizer.emb_lr_mult\n"
        "      values: [1, 2]\n  name: \"c{c}\"\n")
    assert problems(tmp_path, text) == [
        At(line_no(text, '  name: "c{c}"'), "arms.c2", "model 'scalar_mlp' has no embedding group",
           "emb_lr_mult/emb_lr/emb_weight_decay do not apply")]
