"""The corpora of malformed claims: each must fail cleanly with its message.

tests/bad_claims_basic/ holds a few files broken as a whole (empty, not YAML, not a mapping),
each with its expected line and words below (BASIC).

Every `<case>.yaml` opens with comment lines giving what `grokverify validate` must print:

    # what is wrong (free text)
    # expect-line: 12                               (absent: the problem names no line)
    # expect-path: arms.c10.optimizer.emb_lr_mul    (absent: the problem names no field)
    # expect: unknown key 'emb_lr_mul'              (one or more substrings of the problem)

A case whose file cannot carry comments (zero bytes, not UTF-8) keeps them in `<case>.expect`.
The problem line must read `file[:line]: [path: ]message`, exit 2, with no traceback and no
pydantic-internal wording.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from claimtext import validate
from conftest import console_script

from grokverify.cli import main

TESTS = Path(__file__).resolve().parent
CORPUS = TESTS / "bad_claims"
CASES = sorted(CORPUS.glob("*.yaml"))
GOOD = TESTS / "fixtures" / "tiny_claim.yaml"
BAD_BASIC = TESTS / "bad_claims_basic"

# what the corpus must cover (a case may cover more than one)
REQUIRED = {
    "syntax_unclosed_flow", "syntax_bad_indentation", "tab_indentation",
    "unknown_key_top_level", "unknown_key_source", "unknown_key_base", "unknown_key_base_task",
    "unknown_key_base_model", "unknown_key_base_optimizer", "unknown_key_base_training",
    "unknown_key_arm_section", "unknown_key_scale", "unknown_key_scale_override",
    "unknown_key_metric", "unknown_key_criterion", "unknown_key_family",
    "wrong_type_string_for_int", "out_of_range_train_frac", "unknown_task_op",
    "unknown_model_kind", "unknown_optimizer", "unknown_criterion", "unknown_metric",
    "missing_required_field", "arm_overrides_missing_path", "scale_overrides_missing_path",
    "duplicate_arm", "zero_seeds", "threshold_above_one", "threshold_negative",
    "criterion_missing_arm", "empty", "non_utf8", "not_a_mapping_list", "not_a_mapping_scalar",
    "value_metric_for_survival", "unknown_curve",
    "yaml_alias_bomb", "yaml_deep_nesting", "yaml_python_tag_mapping", "yaml_python_tag_list",
    "yaml_custom_tag", "yaml_binary_tag", "yaml_nul_byte", "yaml_null_key",
    "type_lr_inf", "type_lr_overflow", "type_lr_nan", "type_weight_decay_inf",
    "type_emb_lr_mult_inf", "type_skew_inf", "type_float_bool", "type_float_bool_on",
    "type_float_string", "type_min_effect_inf", "limit_p_huge", "limit_hidden_huge",
    "limit_seeds_huge", "limit_n_boot_huge", "limit_bootstrap_seed_negative", "limit_steps_huge",
    "limit_id_too_long", "limit_arm_name_injection", "limit_batch_larger_than_train",
    "limit_trial_memory", "limit_trial_flops", "family_claims_each",
}

# words of pydantic's or pyyaml's internals that a claim author should never have to read
JARGON = ("Traceback", "union_tag", "Input tag", "discriminator", "instance of",
          "errors.pydantic.dev", "[type=", "<block", "<scalar>")

_HEADER = re.compile(r"^#\s*(expect|expect-line|expect-path):\s*(.*?)\s*$")


@dataclass(frozen=True)
class Expectation:
    line: int | None
    path: str | None
    fragments: tuple[str, ...]


def expectation(case: Path) -> Expectation:
    """The leading comment block of the case (or of its `.expect` sidecar)."""
    sidecar = case.with_suffix(".expect")
    text = (sidecar if sidecar.exists() else case).read_text(encoding="utf-8")
    line: int | None = None
    path: str | None = None
    fragments: list[str] = []
    for raw in text.splitlines():
        if not raw.startswith("#"):
            break
        match = _HEADER.match(raw)
        if match is None:
            continue
        key, value = match.groups()
        if key == "expect-line":
            assert value.isdigit(), f"{case.name}: expect-line must be a number, got {value!r}"
            line = int(value)
        elif key == "expect-path":
            path = value
        else:
            fragments.append(value)
    return Expectation(line, path, tuple(fragments))


def problem_for(err: str, case: Path, exp: Expectation) -> str:
    """The stderr line for this case's expected problem, with every expected fragment in it."""
    where = f"{case}" if exp.line is None else f"{case}:{exp.line}"
    prefix = f"{where}: {exp.path}: " if exp.path else f"{where}: "
    hits = [ln for ln in err.splitlines() if ln.startswith(prefix)]
    assert hits, f"no problem starting {prefix!r} in:\n{err}"
    if exp.path is None:  # a file-level problem: no field path after the location
        hits = [ln for ln in hits if not re.match(r"[\w.\[\]]+: ", ln[len(prefix):])]
        assert hits, f"expected a file-level problem (no field path) at {prefix!r} in:\n{err}"
    complete = [ln for ln in hits if all(f in ln for f in exp.fragments)]
    assert complete, (f"no problem at {prefix!r} contains all of {list(exp.fragments)}; "
                      f"got:\n" + "\n".join(hits))
    return complete[0]


