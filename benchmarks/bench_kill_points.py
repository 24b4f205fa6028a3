"""Kill points of every writer, before and after: what a SIGKILL at each file-system call leaves.

Runs ``tests/kill_points.py`` for each writer (and, with ``--fail-rename``, for each
writer of several files whose rename fails and rolls back) with each tree's ``sknce`` on
the path, and summarises the records: the number of kill points, the states the kills
left (``old``, ``new``, or what is wrong), and the temporary files left after the load.
Not a timing: the load does not enter. Entries of ``--merge`` that are not run again are
kept, so one writer can be measured anew::

    .venv/bin/python benchmarks/bench_kill_points.py --trees /work/main=before .=after \\
        --merge benchmarks/results/file_kill_points.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from kill_points import PAIRS, WRITERS  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "file_kill_points.json"


def run(tree: Path, writer: str, fail_rename: bool) -> dict:
    """The summary of one writer's kill points with ``tree``'s sknce."""
    options = ["--fail-rename"] if fail_rename else []
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT / "tests")])}
        done = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "kill_points.py"), writer, directory,
             *options],
            capture_output=True, text=True, env=env, timeout=1800,
        )  # fmt: skip
    if done.returncode != 0:
        return {"error": done.stderr[-500:]}
    records = json.loads(done.stdout.strip().splitlines()[-1])
    killed = [r for r in records if not r["point"].startswith("none")]
    summary = {
        "kill_points": len(killed),
        "states": dict(Counter(r["state"][:60] for r in killed)),
        "temporaries_left_after_load": sum(1 for r in killed if r["left_after_load"]),
    }
    if fail_rename:
        rollback = [r for r in killed if r["point"].startswith("after the failed rename")]
        summary["kill_points_in_rollback"] = len(rollback)
        summary["states_in_rollback"] = dict(Counter(r["state"][:60] for r in rollback))
        summary["failed_save_left"] = [r["state"][:60] for r in records if r not in killed]
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", default=[".=after"], help="PATH=LABEL")
    parser.add_argument("--writers", nargs="+", default=list(WRITERS))
    parser.add_argument("--rollbacks", nargs="*", default=list(PAIRS))
    parser.add_argument("--merge", type=Path, help="a JSON of this script to update")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    result = json.loads(args.merge.read_text()) if args.merge else {"writers": {}}
    result["name"] = "file_kill_points"
    result["note"] = (
        "tests/kill_points.py: SIGKILL at each file-system call of a save (os.open, "
        "os.mkdir, os.write, os.fsync, os.link, os.replace, os.rename, os.unlink, os.rmdir, "
        "os.chmod, and each write to sknce._files' stream); '<writer> --fail-rename': the "
        "second rename onto a target fails and the save rolls back, kills continuing "
        "through the rollback. Before, torch.save, numpy and skorch's pickle write through "
        "C, so fewer calls are counted there."
    )
    jobs = [(w, False) for w in args.writers] + [(w, True) for w in args.rollbacks]
    for writer, fail_rename in jobs:
        key = f"{writer} --fail-rename" if fail_rename else writer
        entry = result["writers"].setdefault(key, {})
        for spec in args.trees:
            path, label = spec.split("=")
            entry[label] = run(Path(path).resolve(), writer, fail_rename)
            print(key, label, json.dumps(entry[label]), flush=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
