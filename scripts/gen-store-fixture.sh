#!/bin/sh
# Regenerates Tests/BLEDaemonTests/Fixtures/store-grdb: a store written by the last gaend whose
# store ran on GRDB (schema versioned by GRDB's migrator, table grdb_migrations). Later gaends
# must open it unchanged (StoreFixtureTests). It builds StoreStress at that release in a
# temporary worktree, writes StoreFixture's contents, edits one scan's clear end time behind the
# store's back (python3's sqlite3) and reads the store once, so that the scan is quarantined.
#
# usage: scripts/gen-store-fixture.sh [COMMIT]   (default: the commit that added the fixture's generator)
set -eu
commit=${1:-STORE_FIXTURE_COMMIT}
repo=$(git rev-parse --show-toplevel)
out=$repo/Tests/BLEDaemonTests/Fixtures/store-grdb
work=$(mktemp -d)
trap 'git -C "$repo" worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$repo" worktree add --detach "$work/src" "$commit" >/dev/null
(cd "$work/src" && swift build --product StoreStress >/dev/null)
bin=$(cd "$work/src" && swift build --show-bin-path)/StoreStress
mkdir "$work/fixture"
"$bin" --fixture "$work/fixture"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE scan SET end_time = end_time + 60 WHERE id = 5"); c.commit(); c.close()' "$work/fixture/store.sqlite"
"$bin" --fixture-read "$work/fixture"
mkdir -p "$out"
cp "$work/fixture/store.sqlite" "$work/fixture/teks.txt" "$out/"
echo "wrote $out (store.sqlite, teks.txt) from $commit"
