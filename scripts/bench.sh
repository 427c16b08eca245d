#!/usr/bin/env bash
# Runs the benchmarks (release build) and prints their figures. Not part of CI.
#   scripts/bench.sh                 every benchmark
#   scripts/bench.sh match ingest    only these (names: GaenBench without arguments lists them)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
swift build -c release --product GaenBench >&2
bench="$(swift build -c release --show-bin-path)/GaenBench"
if [ $# -eq 0 ]; then
    set -- $("$bench" | sed -n 's/^usage: GaenBench <\(.*\)>.*/\1/p' | tr '|' ' ')
fi
for name in "$@"; do
    echo "== GaenBench $name"
    "$bench" "$name"
done
