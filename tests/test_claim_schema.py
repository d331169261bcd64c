"""What a claim file may say (grokverify.claim.schema and the specs under it): the shipped
claims validate, the schema is JSON, every float is a finite number and every integer bounded,
names and ids keep to their patterns, and an impossible value is refused at its line."""

from __future__ import annotations

import json
import math
import typing
from pathlib import Path
from typing import Any

import pytest
from claimtext import (
    CLAIM,
    SHIPPED,
    SMALL_CLAIM,
    At,
    assert_bad,
    edit,
    line_no,
    load,
    validate,
    write,
)
from conftest import problems
from pydantic import BaseModel, TypeAdapter, ValidationError

from grokverify.claim.load import load_claim
from grokverify.claim.schema import Claim
from grokverify.claim.yamlio import SpecError
from grokverify.cli import main
from grokverify.kinds import CRITERIA, INTERVENTIONS, METRICS, MODELS, PROBES

# ---------------------------------------------------------------- valid claims


DRAFTS = sorted((SHIPPED[0].parent / "drafts").glob("*.yaml"))  # claims/drafts/README.md
# claims written after issue 34, with checks from the start: the dated note of their writing
WRITTEN_WITH_CHECKS = {"adam_lr_l2": "Why it exists (2026-12-06, issue 35)",
                       **{c: "Written 2026-12-03, before any run of this claim" for c in (
                           "nanda_fourier_sparse_embedding", "nanda_restricted_loss_leads",
                           "nanda_wd_speeds_grokking", "power_data_fraction_slows",
                           "power_s5_groks", "power_weight_decay_data_efficient")}}


def test_claims_directory_is_not_empty() -> None:
    assert SHIPPED, "claims/*.yaml should hold at least one claim"


@pytest.mark.parametrize("path", SHIPPED + DRAFTS, ids=[p.name for p in SHIPPED + DRAFTS])
def test_shipped_claim_validates(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = validate(capsys, path)
    assert rc == 0, err
    assert err == ""
    assert "ok" in out


@pytest.mark.parametrize("path", SHIPPED + DRAFTS, ids=[p.name for p in SHIPPED + DRAFTS])
def test_shipped_claim_declares_its_checks_and_interpretation(path: Path) -> None:
    """Written before the run (docs/verdicts.md, "Interpretation"): every verdict the claim can
    get has its sentence, a decided one the side it favours, and at least one check."""
    claim = load_claim(path, limits=None).claim
    meaning = claim.interpretation
    assert claim.checks and meaning is not None
    if claim.source.role == "open_question":
        assert meaning.finding
    else:
        assert meaning.supported and meaning.refuted and meaning.inconclusive
        assert meaning.favours is not None
    # the change, dated, in the notes (a draft is written with them, and so is a claim written
    # after issue 34: its dated note says why it was written)
    assert "2026-12-02 (issue 34" in claim.notes or path in DRAFTS or \
        WRITTEN_WITH_CHECKS.get(path.stem, "\0") in claim.notes


def test_base_claim_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = validate(capsys, write(tmp_path, CLAIM))
    assert (rc, err) == (0, "")
    assert "test_claim" in out


def test_schema_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    out, err = capsys.readouterr()
    schema = json.loads(out)
    assert {"id", "base", "arms", "scales", "criterion", "seeds", "metric"} <= set(
        schema["properties"])
    assert {"id", "base", "arms", "scales", "criterion"} <= set(schema["required"])


# ---------------------------------------------------------------- impossible values

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
    ("    modular: true", "    modular: maybe", "modular:", "base.task.modular", ["boolean"]),
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


@pytest.mark.parametrize("p,prime", [(4, False), (9, False), (7, True)])
def test_div_needs_a_prime_p(tmp_path: Path, p: int, prime: bool) -> None:
    """op 'div' takes a modular inverse: 4 = 2·2 and 9 = 3·3 are refused, 7 is prime."""
    text = edit(SMALL_CLAIM, ("    op: add\n    p: 31", f"    op: div\n    p: {p}"))
    if prime:
        assert load(tmp_path, text).claim.base.task.p == p
    else:
        assert problems(tmp_path, text) == [
            At(line_no(text, "  task:"), "base.task", "op 'div'", "modular: true", "a prime p")]


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
    ("  c1:\n", "  " + "c" * 49 + ":\n", "c" * 49, "arms", "arm name '" + "c" * 49 + "'"),
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
