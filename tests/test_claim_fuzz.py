"""A seeded fuzzer over the shipped claims: every mutant (values, types, keys, YAML structure)
either loads and passes `grokverify run --dry-run` (resolve, estimate, check paths, no
training) or is refused with exit 2 and a `file[:line]: ...` problem; none tracebacks or hangs.

The mutants are reproducible from FUZZ_SEED and the case number; a failure prints the case's
YAML so it can be added to tests/bad_claims/.
"""

from __future__ import annotations

import copy
import io
import random
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from grokverify.cli import main

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "claims").glob("*.yaml")) + [ROOT / "tests/fixtures/tiny_claim.yaml"]
FUZZ_SEED = 20261130
CASES = 2000
BATCHES = 8  # test items, so a failure names a smaller range
PER_CASE_S = 10  # a hang guard, far above the ~20 ms a case takes

# values a mutant may put anywhere: numbers at and past every bound, wrong types, hostile text
WEIRD: list[Any] = [
    0, 1, -1, 2, 3, 7, 97, 10**3, 10**6, 10**9, 10**29, -(10**12), 2**63, 0.0, -0.5, 0.5, 1.0,
    1.5, 1e-12, 1e12, 1e300, float("inf"), float("-inf"), float("nan"), True, False, None, "",
    "0.1", "yes", "on", "adam", "sgd", "add", "div", "embed_mlp", "toy_sum", "c1", "c10", "quick",
    "paper", "survival_compare", "val_threshold_step", "x" * 300, "c10 | x\n# INJECTED",
    "<script>", "../../etc", "~", [], {}, [1, 2], {"a": 1}, [[[]]], {"kind": "embed_mlp"},
    {"name": "adam"}, {"min": 2, "max": 4, "step": 1}, {"min": 4, "max": 2, "step": 0},
]
TYPOS = ["lr", "steps", "kind", "name", "seeds", "p", "hidden", "d", "weight_decay", "arms",
         "base", "scales", "quick", "n_boot", "bootstrap_seed", "direction", "min_effect",
         "baseline", "treated", "every", "probes", "interventions", "batch_size", "unknown_key"]
SNIPPETS = [":", "[", "]", "{", "}", "&a ", "*a", "!!python/object/apply:os.system ['true']",
            "\t", "- ", "? ", "|", ">", "'", '"', "#", "<<: *a", "!!binary aGk=", "%YAML 1.1\n",
            "---\n", "...\n", "\x00", "\ufeff", ": : :", "1e400", ".nan", "*", "&", "!foo "]


