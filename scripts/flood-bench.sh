#!/usr/bin/env bash
# Report-flood benchmark (not a test): zero-loss ingestion rate and RSS under a report flood
# on a full disk (root). Builds release binaries; arguments go to tools/bench/flood_bench.py.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
swift build -c release --product gaend
swift build -c release --product gaenctl
GAEND_BIN_DIR="$(swift build -c release --show-bin-path)" exec python3 tools/bench/flood_bench.py "$@"
