#!/usr/bin/env bash
# Checks that the release gaend (`make build`) links none of full Foundation, Foundation's
# internationalization, its ICU or CoreFoundation: the daemon is on FoundationEssentials only
# (those libraries were ~1.5 MiB of the idle daemon's resident pages;
# scripts/measure-idle.sh measures it). The binary is the board's gaenctl too (called as
# `gaenctl`: BoardCommands), so this checks the board's commands as well (full Foundation with
# its ICU data is ~40 MB of a static binary). Run by scripts/test.sh after `make build`.
#
# How: each forbidden static library's own symbols (strong definitions: none of them is defined
# by FoundationEssentials, the standard library or dispatch) must not be defined in gaend. On a
# failure the objects linked into gaend (gaend.product/Objects.LinkFileList) that reference
# those symbols are named: that is what pulled the library in.
#   scripts/check-gaend-foundation.sh [BIN_DIR]     (default .build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir=${1:-.build/release}
gaend="$bin_dir/gaend"
objects="$bin_dir/gaend.product/Objects.LinkFileList"
[ -x "$gaend" ] || { echo "check-gaend-foundation: no $gaend (run make build first)" >&2; exit 2; }
resources=$(swift -print-target-info | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["runtimeResourcePath"])')
static_dir="${resources%/swift}/swift_static/linux"
[ -d "$static_dir" ] || { echo "check-gaend-foundation: no static Swift libraries at $static_dir" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nm --defined-only "$gaend" 2>/dev/null | awk '{print $NF}' | sort -u >"$work/gaend"
# A stripped binary would pass vacuously: it must show its Swift symbols.
if [ "$(grep -c '^\$s' "$work/gaend" || true)" -lt 1000 ]; then
    echo "check-gaend-foundation: $gaend has no symbol table (stripped?): cannot check" >&2
    exit 2
fi
# gaend must be on FoundationEssentials (else the check looks at the wrong binary).
grep -q '^\$s20FoundationEssentials' "$work/gaend" || { echo "check-gaend-foundation: $gaend has no FoundationEssentials symbols: not the daemon?" >&2; exit 2; }

status=0
for lib in Foundation FoundationInternationalization _FoundationICU CoreFoundation; do
    archive="$static_dir/lib$lib.a"
    [ -f "$archive" ] || { echo "check-gaend-foundation: no $archive" >&2; exit 2; }
    nm -g --defined-only "$archive" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TDBR]$/ {print $3}' | sort -u >"$work/$lib"
    comm -12 "$work/$lib" "$work/gaend" >"$work/$lib.linked"
    count=$(wc -l <"$work/$lib.linked")
    [ "$count" -eq 0 ] && { echo "gaend links no $lib"; continue; }
    status=1
    echo "FAIL: gaend links $lib: $count of its symbols are in $gaend, e.g.:" >&2
    head -3 "$work/$lib.linked" | swift demangle --simplified | sed 's/^/    /' >&2
    echo "  what references $lib (objects linked into gaend):" >&2
    found=0
    if [ -f "$objects" ]; then
        while IFS= read -r object; do
            object=${object#\'}; object=${object%\'}
            [ -f "$object" ] || continue
            nm -u "$object" 2>/dev/null | awk '{print $NF}' | sort -u | comm -12 - "$work/$lib" >"$work/refs"
            if [ -s "$work/refs" ]; then
                found=1
                echo "    $object ($(wc -l <"$work/refs") symbols), e.g. $(head -1 "$work/refs" | swift demangle --simplified)" >&2
            fi
        done <"$objects"
    fi
    [ "$found" -eq 1 ] || echo "    no object of gaend references it directly: another forbidden library (above) or an autolinked one pulled it in; relink with -Xlinker --why-extract=FILE to see which" >&2
done
[ "$status" -eq 0 ] && echo "gaend links none of Foundation, FoundationInternationalization, _FoundationICU, CoreFoundation"
exit $status
