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
        assert line.endswith(" core-h |")


def test_the_verdict_table_refuses_an_empty_folder(tmp_path: Path) -> None:
    assert verdict_table.main(str(tmp_path)) == 1


@pytest.mark.parametrize("script", sorted((REPO / "runners").glob("*.sh")))
def test_runner_scripts_parse(script: Path) -> None:
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
