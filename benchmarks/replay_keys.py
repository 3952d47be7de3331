"""How many job re-runs a history of commits would have caused under the whole-package key and under the closure key
(docs/conventions.md#provenance).

    python benchmarks/replay_keys.py [--commits 100] [--until REV] [--data DIR]

The jobs are the full page's at HEAD (``reproduce --budget full``: one per main run, data draw and control), each
keyed by its experiment's closure at HEAD.  For each commit of the ``--commits`` commits before and including
``--until`` (default HEAD), against its first parent:

* the whole-package key (the digest of every ``.py`` and ``.c`` file of the package, by bytes) re-runs every job
  when any such file changed;
* the closure key re-runs a job when a file of its closure changed (by its syntax tree without docstrings for a
  ``.py``, by its bytes for a ``.c``; a file that came or went counts as changed);
* "closure, bytes" is the closure key with every file compared by its bytes: the closures' share alone.

A file of a closure at HEAD is looked up under the same path in the history: a file that a refactor since moved is
followed no further than its path, and a claim that history kept beside its run code still counts as run code.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from inductionlab import experiments
from inductionlab.store import closure, key
from inductionlab.store.plan import plan

SRC = "src/inductionlab"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def blob(rev: str, path: str) -> bytes | None:
    done = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def tree_digest(data: bytes | None, path: str) -> str | None:
    if data is None:
        return None
    if path.endswith(".py"):
        try:
            return closure.file_digest(Path(path), ast.parse(data))
        except SyntaxError:
            return hashlib.sha256(data).hexdigest()
    return hashlib.sha256(data).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--until", default="HEAD")
    parser.add_argument("--data", default=os.environ.get("INDUCTIONLAB_DATA", ""))
    args = parser.parse_args()
    jobs, skipped = plan("all", "full", Path("/tmp/replay"), args.data)
    per_experiment = Counter(j.experiment for j in jobs)
    files = {e: [f.removeprefix("inductionlab/") for f in key.experiment_closure(e).files] for e in per_experiment}
    revs = git("rev-list", "--first-parent", f"-{args.commits}", args.until).split()
    old = new = raw = 0
    rows = []
    for rev in revs:
        parent = f"{rev}^"
        changed = [p for p in git("diff", "--name-only", parent, rev, "--", SRC).split() if p.endswith((".py", ".c"))]
        if not changed:
            rows.append((rev, 0, 0, 0))
            continue
        moved = {p.removeprefix(SRC + "/") for p in changed}
        same_tree = {
            p for p in moved if tree_digest(blob(parent, f"{SRC}/{p}"), p) == tree_digest(blob(rev, f"{SRC}/{p}"), p)
        }
        by_tree = sum(n for e, n in per_experiment.items() if set(files[e]) & (moved - same_tree))
        by_bytes = sum(n for e, n in per_experiment.items() if set(files[e]) & moved)
        old += len(jobs)
        new += by_tree
        raw += by_bytes
        rows.append((rev, len(jobs), by_bytes, by_tree))
    print(f"{len(jobs)} jobs over {len(per_experiment)} experiments ({len(skipped)} skipped: no data)")
    print("commit        whole-package  closure,bytes  closure")
    for rev, a, b, c in rows:
        print(f"{rev[:12]}  {a:13d}  {b:13d}  {c:7d}")
    touching = sum(1 for r in rows if r[1])
    print(f"\n{len(revs)} commits, {touching} touching the package's code")
    print(f"whole-package key: {old} re-runs ({old / max(touching, 1):.1f} per commit touching it)")
    print(f"closure key, files by bytes: {raw} re-runs ({old / max(raw, 1):.1f}x fewer)")
    print(f"closure key, files by syntax tree: {new} re-runs ({old / max(new, 1):.1f}x fewer)")
    sys.stdout.flush()


if __name__ == "__main__":
    experiments.all_experiments()
    main()
