#!/usr/bin/env bash
# Nightly: re-run every claim, then list the claims whose verdict changed since the last run.
# Usage: runners/nightly.sh [--scale quick|paper] [--address HOST:PORT|auto] [extra run flags]
# Environment: GROKVERIFY_DATA (default ./nightly) holds the store and the dated reports.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${GROKVERIFY_DATA:-nightly}"
stamp="$(date -u +%Y-%m-%d)"
mkdir -p "$data/reports"
previous="$(ls -1d "$data"/reports/*/ 2>/dev/null | sort | tail -n 1 || true)"
grokverify run claims/*.yaml --store "$data/store" --reports "$data/reports/$stamp" "$@"
python3 - "$previous" "$data/reports/$stamp" <<'PY'
import json, sys
from pathlib import Path
prev, cur = (Path(p) if p else None for p in sys.argv[1:3])
changed = 0
for result in sorted(cur.glob("*/result.json")):
    now = json.loads(result.read_text())
    old_path = prev / result.parent.name / "result.json" if prev else None
    if old_path is None or not old_path.is_file():
        print(f"NEW      {now['claim']['id']}: {now['verdict']}")
        continue
    old = json.loads(old_path.read_text())
    if old["verdict"] != now["verdict"]:
        changed += 1
        print(f"CHANGED  {now['claim']['id']}: {old['verdict']} -> {now['verdict']}")
    else:
        print(f"same     {now['claim']['id']}: {now['verdict']}")
sys.exit(3 if changed else 0)
PY
