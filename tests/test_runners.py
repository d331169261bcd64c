"""The runner scripts: the library table reads every committed reference report, and the shell
scripts parse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "reports" / "reference" / "quick"
sys.path.insert(0, str(REPO / "runners"))

import verdict_table  # noqa: E402

from grokverify.spec import load_claim  # noqa: E402


def test_the_verdict_table_has_one_row_per_reference_report(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert verdict_table.main(str(REFERENCE)) == 0
    lines = capsys.readouterr().out.splitlines()
    results = sorted(REFERENCE.glob("*/result.json"))
    assert lines[0].startswith("| claim | role | verdict |") and len(lines) == 2 + len(results)
    for line, path in zip(lines[2:], results, strict=True):
        result = json.loads(path.read_text())
        assert line.startswith(f"| {result['claim']['id']} | {result['claim']['source']['role']}"
                               f" | **{result['verdict']}** |")
        assert line.endswith(" H200-h |")


def test_gpu_step_time_follows_the_measured_points() -> None:
    # benchmarks/README.md: 8 seeds 4,151 model-steps/s, 32 seeds 12,966, 512 seeds 44,719
    assert verdict_table.gpu_step_seconds(1) == pytest.approx(8 / 4151)
    assert verdict_table.gpu_step_seconds(8) == pytest.approx(8 / 4151)
    assert verdict_table.gpu_step_seconds(20) == pytest.approx((8 / 4151 + 32 / 12966) / 2)
    assert verdict_table.gpu_step_seconds(1024) == pytest.approx(2 * 512 / 44719)


def test_gpu_hours_sum_every_arm_to_its_budget() -> None:
    # skeptic_sgd's paper scale: 4 learning rates x 2 arms, 20 seeds, 50,000 steps each
    loaded = load_claim(REPO / "claims" / "skeptic_sgd.yaml")
    step = (8 / 4151 + 32 / 12966) / 2
    assert verdict_table.gpu_hours(loaded, "paper") == pytest.approx(8 * 50_000 * step / 3600)


def test_the_verdict_table_refuses_an_empty_folder(tmp_path: Path) -> None:
    assert verdict_table.main(str(tmp_path)) == 1


@pytest.mark.parametrize("script", sorted((REPO / "runners").glob("*.sh")))
def test_runner_scripts_parse(script: Path) -> None:
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
