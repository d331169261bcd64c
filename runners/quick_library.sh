#!/usr/bin/env bash
# Run every claim of the library at its quick scale (a 2-core CPU is enough) and print the
# table of verdicts (runners/verdict_table.py), with each claim's wall time.
#
# Usage: runners/quick_library.sh [OUT] [extra `grokverify run` flags]
#   OUT    reports folder (default reports/reference/quick: the committed reference reports)
#   FRESH=1  train each claim from an empty store of its own (its wall time is then its own
#            cost; by default one store, GROKVERIFY_STORE or .grokverify/library-store, is
#            shared, so arms that two claims have in common are trained once and the second
#            claim's time is shorter)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-reports/reference/quick}"
shift || true
mkdir -p "$out"
shared="${GROKVERIFY_STORE:-.grokverify/library-store}"
status=0
for claim in claims/*.yaml; do
  name="$(basename "$claim" .yaml)"
  store="$shared"
  if [[ "${FRESH:-0}" == "1" ]]; then
    store="$(mktemp -d)"
  fi
  echo "== $name"
  grokverify run "$claim" --scale quick --store "$store" --reports "$out" "$@" || status=$?
  if [[ "${FRESH:-0}" == "1" ]]; then
    rm -rf "$store"
  fi
done
python3 runners/verdict_table.py "$out"
exit "$status"
