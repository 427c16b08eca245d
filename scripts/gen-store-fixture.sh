#!/bin/sh
# Regenerates Tests/BLEDaemonTests/Fixtures/store-grdb: a store written by the last gaend whose
# store ran on GRDB (schema versioned by GRDB's migrator, table grdb_migrations). Later gaends
# must open it unchanged (StoreFixtureTests). It builds StoreStress at that release in a
# temporary worktree, writes StoreFixture's contents, edits one scan's clear end time behind the
# store's back (python3's sqlite3) and reads the store once, so that the scan is quarantined.
#
# usage: scripts/gen-store-fixture.sh [COMMIT]   (default: the commit that added the fixture's generator)
set -eu
commit=${1:-9381fb9c545128e87f5e1a81387e48de4256cb65}
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
rm -f "$out/store.sqlite" "$out/store.sqlite-wal"
# The WAL as that release left it at close (GRDB did not checkpoint it away): part of the fixture.
for f in store.sqlite store.sqlite-wal teks.txt; do
    if [ -f "$work/fixture/$f" ]; then cp "$work/fixture/$f" "$out/" && chmod 644 "$out/$f"; fi
done
echo "wrote $out from $commit"
