#!/usr/bin/env python3
"""Prints which of this package's targets each executable (or the named targets) compiles,
transitively, from `swift package describe --type json`: a check that a tool does not pull
in layers it should not (the store, the D-Bus layer) and a record of the graph for reviews.

usage: scripts/target-graph.py [--json FILE] [--direct] [--forbid A,B] [TARGET...]
  --json FILE   read a saved description instead of running swift package describe
  --direct      also print each target's direct dependencies
  --forbid A,B  exit 1 when a listed TARGET pulls in one of these targets
"""
import argparse
import json
import subprocess
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--direct", action="store_true")
    p.add_argument("--forbid", default="")
    p.add_argument("targets", nargs="*")
    a = p.parse_args()
    if a.json:
        with open(a.json) as f:
            d = json.load(f)
    else:
        out = subprocess.run(["swift", "package", "describe", "--type", "json"],
                             check=True, capture_output=True, text=True).stdout
        d = json.loads(out)
    deps = {t["name"]: t.get("target_dependencies", []) for t in d["targets"]}
    products = {t["name"]: sorted(t.get("product_dependencies", [])) for t in d["targets"]}
    kinds = {t["name"]: t["type"] for t in d["targets"]}

    def closure(name):
        seen, stack = set(), [name]
        while stack:
            for dep in deps.get(stack.pop(), []):
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen

    names = a.targets or sorted(n for n, k in kinds.items() if k == "executable")
    forbidden = {f for f in a.forbid.split(",") if f}
    failed = False
    for n in names:
        if n not in deps:
            sys.exit(f"no target {n}")
        c = closure(n)
        pkgs = sorted({p for m in c | {n} for p in products.get(m, [])})
        print(f"{n}: {', '.join(sorted(c)) or '-'}" + (f"  [packages: {', '.join(pkgs)}]" if pkgs else ""))
        if a.direct:
            for m in sorted(c):
                print(f"    {m} -> {', '.join(sorted(deps[m])) or '-'}")
        bad = sorted(c & forbidden)
        if bad:
            print(f"  pulls in forbidden: {', '.join(bad)}")
            failed = True
    sys.exit(1 if failed else 0)


main()
