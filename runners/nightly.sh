#!/usr/bin/env bash
# Nightly: re-run every claim, then list the claims whose verdict changed since the last run.
# Usage: runners/nightly.sh [--scale quick|paper] [--address HOST:PORT|auto] [extra run flags]
# Each night's folder holds the claims' reports and the suite (results.json, index.md,
# index.html); `grokverify diff` compares it with the previous night's and prints a line per
# claim: NEW, CHANGED (old -> new verdict), same, MOVED (an estimate outside last night's CI) and
# MISSING (a claim with no report tonight: removed, or skipped: see the run's SKIPPED lines).
# Exit: 3 when a verdict changed (diff's exit 1, mapped to this script's 3 as before), 2 when a
# suite cannot be read, 0 when no verdict changed; a run that fails stops the script with its
# own exit code (1 or 2) before any diff.
# Environment: GROKVERIFY_DATA (default ./nightly) holds the store and the dated reports;
# GROKVERIFY_DATA_DIR (or --data-dir) names the image datasets' files (MNIST claims are skipped,
# and listed as MISSING below, without them).
set -euo pipefail
cd "$(dirname "$0")/.."
data="${GROKVERIFY_DATA:-nightly}"
stamp="$(date -u +%Y-%m-%d)"
mkdir -p "$data/reports"
previous="$(ls -1d "$data"/reports/*/ 2>/dev/null | sort | tail -n 1 || true)"
cur="$data/reports/$stamp"
grokverify run claims/ --store "$data/store" --reports "$cur" "$@"
# The first night compares with an empty suite, so every claim is listed as NEW.
old="$previous"
if [ -z "$old" ]; then
  old="$(mktemp)"
  trap 'rm -f "$old"' EXIT
  echo '{"claims": []}' > "$old"
fi
status=0
grokverify diff "$old" "$cur" || status=$?
if [ "$status" = 1 ]; then
  exit 3  # a verdict changed (diff's exit 1): this script's exit 3, as before
fi
exit "$status"