def check_output(case: Path, exp: Expectation, out: str, err: str) -> str:
    for word in JARGON:
        assert word not in out + err, f"{word!r} in the output for {case.name}:\n{out}{err}"
    found = problem_for(err, case, exp)
    for ln in err.splitlines():
        assert ln.startswith(f"{case}:") or not ln.strip(), f"a problem not naming the file: {ln!r}"
    return found


# ---------------------------------------------------------------- the corpus itself


def test_corpus_is_complete() -> None:
    names = {case.stem for case in CASES}
    assert len(CASES) >= 25, f"only {len(CASES)} cases"
    assert not REQUIRED - names, f"missing cases: {sorted(REQUIRED - names)}"
    for sidecar in CORPUS.glob("*.expect"):
        assert sidecar.with_suffix(".yaml").exists(), f"{sidecar.name} has no case file"
    others = {p.name for p in CORPUS.iterdir()} - {p.name for p in CASES} - {
        p.name for p in CORPUS.glob("*.expect")}
    assert not others, f"stray files in {CORPUS}: {sorted(others)}"


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_case_has_expectations(case: Path) -> None:
    exp = expectation(case)
    assert exp.fragments, f"{case.name} has no '# expect:' line (in the file or a .expect sidecar)"
    assert all(exp.fragments), f"{case.name} has an empty '# expect:' line"


def test_non_utf8_case_is_really_not_utf8() -> None:
    with pytest.raises(UnicodeDecodeError):
        (CORPUS / "non_utf8.yaml").read_bytes().decode("utf-8")
    assert (CORPUS / "empty.yaml").read_bytes() == b""


# ---------------------------------------------------------------- grokverify validate


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_bad_claim_is_reported(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = expectation(case)
    start = time.perf_counter()
    rc = main(["validate", str(case)])
    took = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert rc == 2, f"exit {rc} for {case.name}; stdout:\n{out}\nstderr:\n{err}"
    assert took <= 2.0, f"{case.name} took {took:.2f} s to refuse (a hang guard: all take ms)"
    assert "ok" not in out.split()
    check_output(case, exp, out, err)


def test_console_script_reports_whole_corpus(tmp_path: Path) -> None:
    """The installed entry point, one process for every case: exit 2, each problem, no trace."""
    proc = subprocess.run([*console_script(), "validate", *map(str, CASES)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    for word in JARGON:
        assert word not in proc.stdout + proc.stderr, f"{word!r} in:\n{proc.stderr}"
    for case in CASES:
        problem_for(proc.stderr, case, expectation(case))
    assert "ok" not in proc.stdout.split()


# ---------------------------------------------------------------- grokverify run

RUN_CASES = ["unknown_key_arm_section", "scale_override_conflict", "criterion_missing_arm",
             "syntax_unclosed_flow", "non_utf8", "value_metric_for_survival", "unknown_curve"]


@pytest.mark.parametrize("name", RUN_CASES)
def test_run_refuses_bad_claim_and_trains_nothing(name: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`run` checks every claim before training any: a good claim listed first is not run."""
    case = CORPUS / f"{name}.yaml"
    store, reports = tmp_path / "store", tmp_path / "reports"
    rc = main(["run", str(GOOD), str(case), "--executor", "local", "--device", "cpu",
               "--store", str(store), "--reports", str(reports)])
    out, err = capsys.readouterr()
    assert rc == 2, f"exit {rc}; stdout:\n{out}\nstderr:\n{err}"
    check_output(case, expectation(case), out, err)
    assert not store.exists() or not any(store.iterdir()), "a bad claim must train nothing"
    assert not reports.exists() or not any(reports.iterdir())


# ---------------------------------------------------------------- files broken as a whole

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
