"""The YAML reader (grokverify.claim.yamlio): hostile or broken input is refused fast, by line.

An alias bomb, a thousand nested brackets or a huge file must end in `file:line: message`
and exit 2 within milliseconds (not a 100 s MemoryError or a RecursionError traceback);
any tag outside the core schema is refused wherever it stands; a duplicate key, a tab, a
file that is not UTF-8 or not there are refused at their line; legitimate anchors, aliases and
merge keys still load. The corpus cases (tests/bad_claims/yaml_*) are checked by
test_claim_bad_files.py; the cases here are generated (a too-large file is not committed) or
are small enough to state inline.
"""

from __future__ import annotations

import re
import time
from datetime import date
from pathlib import Path

import pytest
from claimtext import CLAIM, assert_bad, edit, line_no, validate, write

from grokverify.claim import yamlio
from grokverify.claim.load import load_claim
from grokverify.claim.yamlio import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, SpecError, load_yaml_text
from grokverify.cli import main

TESTS = Path(__file__).resolve().parent
CORPUS = TESTS / "bad_claims"
GOOD = (TESTS / "fixtures" / "tiny_claim.yaml").read_text(encoding="utf-8")
# catches a hang (an unbounded parse), not speed: the 1 MB flow list's refusal took 2.2 s on
# 2 cores shared with training; a hang takes minutes
HANG_GUARD_S = 15.0


def timed_validate(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str, float]:
    """`grokverify validate path`: exit code, stderr and seconds taken."""
    start = time.perf_counter()
    rc = main(["validate", str(path)])
    seconds = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, err, seconds


def refusal(text: str) -> str:
    """The one problem load_yaml_text reports for `text`, as `f:line: message` (its field path
    left out: test_problems_name_the_field_path checks those)."""
    with pytest.raises(SpecError) as info:
        load_yaml_text(text, "f")
    assert len(info.value.problems) == 1
    problem = info.value.problems[0]
    return f"{problem.file}:{problem.line}: {problem.message}"


@pytest.mark.parametrize(("text", "path"), [
    ("a: !foo x\n", "a"),
    ("a:\n  b: [1, !!python/name:os.system x]\n", "a.b[1]"),
    ("a: {b: {c: !!binary aGk=}}\n", "a.b.c"),
    ("x: &x [1, 2]\n'odd key': [*x, *x]\n", None),
    ("a: " + "[" * 60 + "]" * 60 + "\n", "a" + "[0]" * 49),
])
def test_problems_name_the_field_path(text: str, path: str | None) -> None:
    """A problem found in the event stream names the field it is in, as spec problems do."""
    if path is None:  # loads: the check is only that aliases do not confuse the position
        load_yaml_text(text, "f")
        return
    with pytest.raises(SpecError) as info:
        load_yaml_text(text, "f")
    assert info.value.problems[0].path == path


