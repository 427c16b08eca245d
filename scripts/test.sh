#!/usr/bin/env bash
# Runs every test: the virtual radio's own tests, Swift unit tests, then the end-to-end tests
# that drive the built programs against virtual controllers and independent Bumble peers.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
status=0
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
exit $status
