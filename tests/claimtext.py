"""Claim texts the claim tests break, and the helpers that edit, write and validate them.

Both claims are block style, one key per line, so that a wrong line number shows; an expected
line is found in the text itself (`line_no`), never copied from the loader's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import has_phrase

from grokverify.claim.load import LoadedClaim, load_claim
from grokverify.cli import main

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "claims").glob("*.yaml"))

# two scales (quick overrides p and the budget), sgd with momentum and weight decay
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

# one scale, adamw with its defaults, full batch
SMALL_CLAIM = """\
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


def load(tmp_path: Path, text: str) -> LoadedClaim:
    """`text` loaded without the budget's limits."""
    return load_claim(write(tmp_path, text), limits=None)


def validate(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, str, str]:
    """`grokverify validate paths`: exit code, stdout and stderr (never a traceback)."""
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
        assert has_phrase(found, fragment), f"{fragment!r} not in {found!r}"
    return found


class At:
    """A problem as `conftest.problems` writes it: at `line` and `path` (none: a problem of the
    whole file), its message holding every one of `phrases` (as whole words)."""

    def __init__(self, line: int | None, path: str, *phrases: str) -> None:
        self.start = f"{line} {path}: " if path else f"{line} "
        self.phrases = phrases

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, str) and other.startswith(self.start)
                and all(has_phrase(other[len(self.start):], p) for p in self.phrases))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"At({self.start!r}, *{self.phrases!r})"
