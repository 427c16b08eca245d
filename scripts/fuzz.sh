#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 600 s each) and prints each summary.
# Not part of CI (CI replays the committed corpora instead).
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=($(ls -d tools/fuzz/corpus/*/ | xargs -n1 basename))
fi
status=0
for t in "${targets[@]}"; do
    echo "== $t ($seconds s)"
    tools/fuzz/run.sh "$t" "$seconds" || status=1
done
exit $status
