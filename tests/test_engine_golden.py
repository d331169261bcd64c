"""Golden records: the golden experiments (tests/golden/cases.py) must train each seed's record
to the last bit as stored for the current results version, which keys the store instead of a
hash of the source (docs/store.md); a change that moves results bumps the version and runs
tests/golden/make_golden.py in the same commit. They hold under the pinned numerics on any
x86-64 CPU with AVX2 (docs/determinism.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))

from cases import CASES, SEEDS, digest, experiment, summary_of  # noqa: E402

from grokverify.engine import numerics  # noqa: E402
from grokverify.engine.loop import train_seeds  # noqa: E402
from grokverify.engine.version import RESULTS_VERSION  # noqa: E402
from grokverify.store import torch_version  # noqa: E402

GOLDEN = json.loads((Path(__file__).parent / "golden" / "records.json").read_text())


def test_the_golden_records_are_for_this_results_version_and_torch() -> None:
    assert GOLDEN["results_version"] == RESULTS_VERSION, (
        f"RESULTS_VERSION is {RESULTS_VERSION} but tests/golden/records.json holds "
        f"{GOLDEN['results_version']}: regenerate it (python tests/golden/make_golden.py)")
    if GOLDEN["torch"] != torch_version():
        pytest.skip(f"golden records are for torch {GOLDEN['torch']}, this is "
                    f"{torch_version()}: regenerate them with a results-version bump")
    assert set(GOLDEN["cases"]) == set(CASES) and GOLDEN["seeds"] == SEEDS


@pytest.mark.parametrize("name", sorted(CASES))
def test_training_reproduces_the_golden_records(name: str) -> None:
    if numerics.native():
        pytest.skip("GROKVERIFY_NUMERICS=native: golden records hold for the pinned numerics")
    if GOLDEN["torch"] != torch_version() or GOLDEN["results_version"] != RESULTS_VERSION:
        pytest.skip("golden records are for another torch or results version (test above)")
    for result in train_seeds(experiment(name), SEEDS):
        want = GOLDEN["cases"][name][str(result["seed"])]
        got = {"digest": digest(result), **summary_of(result)}
        assert got == want, (
            f"{name} seed {result['seed']}: training's results changed without a bump of "
            f"RESULTS_VERSION (grokverify/engine/version.py); if the change is meant, bump it "
            f"and run python tests/golden/make_golden.py")
