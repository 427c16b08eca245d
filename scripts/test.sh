#!/usr/bin/env bash
# Runs every test: the virtual radio's own tests, Swift unit tests, then the end-to-end tests
# that drive the built programs against virtual controllers and independent Bumble peers.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
status=0
# CGaenCrypto's arm64 paths (AES, lockstep HKDF, dispatch) under qemu-aarch64 with and without
# the crypto extensions, and the native ones, against published vectors and OpenSSL EVP
# (issue 12). C only, independent of the Swift build; about 20 s.
./scripts/test-arm64-crypto.sh || status=1
python3 -m pytest -q tools/virtual-radio/tests || status=1
swift build --build-tests
swift test --skip-build || status=1
# Every fuzz target replays its committed corpus (seeds and past findings) as a regression test.
bin="$(swift build --show-bin-path)"
for corpus in tools/fuzz/corpus/*/; do
    target=$(basename "$corpus")
    "$bin/$target" "$corpus" || { echo "fuzz corpus replay failed: $target" >&2; status=1; }
done
GAEND_BIN_DIR="$bin" python3 -m pytest -q tests/e2e || status=1
# The committed man pages and completions are what the binaries' help gives (issue 10).
./scripts/gen-docs.sh --check "$bin" || status=1
# The board: the release build (static Swift runtime) as `make` builds it, its install layout
# and toolchain-free binaries, then Debian's kernel under qemu (tests/testbed): the kernel,
# system and package scenarios. Their run times are printed at the end.
if make build >/tmp/gaend-release-build.log 2>&1; then
    # The daemon links FoundationEssentials only: no Foundation, ICU or CoreFoundation (issue 12).
    ./scripts/check-gaend-foundation.sh || status=1
    python3 -m pytest -q tests/install || status=1
    # This run's own folder (guest logs, captures, timings); Debian's kernel is cached per machine.
    testbed_out="$PWD/.build/testbed/run-$(date -u +%Y%m%dT%H%M%S)-$$"
    GAEND_TESTBED_OUT="$testbed_out" GAEND_BIN_DIR="$bin" python3 -m pytest -q tests/testbed || status=1
    [ -f "$testbed_out/timings.json" ] && echo "test bed scenario seconds: $(cat "$testbed_out/timings.json") (logs: $testbed_out)"
else
    echo "release build failed (see /tmp/gaend-release-build.log)" >&2
    status=1
fi
exit $status
