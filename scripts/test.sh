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
GAEND_BIN_DIR="$(swift build --show-bin-path)" python3 -m pytest -q tests/e2e || status=1
exit $status
