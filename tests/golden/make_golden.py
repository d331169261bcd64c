"""Regenerate tests/golden/records.json: run it in the commit that bumps
grokverify/engine/version.py's RESULTS_VERSION (docs/store.md).

    python tests/golden/make_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CASES, SEEDS, digest, experiment, pinned_environment, summary_of  # noqa: E402

from grokverify.engine.numerics import pin_environment  # noqa: E402

pin_environment()  # before torch computes anything
from grokverify.engine.loop import train_seeds  # noqa: E402
from grokverify.engine.version import RESULTS_VERSION  # noqa: E402


def main() -> int:
    env = pinned_environment()
    if env is None:
        print("golden records are made with the pinned numerics: unset GROKVERIFY_NUMERICS")
        return 2
    out = {**env, "seeds": SEEDS, "cases": {}}
    for name in CASES:
        results = train_seeds(experiment(name), SEEDS)
        out["cases"][name] = {str(r["seed"]): {"digest": digest(r), **summary_of(r)}
                              for r in results}
    (HERE / "records.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {HERE / 'records.json'} for results version {RESULTS_VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
