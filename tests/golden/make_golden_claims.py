"""Regenerate tests/golden/claims.json (the golden end-to-end claims) with the pinned numerics:
run it in the commit that bumps RESULTS_VERSION or changes a criterion's numbers on purpose, and
say why in that commit. Check the new values as the file's "checked" entry says.

    python tests/golden/make_golden_claims.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import pinned_environment  # noqa: E402
from claim_cases import CLAIMS, pinned_of, run_claim  # noqa: E402

from grokverify.cli import main  # noqa: E402

CHECKED = (
    "Per-seed threshold steps: each seed of golden_fit retrained with tests/reference.py's plain "
    "per-seed trainer (its own evaluation and >= threshold rule), which gave the same steps "
    "(tests/test_golden_claims.py repeats this). Estimates and CIs: recomputed from the pinned "
    "per-seed values by the hand Kaplan-Meier median and hand joint bootstrap in "
    "tests/test_golden_claims.py (golden_fit), and for tiny the KM medians read off by hand: "
    "c1 has one event (250) and two seeds censored at the budget 300, so S stays at 2/3 and its "
    "median is unreached: the ratio is a bound, c10's median (events at 140, 190 and 210: 190) "
    "over 300.")


def main_() -> int:
    env = pinned_environment()
    if env is None:
        print("golden claims are made with the pinned numerics: unset GROKVERIFY_NUMERICS")
        return 2
    out = {**env, "checked": CHECKED, "claims": {}}
    for name, path in CLAIMS.items():
        with tempfile.TemporaryDirectory() as tmp:
            out["claims"][name] = pinned_of(run_claim(main, path, Path(tmp)))
    (HERE / "claims.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {HERE / 'claims.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
