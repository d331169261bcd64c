"""The golden end-to-end claims: tiny claim files run through `grokverify run`, and what of each
report is pinned (tests/golden/claims.json; tests/test_golden_claims.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# golden_fit: every seed an event, a decided verdict; tiny: censored seeds, an estimate that is a
# bound and a CI of [0, inf]
CLAIMS = {"golden_fit": FIXTURES / "golden_fit.yaml", "tiny": FIXTURES / "tiny_claim.yaml"}
RESULT_FIELDS = ("estimate", "ci", "p_support", "p_refute", "p_value")


def run_claim(main: Any, claim: Path, workdir: Path) -> dict[str, Any]:
    """`grokverify run` on one claim into `workdir`; the report's result.json."""
    code = main(["run", str(claim), "--executor", "local", "--device", "cpu",
                 "--store", str(workdir / "store"), "--reports", str(workdir / "reports")])
    assert code == 0, f"grokverify run {claim.name} exited {code}"
    cid = claim.stem if claim.stem != "tiny_claim" else "tiny"
    return json.loads((workdir / "reports" / cid / "result.json").read_text())


def pinned_of(result: dict[str, Any]) -> dict[str, Any]:
    """The pinned part of a report: verdict, estimate, CI, p-values, the estimate's bound (if
    any) and every seed's metric value and censoring flag."""
    res = result["result"]
    fields = {k: res.get(k) for k in RESULT_FIELDS}
    details = res.get("details") or {}
    if "ci_computed" in details:  # set aside by the interval rule: pin what was computed
        fields["ci"] = details["ci_computed"]
        fields["p_support"], fields["p_refute"] = details["p_computed"]
    return {"verdict": result["verdict"],
            **fields,
            "estimate_bound": (res.get("details") or {}).get("estimate_bound"),
            "per_seed": [[s["arm"], s["seed"], s["metric"], s["metric_observed"]]
                         for s in result["per_seed"]]}
