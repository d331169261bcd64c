#!/usr/bin/env bash
# Run every claim of the library at its quick scale (a 2-core CPU is enough) and print the
# table of verdicts (runners/verdict_table.py), with the training time of each claim's records.
#
# Usage: runners/quick_library.sh [OUT] [extra `grokverify run` flags]
#   OUT    reports folder (default reports/reference/quick: the committed reference reports)
#   FRESH=1  train each claim from an empty store of its own (its wall time is then its own
#            cost); by default one run trains the whole library into one store,
#            GROKVERIFY_STORE or .grokverify/library-store, so arms that two claims have in
#            common are trained once, and writes the library's suite (index.html, index.md,
#            results.json) beside the claim folders
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-reports/reference/quick}"
shift || true
mkdir -p "$out"
status=0
if [[ "${FRESH:-0}" == "1" ]]; then
  for claim in claims/*.yaml; do
    echo "== $(basename "$claim" .yaml)"
    store="$(mktemp -d)"
    grokverify run "$claim" --scale quick --store "$store" --reports "$out" "$@" || status=$?
    rm -rf "$store"
  done
  # each run wrote a suite of its one claim: write the library's from every claim folder
  python3 - "$out" <<'PY'
import sys
from pathlib import Path

from grokverify.report.index import write_suite
from grokverify.report.suite import read_report

out = Path(sys.argv[1])
write_suite(out, [read_report(p) for p in sorted(out.glob("*/result.json"))])
PY
else
  store="${GROKVERIFY_STORE:-.grokverify/library-store}"
  grokverify run claims/ --scale quick --store "$store" --reports "$out" "$@" || status=$?
fi
python3 runners/verdict_table.py "$out"
exit "$status"
