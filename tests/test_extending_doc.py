"""docs/extending.md is real code: every Python block of it runs, in order, in a fresh process,
then a claim using the five additions it shows (a model, a probe, an intervention, a metric and
a criterion) runs end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "extending.md"
HARNESS = """
import json, sys, tempfile
from pathlib import Path
import grokverify.stats  # the registries as shipped, checked for agreement at import
blocks, claim_yaml = json.loads(sys.stdin.read())
namespace = {"__name__": "extending_doc"}
for block in blocks:
    exec(compile(block, "docs/extending.md", "exec"), namespace)
namespace["test_param_norm_equals_numpy"]()
from rich.console import Console
from grokverify.outcome import RunOptions
from grokverify.pipeline import run_claims
from grokverify.spec import load_claim
from grokverify.store import Store
tmp = Path(tempfile.mkdtemp())
(tmp / "claim.yaml").write_text(claim_yaml)
opts = RunOptions(store=tmp / "store", reports=tmp / "reports", executor="local", device="cpu")
(run,) = run_claims([load_claim(tmp / "claim.yaml")], opts, Console(quiet=True))
results = [Store(tmp / "store").get(k)["result"] for p in run.plans for k in p.keys]
print(json.dumps({"verdict": run.verdict.value, "criterion": run.result.criterion,
                  "curves": sorted(results[0]["curves"]), "events": results[0]["events"],
                  "estimate": run.result.estimate,
                  "report": (run.report_dir / "report.md").is_file()}))
"""


def test_every_example_of_the_extending_guide_runs_and_a_claim_uses_them_all() -> None:
    text = DOC.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    (claim,) = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 11, len(blocks)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(HARNESS)],
                         input=json.dumps([blocks, claim]), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["criterion"] == "mean_below" and got["report"]
    # the claim's bound is 100 and the metric's per-seed values are far below 1 (the assert on
    # the estimate below), so the t interval lies wholly under the bound
    assert got["verdict"] == "SUPPORTED"
    assert "param_norm.E" in got["curves"] and "param_norm.W" in got["curves"]
    assert got["events"] == {"scale_lr": 20}
    assert abs(got["estimate"]) < 1  # an embedding norm of ~10 changes slowly
