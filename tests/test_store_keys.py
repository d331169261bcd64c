"""The store key policy (docs/store.md, "The key"): the key changes with every input that
determines a result, and not with the engine's source."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from storedata import EXP
from suitedata import TINY

import grokverify
from grokverify import store
from grokverify.claim.experiment import ExperimentSpec

KEY_OF = ("from grokverify.claim.experiment import ExperimentSpec; "
          "from grokverify.store import record_key, code_version; import json; "
          "print(record_key(ExperimentSpec.model_validate({exp}), 3, 'cpu'), code_version())")


def _key() -> str:
    return store.record_key(ExperimentSpec.model_validate(EXP), 3, "cpu")


def test_the_key_changes_with_everything_that_determines_a_result(
        monkeypatch: pytest.MonkeyPatch) -> None:
    base = _key()
    exp = ExperimentSpec.model_validate(EXP)
    assert store.record_key(exp, 4, "cpu") != base
    assert store.record_key(exp, 3, "cuda") != base
    for section, change in (("optimizer", {"lr": 0.02}), ("training", {"steps": 41}),
                            ("task", {"p": 11}), ("model", {"hidden": 17})):
        other = ExperimentSpec.model_validate({**EXP, section: {**EXP[section], **change}})
        assert store.record_key(other, 3, "cpu") != base, section
    probed = ExperimentSpec.model_validate({**EXP, "probes": [{"name": "sigma_max", "every": 5}]})
    assert store.record_key(probed, 3, "cpu") != base
    monkeypatch.setattr(store, "RESULTS_VERSION", "another")
    assert _key() != base
    monkeypatch.undo()
    monkeypatch.setattr(store, "torch_version", lambda: "9.9.9")
    assert _key() != base
    monkeypatch.undo()
    monkeypatch.setenv("GROKVERIFY_NUMERICS", "native")
    assert _key() != base


def test_a_comment_in_the_engine_does_not_re_key_the_store(tmp_path: Path) -> None:
    """The same key from a copy of the package whose engine modules carry an extra comment (the
    source hash, provenance only, does change)."""
    package = Path(grokverify.__file__).parent
    copy = tmp_path / "grokverify"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for module in ("loop.py", "models.py", "fast.py"):
        with (copy / "engine" / module).open("a") as fh:
            fh.write("\n# a comment that changes nothing\n")
    code = KEY_OF.format(exp=repr(EXP))
    original = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, cwd=package.parent).stdout.split()
    # Under mutmut (benchmarks/mutation.py) the copy is of the mutated package, whose
    # trampolines cannot find their configuration from tmp_path: the copy runs unmutated.
    env = {k: v for k, v in os.environ.items() if k != "MUTANT_UNDER_TEST"}
    edited = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=tmp_path, env=env).stdout.split()
    assert edited[0] == original[0] == _key()
    assert edited[1] != original[1]  # which code wrote a record is still recorded


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_records_keep_what_their_key_hashes(device: str) -> None:
    inputs = store.key_inputs(ExperimentSpec.model_validate(EXP), 3, device)
    assert set(inputs) == {"experiment", "seed", "results_version", "torch", "device",
                           "numerics"}
    assert store.hash_key(inputs) == store.record_key(ExperimentSpec.model_validate(EXP), 3,
                                                      device)


def test_a_worker_whose_environment_differs_from_the_keys_refuses_before_training(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A record must hash to the key the driver filed it under: a worker with another torch
    release (or results version, or numerics) than the driver's keys stops before training."""
    from grokverify.engine import loop
    from grokverify.run.execute import run_trial

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("trained although the keys cannot match")

    monkeypatch.setattr(loop, "train_seeds", never)
    expected = {**store.environment("cpu"), "torch": "0.0.1"}
    with pytest.raises(RuntimeError, match="torch: '.*' here, '0.0.1' in the run's keys"):
        run_trial(EXP, [0], "cpu", 1, expected)


def test_record_keys_equal_record_key_per_seed() -> None:
    from grokverify.claim.load import load_claim

    exp = next(iter(load_claim(TINY).members("quick").values())).popitem()[1]
    seeds = (0, 3, 7)
    assert store.record_keys(exp, seeds, "cpu") == tuple(store.record_key(exp, s, "cpu")
                                                         for s in seeds)
    assert len(set(store.record_keys(exp, seeds, "cpu"))) == 3
