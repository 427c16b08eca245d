#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time.
#   tools/fuzz/run.sh TARGET SECONDS [libFuzzer options...]
# TARGET is an executable target whose entry point is LLVMFuzzerTestOneInput when built with
# -DFUZZING (Sources/FuzzSupport: the shared entry point). Seeds are read from tools/fuzz/corpus/TARGET;
# new corpus entries, crash artifacts and the log go to fuzz-out/TARGET/ (git-ignored).
# The fuzzer build uses its own scratch folder (.build-fuzz) so it never disturbs normal builds.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 2 ]; then echo "usage: $0 TARGET SECONDS [libFuzzer options...]" >&2; exit 2; fi
target=$1; seconds=$2; shift 2
out=fuzz-out/$target
seeds=tools/fuzz/corpus/$target
mkdir -p "$out/corpus" "$out/artifacts"
build=(swift build -c release --scratch-path .build-fuzz --product "$target"
       --sanitize=fuzzer --sanitize=address -Xswiftc -DFUZZING
       # The driver links libFuzzer for -sanitize=fuzzer but (Swift 6.3, Linux) does not pass
       # coverage instrumentation on to the frontend; without this libFuzzer runs blind. libFuzzer
       # needs inline 8-bit counters and the PC table (the default, trace-pc-guard, is refused).
       -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp)
"${build[@]}" >&2
bin="$("${build[@]}" --show-bin-path)/$target"
corpora=("$out/corpus")
[ -d "$seeds" ] && corpora+=("$seeds")
echo "fuzzing $target for $seconds s; log: $out/log" >&2
set +e
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/" "$@" "${corpora[@]}" >"$out/log" 2>&1
status=$?
set -e
# Summary: executions, coverage, corpus, findings.
grep -E "^#[0-9]+.*DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb" "$out/log" || tail -5 "$out/log"
echo "artifacts (crashes, leaks, timeouts): $(find "$out/artifacts" -type f | wc -l)"
exit $status