def _paths(tree: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a parsed claim (mapping keys and list indices), the root excluded."""
    if isinstance(tree, dict):
        items: Any = tree.items()
    elif isinstance(tree, list):
        items = enumerate(tree)
    else:
        return
    for key, sub in items:
        yield (*path, key)
        yield from _paths(sub, (*path, key))


def _parent(tree: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        tree = tree[key]
    return tree


def _set_value(rng: random.Random, data: Any) -> None:
    path = rng.choice(list(_paths(data)))
    _parent(data, path)[path[-1]] = copy.deepcopy(rng.choice(WEIRD))


def _wrap_value(rng: random.Random, data: Any) -> None:
    path = rng.choice(list(_paths(data)))
    parent = _parent(data, path)
    parent[path[-1]] = rng.choice([[parent[path[-1]]], {"value": parent[path[-1]]}])


def _drop_key(rng: random.Random, data: Any) -> None:
    paths = [p for p in _paths(data) if isinstance(_parent(data, p), dict)]
    path = rng.choice(paths)
    del _parent(data, path)[path[-1]]


def _rename_key(rng: random.Random, data: Any) -> None:
    paths = [p for p in _paths(data) if isinstance(_parent(data, p), dict)]
    path = rng.choice(paths)
    parent = _parent(data, path)
    new = rng.choice([*TYPOS, path[-1] + "s", path[-1][:-1], path[-1].upper()])
    parent[new] = parent.pop(path[-1])


def _add_key(rng: random.Random, data: Any) -> None:
    maps = [data, *(v for p in _paths(data) if isinstance(v := _value(data, p), dict))]
    rng.choice(maps)[rng.choice(TYPOS)] = copy.deepcopy(rng.choice(WEIRD))


def _value(data: Any, path: tuple[Any, ...]) -> Any:
    return _parent(data, path)[path[-1]]


def _copy_subtree(rng: random.Random, data: Any) -> None:
    """Graft one part of the claim somewhere else (an arm into the scales, a model into the
    optimizer, ...): well-formed pieces in the wrong place."""
    paths = list(_paths(data))
    source, target = rng.choice(paths), rng.choice(paths)
    if target[: len(source)] != source:
        _parent(data, target)[target[-1]] = copy.deepcopy(_value(data, source))


DATA_MUTATIONS: list[Callable[[random.Random, Any], None]] = [
    _set_value, _set_value, _set_value, _wrap_value, _drop_key, _rename_key, _add_key,
    _copy_subtree]


def _text_mutant(rng: random.Random, text: str) -> str:
    """YAML structure: lines deleted, duplicated, re-indented, cut, or a token spliced in."""
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        kind = rng.randrange(6)
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[i])
        elif kind == 2:
            lines[i] = " " * rng.choice([1, 2, 3, 4, 8]) + lines[i]
        elif kind == 3:
            lines[i] = lines[i].lstrip()
        elif kind == 4:
            at = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:at] + rng.choice(SNIPPETS) + lines[i][at:]
        else:
            return "".join(lines)[: rng.randrange(len(text) + 1)]
        if not lines:
            return ""
    return "".join(lines)


def mutant(case: int) -> str:
    """The YAML text of fuzz case `case` (reproducible from FUZZ_SEED and `case`)."""
    rng = random.Random(FUZZ_SEED * 100_003 + case)
    source = SOURCES[case % len(SOURCES)]
    text = source.read_text(encoding="utf-8")
    if rng.random() < 0.4:
        return _text_mutant(rng, text)
    data = yaml.safe_load(text)
    for _ in range(rng.randint(1, 3)):
        if not list(_paths(data)):
            break
        rng.choice(DATA_MUTATIONS)(rng, data)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def fail(signum: int, frame: object) -> None:
        raise TimeoutError(f"a case ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _dry_run(path: Path, tmp: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), _deadline(PER_CASE_S):
        rc = main(["run", str(path), "--dry-run", "--executor", "local", "--device", "cpu",
                   "--store", str(tmp / "store"), "--reports", str(tmp / "reports")])
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("batch", range(BATCHES))
def test_mutants_load_and_dry_run_or_are_refused(batch: int, tmp_path: Path) -> None:
    outcomes = {0: 0, 2: 0}
    for case in range(batch, CASES, BATCHES):
        text = mutant(case)
        path = tmp_path / f"case{case}.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            rc, out, err = _dry_run(path, tmp_path)
        except BaseException as exc:  # noqa: BLE001 - any escape is the failure we look for
            pytest.fail(f"case {case} raised {type(exc).__name__}: {exc}\n--- YAML ---\n{text}")
        context = f"case {case}: exit {rc}\n{out}{err}\n--- YAML ---\n{text}"
        assert rc in outcomes, context
        assert "Traceback" not in out + err, context
        if rc == 2:
            problems = [ln for ln in err.splitlines() if ln.strip()]
            assert problems and all(ln.startswith(f"{path}") for ln in problems), context
        else:  # planned, or an image claim skipped for want of its files (none here)
            assert "dry run: nothing trained" in out or out.startswith("SKIPPED "), context
        outcomes[rc] += 1
    # the fuzzer must exercise both outcomes, or it tests less than it seems to
    assert outcomes[0] >= 10 and outcomes[2] >= 50, outcomes


def test_mutants_are_reproducible() -> None:
    assert [mutant(c) for c in range(20)] == [mutant(c) for c in range(20)]
