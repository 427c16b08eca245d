#!/usr/bin/env bash
# Regenerates the committed man pages and shell completions from the binaries' own help, so they
# cannot drift from the command-line contract:
#   docs/man/gaend.8, docs/man/gaenctl.1   swift-argument-parser's generate-manual (gaenctl.1: the
#   docs/man/gaenctl-research.1            board's gaenctl, gaend's binary called gaenctl;
#                                          gaenctl-research.1: the full gaenctl's every command)
#   docs/man/gaend.conf.5                  docs/man/gaend.conf.5.in + config/gaend.conf.example
#   docs/completions/*                     --generate-completion-script bash|zsh|fish (gaenctl's:
#                                          the board's; gaenctl-research's: the full one's)
# Usage: scripts/gen-docs.sh [BIN_DIR]           regenerate (default .build/release; run `make` first)
#        scripts/gen-docs.sh --check [BIN_DIR]   fail if the committed ones differ from what the
#                                                binaries give (scripts/test.sh runs this; the
#                                                pages' dates are not compared)
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
bin=${1:-.build/release}
date=${GEN_DOCS_DATE:-$(git log -1 --format=%cs 2>/dev/null || date -u +%F)}
out=docs
# The board's gaenctl is gaend's binary called by that name (its argv[0] picks the commands).
board=$(mktemp -d)
trap 'rm -rf "$board"' EXIT
if [ $check = 1 ]; then
    out=$(mktemp -d)
    trap 'rm -rf "$board" "$out"' EXIT
fi
mkdir -p "$out/man" "$out/completions"
ln -s "$(realpath "$bin/gaend")" "$board/gaenctl"
swift build --product generate-manual >/dev/null
gen="$(swift build --show-bin-path)/generate-manual"
"$gen" "$bin/gaend" --section 8 --date "$date" --authors "the gaend authors" -o "$out/man"
# gaend has no subcommands, but argument-parser gives every root command a `help` subcommand,
# and generate-manual then writes `subcommand` into the synopsis and a `help` entry: both go.
sed -i -e '/^\.Ar subcommand$/d' -e '/^\.It Em help$/,/^\.El$/d' "$out/man/gaend.8"
# Both pages are generate-manual's gaenctl.1 (the command's name): the full one first, renamed.
"$gen" "$bin/gaenctl" --section 1 --date "$date" --authors "the gaend authors" -o "$out/man"
mv "$out/man/gaenctl.1" "$out/man/gaenctl-research.1"
"$gen" "$board/gaenctl" --section 1 --date "$date" --authors "the gaend authors" -o "$out/man"
# generate-manual's EXIT STATUS is mdoc's `.Ex -std` ("0 on success, >0 if an error occurs"),
# which hides what a script needs to tell apart: a usage error (64) from a failed run (1).
exit_status() {
    printf '%s\n' '.Bl -tag -width Ds' '.It 0' "$1" '.It 1' "$2" '.It 64' \
        'A usage error (EX_USAGE): an unknown option, a missing or malformed argument, a value out of range; nothing was done.' '.El'
}
sed -i "/^\.Ex -std\$/{
r /dev/stdin
d
}" "$out/man/gaend.8" <<<"$(exit_status 'gaend stopped cleanly (SIGTERM, SIGINT); with --check-controller: the controller is gaend'"'"'s.' \
    'gaend could not run or stopped on a fault: the config, the store, the controller (the journal says which); with --check-controller: the controller stays with bluetoothd.')"
sed -i "/^\.Ex -std\$/{
r /dev/stdin
d
}" "$out/man/gaenctl-research.1" <<<"$(exit_status 'The command did what it was asked.' \
    'The command failed: gaend not reachable or refusing (the D-Bus error is named on stderr), a file unreadable, a server error; some commands also for a result (metrics: gaend did not answer; collect: a day stays pending; trial verify: a day corrupt).')"
sed -i "/^\.Ex -std\$/{
r /dev/stdin
d
}" "$out/man/gaenctl.1" <<<"$(exit_status 'The command did what it was asked.' \
    'The command failed: gaend not reachable or refusing (the D-Bus error is named on stderr), a file unreadable, a server error; some commands also for a result (metrics: gaend did not answer; collect: a day stays pending).')"
# gaend.conf(5): the page's prose, then every setting as the commented example shows it.
{
    sed "s/@DATE@/$date/" docs/man/gaend.conf.5.in
    echo ".Sh SETTINGS"
    echo "Every setting with its default, as installed in"
    echo ".Pa /etc/gaend/gaend.conf.example :"
    echo ".Bd -literal"
    sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' config/gaend.conf.example
    echo ".Ed"
    cat docs/man/gaend.conf.5.tail
} > "$out/man/gaend.conf.5"
completions() { # completions PROGRAM NAME
    "$1" --generate-completion-script bash > "$out/completions/$2.bash"
    "$1" --generate-completion-script zsh > "$out/completions/_$2"
    "$1" --generate-completion-script fish > "$out/completions/$2.fish"
}
completions "$bin/gaend" gaend
completions "$board/gaenctl" gaenctl
completions "$bin/gaenctl" gaenctl-research
if [ $check = 0 ]; then
    echo "gen-docs: docs/man and docs/completions regenerated from $bin"
    exit 0
fi
stale=0
for f in "$out"/man/gaend.8 "$out"/man/gaenctl.1 "$out"/man/gaenctl-research.1 "$out"/man/gaend.conf.5 "$out"/completions/*; do
    committed=docs/${f#"$out"/}
    if [ ! -f "$committed" ]; then
        echo "gen-docs --check: $committed is missing" >&2
        stale=1
    elif ! diff -u --label "$committed" --label "generated from $bin" \
            <(grep -v '^\.Dd ' "$committed") <(grep -v '^\.Dd ' "$f") >&2; then
        stale=1
    fi
done
if [ $stale = 1 ]; then
    echo "gen-docs --check: docs/man or docs/completions are stale: run scripts/gen-docs.sh (after make) and commit them" >&2
    exit 1
fi
echo "gen-docs --check: docs/man and docs/completions match $bin"
