#!/usr/bin/env bash
# Regenerates the committed man pages and shell completions from the binaries' own help, so they
# cannot drift from the command-line contract:
#   docs/man/gaend.8, docs/man/gaenctl.1   swift-argument-parser's generate-manual
#   docs/man/gaend.conf.5                  docs/man/gaend.conf.5.in + config/gaend.conf.example
#   docs/completions/*                     --generate-completion-script bash|zsh|fish
# Usage: scripts/gen-docs.sh [BIN_DIR]   (default .build/release; run `make` first)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release}
date=${GEN_DOCS_DATE:-$(git log -1 --format=%cs 2>/dev/null || date -u +%F)}
mkdir -p docs/man docs/completions
swift build --product generate-manual >/dev/null
gen="$(swift build --show-bin-path)/generate-manual"
"$gen" "$bin/gaend" --section 8 --date "$date" --authors "the gaend authors" -o docs/man
"$gen" "$bin/gaenctl" --section 1 --date "$date" --authors "the gaend authors" -o docs/man
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
} > docs/man/gaend.conf.5
for tool in gaend gaenctl; do
    "$bin/$tool" --generate-completion-script bash > "docs/completions/$tool.bash"
    "$bin/$tool" --generate-completion-script zsh > "docs/completions/_$tool"
    "$bin/$tool" --generate-completion-script fish > "docs/completions/$tool.fish"
done
echo "gen-docs: docs/man and docs/completions regenerated from $bin"
