#!/usr/bin/env bash
# Runs every test: Swift unit and end-to-end tests, then the virtual radio's own tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
if [ -d tools/virtual-radio/tests ]; then
    python3 -m pytest -q tools/virtual-radio/tests
fi
swift build --build-tests
swift test --skip-build
