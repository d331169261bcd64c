"""Pinned numerics (`grokverify.engine.numerics`): every training process uses ATen's AVX2 and
MKL's COMPATIBLE kernels whatever its environment asks for, refuses to train when that cannot be
arranged, and can be turned off explicitly (its records then keyed apart). Each check trains the
golden case toy-class-step in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grokverify.engine import numerics

REPO = Path(__file__).resolve().parent.parent
TRAIN_ONE = """
import json, sys
sys.path.insert(0, {golden!r})
{before}
import grokverify
from cases import digest, experiment
from grokverify.engine import numerics
from grokverify.engine.loop import train_seeds
from grokverify.store import record_key
exp = experiment("toy-class-step")
result = train_seeds(exp, [1])[0]
print(json.dumps({{"digest": digest(result), "numerics": numerics.describe(),
                  "key": record_key(exp, 1, "cpu")}}))
"""


def _run(env: dict[str, str], before: str = "") -> subprocess.CompletedProcess[str]:
    code = TRAIN_ONE.format(golden=str(REPO / "tests" / "golden"), before=before)
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "GROKVERIFY_NUMERICS")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**full_env, **env}, timeout=120, cwd=REPO)


@pytest.fixture(scope="module")
def told_nothing() -> subprocess.CompletedProcess[str]:
    """A training process whose environment names no kernels (shared by the tests below)."""
    return _run({})


def test_this_process_trains_on_the_pinned_kernels() -> None:
    numerics.pin()
    assert numerics.describe() == {"mode": "pinned", "aten": "AVX2", "mkl_branch": "COMPATIBLE"}
    assert numerics.tag("cpu") == numerics.PINNED and numerics.tag("cuda") == "cuda"


def test_other_kernel_settings_in_the_environment_change_nothing(
        told_nothing: subprocess.CompletedProcess[str]) -> None:
    """A process told to use other kernels (AVX-512 ATen kernels, MKL's AVX2 branch) trains
    the same record, under the same key, as one told nothing."""
    plain = told_nothing
    hostile = _run({"ATEN_CPU_CAPABILITY": "avx512", "MKL_CBWR": "AVX2"})
    assert plain.returncode == 0 and hostile.returncode == 0, plain.stderr + hostile.stderr
    a, b = json.loads(plain.stdout), json.loads(hostile.stdout)
    assert a == b
    assert a["numerics"] == {"mode": "pinned", "aten": "AVX2", "mkl_branch": "COMPATIBLE"}


def test_a_process_that_computed_before_importing_grokverify_refuses_to_train() -> None:
    out = _run({}, before="import torch\ntorch.ones(40).exp().sum()\n"
                          "torch.ones(4, 9, 9).bmm(torch.ones(4, 9, 9))")
    assert out.returncode != 0
    assert "NumericsError" in out.stderr and "pin_environment() before any torch" in out.stderr


def test_native_numerics_are_keyed_apart_from_pinned_ones(
        told_nothing: subprocess.CompletedProcess[str]) -> None:
    assert told_nothing.returncode == 0, told_nothing.stderr
    pinned = json.loads(told_nothing.stdout)
    native = _run({"GROKVERIFY_NUMERICS": "native"})
    assert native.returncode == 0, native.stderr
    got = json.loads(native.stdout)
    assert got["numerics"]["mode"] == "native" and got["key"] != pinned["key"]


@pytest.mark.parametrize("value", ["native", "Native "])
def test_native_mode_is_read_leniently(value: str, monkeypatch) -> None:
    monkeypatch.setenv("GROKVERIFY_NUMERICS", value)
    assert numerics.native()
