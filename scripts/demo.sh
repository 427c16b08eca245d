#!/usr/bin/env bash
# The main job on a fresh machine with no Bluetooth hardware.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
swift build -c release --product gaenctl >&2
BIN=$(swift build -c release --show-bin-path)
echo "== RPIs and AEMs of the published test-vector key (first 3 intervals)"
"$BIN/gaenctl" derive --tek 75c734c6dd1a782de7a965da5eb93125 --interval 2642976 --count 3 --metadata 40080000
