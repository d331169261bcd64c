#!/usr/bin/env bash
# Nightly: re-run every claim of the library, then list the claims whose verdict changed since
# the previous night (docs/cluster.md, "Nightly", says how to schedule it).
# Usage: runners/nightly.sh [extra `grokverify run` flags]
# By default it runs claims/ at paper scale on the Ray cluster $RAY_ADDRESS names
# (`--scale paper --address auto`; a RayJob and `ray job submit` set RAY_ADDRESS for it; unset,
# `auto` is a cluster started with `ray start` on this host). Flags given here come after those
# and win: `--scale quick` for a smoke run, `--executor local` to train in this process without
# Ray, `--address HOST:PORT` for another cluster. No --gpus-per-task: run's default packs
# several seed chunks on one GPU (a fraction from each chunk's memory estimate).
# Tonight's folder, $GROKVERIFY_DATA/reports/YYYY-MM-DD, holds the claims' reports and the suite
# (results.json, index.md, index.html); `grokverify diff` compares it with the previous night's
# (the latest earlier dated folder holding a results.json: a rerun the same day compares with
# the night before, never with itself) and prints a line per claim: NEW, CHANGED (old -> new
# verdict, a family member's too), same, MOVED (an estimate outside last night's CI) and
# MISSING (a claim with no report tonight: removed, or skipped: see the run's SKIPPED lines).
# Exit: 3 when a verdict changed (diff's exit 1, mapped to this script's 3), 2 when a
# suite cannot be read or NIGHTLY_DATE is malformed, 0 when no verdict changed; a run that fails
# stops the script with its own exit code (1 or 2) before any diff.
# Environment:
#   GROKVERIFY_DATA      the store and the dated reports (default ./nightly; the image: /data)
#   CLAIMS               the claim file or folder to run (default claims/)
#   NIGHTLY_DATE         tonight's folder name, YYYY-MM-DD (default: today, UTC)
#   GROKVERIFY_DATA_DIR  (or --data-dir) the image datasets' files: MNIST claims are skipped,
#                        and listed as MISSING below, without them
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
data="${GROKVERIFY_DATA:-nightly}"
claims="${CLAIMS:-claims/}"
stamp="${NIGHTLY_DATE:-$(date -u +%Y-%m-%d)}"
if [[ ! "$stamp" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]]; then
  echo "nightly.sh: NIGHTLY_DATE must be YYYY-MM-DD (got '$stamp')" >&2
  exit 2
fi
mkdir -p "$data/reports"
previous=""
for dir in "$data"/reports/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]/; do
  night="$(basename "$dir")"
  if [[ "$night" < "$stamp" && -f "$dir/results.json" ]]; then
    previous="${dir%/}"  # the glob is sorted: the last one kept is the latest
  fi
done
cur="$data/reports/$stamp"
grokverify run "$claims" --scale paper --address auto --store "$data/store" --reports "$cur" "$@"
# The first night compares with an empty suite, so every claim is listed as NEW.
old="$previous"
if [ -z "$old" ]; then
  old="$(mktemp)"
  trap 'rm -f "$old"' EXIT
  echo '{"claims": []}' > "$old"
fi
echo "comparing $cur with ${previous:-an empty suite (first night)}"
status=0
grokverify diff "$old" "$cur" || status=$?
if [ "$status" = 1 ]; then
  exit 3  # a verdict changed (diff's exit 1): this script's exit 3
fi
exit "$status"
