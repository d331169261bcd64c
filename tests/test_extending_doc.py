"""docs/extending.md is followed as a newcomer would: each block appended to the file it names,
in order, in a copy of the package; then, in a fresh process, its tests and its claim run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "extending.md"
BLOCK = re.compile(r"```python\n# (append to|new file) (\S+)\n(.*?)```", re.S)


def test_the_extending_guide_followed_in_order_adds_seven_kinds_that_a_claim_runs(
        tmp_path: Path) -> None:
    text = DOC.read_text().split("\n## Plugins")[0]  # the plugins' route: tests/test_plugins.py
    blocks = BLOCK.findall(text)
    assert len(blocks) == 21 == text.count("```python")  # seven kinds: spec, function, test
    shutil.copytree(REPO / "grokverify", tmp_path / "grokverify",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests").mkdir()
    for helper in ("conftest.py", "reference.py"):
        shutil.copy(REPO / "tests" / helper, tmp_path / "tests" / helper)
    for how, path, code in blocks:
        target = tmp_path / path
        assert (how == "new file") != target.exists(), f"{how} {path}"
        with target.open("a") as out:
            out.write("\n\n" + code)
    (claim,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    (tmp_path / "claim.yaml").write_text(claim)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)

    tests = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                "tests/test_extending_example.py")
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert "7 passed" in tests.stdout
    claim_run = run("-m", "grokverify.cli", "run", "claim.yaml", "--executor", "local",
                    "--store", "store", "--reports", "reports")
    assert claim_run.returncode == 0, claim_run.stdout[-2000:] + claim_run.stderr[-2000:]
    result = json.loads((tmp_path / "reports" / "extending_example" / "result.json").read_text())
    assert result["verdict"] == "SUPPORTED" and result["result"]["criterion"] == "mean_below"
    assert result["arms"]["late_lr"]["experiment"]["probes"][0]["name"] == "param_norm"
    assert "probes" in result["figures"]  # the new probe's curves were recorded and drawn
    assert result["checks"][0]["check"] == "curve_moves" and result["checks"][0]["passes"]
