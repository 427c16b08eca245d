#!/usr/bin/env bash
# Runs the benchmarks (release build) and prints their figures. Not part of CI.
#   scripts/bench.sh                 every benchmark
#   scripts/bench.sh match ingest    only these (names: GaenBench and GaenStoreBench without
#                                    arguments list theirs)
# GaenBench holds the ones that need neither the store nor D-Bus (match, match-files, keyfile,
# keyfile-read, simulate); GaenStoreBench the ones that run the store (ingest, ingest-h4,
# schedule-idle).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
tools=(GaenBench GaenStoreBench)
for tool in "${tools[@]}"; do swift build -c release --product "$tool" >&2; done
bin="$(swift build -c release --show-bin-path)"
declare -A owner
for tool in "${tools[@]}"; do
    for name in $("$bin/$tool" | sed -n "s/^usage: $tool <\(.*\)>.*/\1/p" | tr '|' ' '); do
        owner[$name]=$tool
    done
done
if [ $# -eq 0 ]; then
    set -- $(for tool in "${tools[@]}"; do "$bin/$tool" | sed -n "s/^usage: $tool <\(.*\)>.*/\1/p" | tr '|' ' '; done)
fi
for name in "$@"; do
    tool=${owner[$name]:-}
    if [ -z "$tool" ]; then
        echo "bench.sh: no benchmark '$name' (known: ${!owner[*]})" >&2
        exit 2
    fi
    echo "== $tool $name"
    "$bin/$tool" "$name"
done