def too_large(tmp_path: Path) -> tuple[Path, int]:
    """2 MiB of comments, then a good claim; and the line where MAX_FILE_BYTES is passed."""
    comment = "# " + "padding " * 9 + "\n"
    raw = (comment * (2 * MAX_FILE_BYTES // len(comment)) + GOOD).encode("utf-8")
    path = tmp_path / "huge.yaml"
    path.write_bytes(raw)
    return path, raw[:MAX_FILE_BYTES].count(b"\n") + 1


# ---------------------------------------------------------------- size, depth, alias expansion


def test_too_large_file_is_refused_with_line_and_limit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, line = too_large(tmp_path)
    rc, err, _ = timed_validate(capsys, path)
    assert rc == 2
    assert err.startswith(f"{path}:{line}: file too large ({path.stat().st_size:,} bytes)"), err
    assert f"MAX_FILE_BYTES, {MAX_FILE_BYTES / 2**20:g} MiB" in err
    assert f"{MAX_FILE_BYTES:,} bytes" in err


def test_huge_file_is_not_read_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only the first MAX_FILE_BYTES + 1 bytes are read (a sparse 256 MiB file here)."""
    path = tmp_path / "sparse.yaml"
    with path.open("wb") as fh:
        fh.truncate(256 << 20)
    rc, err, seconds = timed_validate(capsys, path)
    assert rc == 2
    assert err.startswith(f"{path}:1: file too large ({256 << 20:,} bytes)"), err
    assert seconds <= HANG_GUARD_S


def test_size_limit_applies_to_text_too() -> None:
    assert "file too large" in refusal("a: 1\n" + "#" * MAX_FILE_BYTES)


LIMIT_CASES = ["yaml_alias_bomb", "yaml_deep_nesting", "too_large", "too_many_nodes"]


@pytest.mark.parametrize("name", LIMIT_CASES)
def test_limit_refusals_are_fast(name: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    if name == "too_large":
        path, _ = too_large(tmp_path)
    elif name == "too_many_nodes":  # just under the size limit, one flow list of numbers
        path = tmp_path / "many.yaml"
        path.write_text(GOOD + "notes: [" + "1, " * (MAX_FILE_BYTES // 3 - 1000) + "]\n")
    else:
        path = CORPUS / f"{name}.yaml"
    rc, err, seconds = timed_validate(capsys, path)
    assert rc == 2, err
    assert re.match(rf"{re.escape(str(path))}:\d+: ", err), err
    assert re.search(r"MAX_(FILE_BYTES|DEPTH|NODES)", err), err
    assert seconds <= HANG_GUARD_S, f"{name} took {seconds:.2f} s"


def test_depth_limit_is_exact() -> None:
    assert load_yaml_text("[" * MAX_DEPTH + "]" * MAX_DEPTH, "f")[0] is not None
    message = refusal("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert message.startswith("f:1: ") and f"MAX_DEPTH = {MAX_DEPTH}" in message


def test_block_nesting_is_limited_too() -> None:
    text = "".join("  " * i + f"k{i}:\n" for i in range(MAX_DEPTH + 5)) + "  " * 60 + "v\n"
    # the mapping under k{i} starts on line i + 2 and is level i + 2
    assert refusal(text).startswith(f"f:{MAX_DEPTH + 1}: mappings/lists nested more than")


def test_node_limit_is_exact() -> None:
    """A list of n scalars is n + 1 nodes."""
    assert len(load_yaml_text("- 1\n" * (MAX_NODES - 1), "f")[0]) == MAX_NODES - 1
    message = refusal("- 1\n" * MAX_NODES)
    assert message.startswith(f"f:{MAX_NODES}: more than {MAX_NODES:,} nodes"), message


def test_alias_chain_is_limited_in_depth() -> None:
    """Each alias wraps the previous anchor one level deeper: 200 levels from 200 lines."""
    text = "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 200))
    message = refusal(text)
    assert message.startswith(f"f:{MAX_DEPTH}: alias *a{MAX_DEPTH - 2} nests"), message
    assert f"MAX_DEPTH = {MAX_DEPTH}" in message


def test_merge_chain_is_limited_in_depth() -> None:
    """Merges nest the builder's recursion without nesting the data: limited the same way."""
    text = "a0: &a0 {x: 1}\n" + "".join(f"a{i}: &a{i} {{<<: *a{i - 1}, y{i}: 1}}\n"
                                         for i in range(1, 2000))
    assert f"MAX_DEPTH = {MAX_DEPTH}" in refusal(text)


def test_alias_bomb_names_the_crossing_alias() -> None:
    levels = zip("abcdefgh", "bcdefghi", strict=True)
    text = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in levels)
    message = refusal(text)
    assert message.startswith("f:5: alias *d (a copy of 7,381 nodes) takes the document past")
    assert f"MAX_NODES = {MAX_NODES}" in message


def test_limits_are_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module constants are the limits (and what the messages quote)."""
    monkeypatch.setattr(yamlio, "MAX_NODES", 5)
    assert "MAX_NODES = 5" in refusal("[1, 2, 3, 4, 5]")
    monkeypatch.setattr(yamlio, "MAX_DEPTH", 2)
    assert "MAX_DEPTH = 2" in refusal("a: {b: {c: 1}}")


# ---------------------------------------------------------------- tags


APPLY = "!!python/object/apply:os.system"


@pytest.mark.parametrize(("text", "line", "tag"), [
    (f"a: {APPLY}\n  args: [echo pwned]\n", 1, APPLY),
    (f"a:\n  - {APPLY} [echo pwned]\n", 2, APPLY),
    ("a: !!python/name:os.system\n", 1, "!!python/name:os.system"),
    ("? !!python/tuple [1, 2]\n: x\n", 1, "!!python/tuple"),
    ("a: 1\n!foo b: 2\n", 2, "!foo"),
    ("a: !foo {b: 1}\n", 1, "!foo"),
    ("a: !!binary aGk=\n", 1, "!!binary"),
    ("a: !!set {x, y}\n", 1, "!!set"),
    ("a: !!omap [{x: 1}]\n", 1, "!!omap"),
    ("a: !!pairs [{x: 1}]\n", 1, "!!pairs"),
    ("a: !!timestamp 2024-01-31\n", 1, "!!timestamp"),
    ("a: !!value x\n", 1, "!!value"),
    ("a: !<tag:yaml.org,2002:python/none> ''\n", 1, "!!python/none"),
    ("%TAG !e! tag:example.com,2000:\n---\na: !e!thing x\n", 3, "tag:example.com,2000:thing"),
])
def test_non_core_tags_are_refused_anywhere(text: str, line: int, tag: str) -> None:
    message = refusal(text)
    assert message.startswith(f"f:{line}: YAML tag {tag!r} is not allowed"), message
    assert "claims are plain data (mappings, lists, strings, numbers, booleans, null)" in message


@pytest.mark.parametrize(("text", "value"), [
    ("a: !!str 1", "1"), ("a: !!int '3'", 3), ("a: !!float 1", 1.0), ("a: !!bool 'true'", True),
    ("a: !!null ''", None), ("a: !!map {b: 1}", {"b": 1}), ("a: !!seq [1]", [1]),
    ("a: ! 12", 12), ("a: 2024-01-31", date(2024, 1, 31)),
    ("a: =", "="), ("a: <<", "<<"), ("a: yes", True), ("a: ~", None), ("a: 1.0e-3", 0.001),
])
def test_core_schema_values_load(text: str, value: object) -> None:
    assert load_yaml_text(text, "f")[0] == {"a": value}


def test_python_tag_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "pwned"
    for tagged in (f"notes: !!python/object/apply:os.system\n  args: ['touch {marker}']\n",
                   f"notes: !!python/object/apply:os.system ['touch {marker}']\n"):
        path = tmp_path / "claim.yaml"
        path.write_text(GOOD + tagged, encoding="utf-8")
        rc, err, _ = timed_validate(capsys, path)
        assert rc == 2 and "is not allowed" in err
    assert not marker.exists()


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


# ---------------------------------------------------------------- characters, keys, files


@pytest.mark.parametrize(("text", "line", "what"), [
    ("a: 1\nb: x\0y\n", 2, "control character U+0000 (NUL) at column 5"),
    ("a: 1\n\nb: \x07\n", 3, "control character U+0007 at column 4"),
    ("a: \x7f\n", 1, "control character U+007F (DEL) at column 4"),
    ("a: \ufffe\n", 1, "character U+FFFE at column 4"),
])
def test_forbidden_characters_name_their_line(text: str, line: int, what: str) -> None:
    message = refusal(text)
    assert message.startswith(f"f:{line}: {what} is not allowed in YAML"), message


@pytest.mark.parametrize(("text", "line", "what"), [
    ("a:\n  ~: 1\n", 2, "a null key (~, null or empty) is not allowed"),
    ("a:\n  null: 1\n", 2, "a null key (~, null or empty) is not allowed"),
    ("a:\n  ? \n  : 1\n", 2, "a null key (~, null or empty) is not allowed"),
    ("a:\n  2024-01-31: 1\n", 2, "the key 2024-01-31 is read as a date"),
    ("a:\n  [x, y]: 1\n", 2, "a list used as a key (['x', 'y'])"),
    ("a:\n  ? {x: 1}\n  : 1\n", 2, "a mapping used as a key ({'x': 1})"),
])
def test_odd_keys_say_what_the_key_was(text: str, line: int, what: str) -> None:
    message = refusal(text)
    assert message.startswith(f"f:{line}: {what}"), message
    assert "mapping keys must be plain scalars" in message


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


# ---------------------------------------------------------------- legitimate YAML still loads


ANCHORED = """\
id: anchored
title: Anchors, aliases and merge keys
statement: c10 reaches the validation threshold sooner than c1 (test).
source: {arxiv: "2505.15624", where: test, role: paper_claim, quote: test}
base:
  task: {op: add, p: 10, modular: false, unordered: true, train_frac: 0.7}
  model: {kind: toy_sum, hidden: 32}
  optimizer: &opt {name: adamw, lr: 0.003}
  training: &train {steps: 300, eval_interval: 10, train_threshold: 0.9, val_threshold: 0.6}
arms:
  c1: &c1
    optimizer: *opt
  c10:
    <<: *c1
    optimizer:
      <<: *opt
      emb_lr_mult: 10
scales:
  quick:
    description: test scale
    overrides:
      training:
        <<: *train
        steps: 200
seeds: 3
metric: {name: val_threshold_step}
criterion: {name: survival_compare, baseline: c1, treated: c10, direction: less, min_effect: 0.2}
"""


def test_anchors_aliases_and_merge_keys_still_load(tmp_path: Path) -> None:
    path = tmp_path / "anchored.yaml"
    path.write_text(ANCHORED, encoding="utf-8")
    arms = load_claim(path).resolved["quick"]
    assert arms["c1"].optimizer.lr == arms["c10"].optimizer.lr == 0.003
    assert (arms["c1"].optimizer.emb_lr_mult, arms["c10"].optimizer.emb_lr_mult) == (1, 10)
    assert arms["c1"].training.steps == arms["c10"].training.steps == 200


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
