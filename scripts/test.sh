#!/usr/bin/env bash
# Runs every test: the virtual radio's own tests, Swift unit tests, then the end-to-end tests
# that drive the built programs against virtual controllers and independent Bumble peers, and
# the board's release build in Debian's kernel under qemu.
#
# Everything a run writes outside .build stays in its own folder (GAEND_TEST_RUN_DIR, default a
# new one under $TMPDIR), so two runs on one machine never share a file. The release build and
# the test bed run beside the unit and end-to-end tests, which spend most of their time waiting
# on the virtual radio's scaled clock: on 2 cores that halves the wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
run_dir=${GAEND_TEST_RUN_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/gaend-test.XXXXXX")}
mkdir -p "$run_dir"
export GAEND_TEST_RUN_DIR=$run_dir
echo "test run folder: $run_dir"
status=0
declare -A seconds
phase() { # phase NAME COMMAND...: runs it, records its time, a failure fails the run
    local name=$1 start=$SECONDS
    shift
    "$@" || { echo "FAILED: $name" >&2; status=1; }
    seconds[$name]=$((SECONDS - start))
}
# -rs: every skipped test says why.
pytest=(python3 -m pytest -q -rs -p no:cacheprovider)

# The board: the release build (static Swift runtime) as `make` builds it, the daemon's
# Foundation-free link, its install layout and toolchain-free binaries, then Debian's kernel
# under qemu (tests/testbed): the kernel, system and package scenarios.
board() {
    local start=$SECONDS
    # Its own build folder: SwiftPM locks a build folder, and the debug one is in use meanwhile.
    export SCRATCH=.build-release GAEND_RELEASE_DIR=$PWD/.build-release/release
    if ! make build >"$run_dir/release-build.log" 2>&1; then
        echo "release build failed (see $run_dir/release-build.log)" >&2
        return 1
    fi
    echo "release build: $((SECONDS - start)) s"
    local s=0
    ./scripts/check-gaend-foundation.sh "$GAEND_RELEASE_DIR" || s=1
    "${pytest[@]}" tests/install || s=1
    GAEND_TESTBED_TIMINGS="$run_dir/testbed-timings.json" GAEND_TESTBED_REPORT="$run_dir" \
        GAEND_BIN_DIR="$bin" "${pytest[@]}" tests/testbed || s=1
    [ -f "$run_dir/testbed-timings.json" ] && echo "test bed scenario seconds: $(cat "$run_dir/testbed-timings.json")"
    return $s
}

# CGaenCrypto's arm64 paths (AES, lockstep HKDF, dispatch) under qemu-aarch64 with and without
# the crypto extensions, and the native ones, against published vectors and OpenSSL EVP.
# C only, independent of the Swift build; about 20 s.
phase arm64-crypto ./scripts/test-arm64-crypto.sh
phase virtual-radio "${pytest[@]}" tools/virtual-radio/tests
phase debug-build swift build --build-tests
bin="$(swift build --show-bin-path)"

# The board's chain runs beside the unit and end-to-end tests.
board >"$run_dir/board.log" 2>&1 &
board_pid=$!

phase unit swift test --skip-build
# Every fuzz target replays its committed corpus (seeds and past findings) as a regression test.
fuzz_replays() {
    local s=0
    for corpus in tools/fuzz/corpus/*/; do
        target=$(basename "$corpus")
        "$bin/$target" "$corpus" || { echo "fuzz corpus replay failed: $target" >&2; s=1; }
    done
    return $s
}
phase fuzz-replays fuzz_replays
phase e2e env GAEND_BIN_DIR="$bin" "${pytest[@]}" tests/e2e
# The committed man pages and completions are what the binaries' help gives.
phase gen-docs ./scripts/gen-docs.sh --check "$bin"

start=$SECONDS
wait $board_pid || { echo "FAILED: board (release build, install, test bed)" >&2; status=1; }
seconds[board-wait]=$((SECONDS - start))
cat "$run_dir/board.log"

echo "phase seconds:"
for name in arm64-crypto virtual-radio debug-build unit fuzz-replays e2e gen-docs board-wait; do
    printf '  %-14s %s\n' "$name" "${seconds[$name]:-}"
done
echo "total: $SECONDS s"
exit $status
