#!/usr/bin/env bash
# Regenerates tools/link-order/gaend.order: the functions gaend runs while it starts and idles
# (one nominal hour against a virtual controller, as scripts/measure-idle.sh runs it), which
# the Makefile's link puts together at the front of the code so that few pages of it stay
# resident. Run after changes that add or rename much of what the daemon runs at start; a stale
# list only costs resident pages (names no longer present are ignored by the linker).
#   scripts/gen-link-order.sh [SCALE]     (needs valgrind; default SCALE 30: two real minutes)
# SCRATCH=DIR: the build folder, as for the Makefile (default .build).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "gen-link-order: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
make --no-print-directory build >&2
WORK=$(mktemp -d -t gaend-order.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# valgrind cannot read lld's debug information; the symbol table is all it needs.
objcopy --strip-debug "${SCRATCH:-.build}/release/gaend" "$WORK/gaend"
GAEND_BIN="$WORK/gaend" GAEND_WRAP="valgrind --tool=callgrind --demangle=no --dump-instr=no --collect-jumps=no --callgrind-out-file=$WORK/callgrind.out" \
    ./scripts/measure-idle.sh "${1:-30}" >/dev/null
# Every function callgrind saw run (its "fn=" and "cfn=" lines), by name; sorted, so that a
# regenerated list differs only where the code did.
python3 - "$WORK/callgrind.out" > tools/link-order/gaend.order <<'PY'
import re, sys
names = set()
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
    if m and not m.group(1).startswith("0x"):
        names.add(m.group(1))
print("\n".join(sorted(names)))
PY
echo "gen-link-order: $(wc -l < tools/link-order/gaend.order) functions in tools/link-order/gaend.order" >&2
