#!/usr/bin/env bash
# Builds a libFuzzer target of this package and runs it.
# usage: tools/fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
# The target defines LLVMFuzzerTestOneInput (@_cdecl); with -DFUZZING its @main hands over
# to libFuzzer's LLVMFuzzerRunDriver (SwiftPM gives every executable its own entry point, so
# libFuzzer's main() cannot be used), otherwise it is a plain program replaying files.
# Seeds: tools/fuzz/corpus/TARGET (committed). New inputs and crashes go to fuzz-out/TARGET
# (ignored by git); a crash file can be replayed with `swift run TARGET FILE`.
set -euo pipefail
cd "$(dirname "$0")/../.."
target=${1:?usage: tools/fuzz/run.sh TARGET SECONDS}
seconds=${2:?usage: tools/fuzz/run.sh TARGET SECONDS}
shift 2

swift build -c release --product "$target" --scratch-path .build-fuzz \
    -Xswiftc -DFUZZING \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -g
binary=".build-fuzz/release/$target"

out="fuzz-out/$target"
mkdir -p "$out/corpus" "$out/crashes"
seeds="tools/fuzz/corpus/$target"
[ -d "$seeds" ] || mkdir -p "$seeds"

# -max_len: an H4 event is at most 2 + 255 bytes; a little more lets the framer see a
# second packet behind the first.
"$binary" "$out/corpus" "$seeds" \
    -max_total_time="$seconds" -max_len=600 -print_final_stats=1 \
    -artifact_prefix="$out/crashes/" "$@"
