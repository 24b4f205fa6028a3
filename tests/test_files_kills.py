"""Saves killed (SIGKILL) at every file-system call: the files hold the old save or the new.

``tests/kill_points.py`` runs each writer in a subprocess, kills a forked save at its
k-th call for every k, and loads what is left. Whatever the kill point, the files are
those of the old save or of the new one, whole; a pair (words and matrix, vectors and
vocabulary, an ONNX model and its data, an epoch's checkpoint files) is never half one,
half the other; and the load (or the next save) removes what the killed save left.
With ``--fail-rename`` a rename of the switch fails, the save rolls back, and the kills
fall inside that rollback too: still the old files or the new, never a mix.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import kill_points
import pytest

pytestmark = [
    pytest.mark.attack("Killed saves"),
    pytest.mark.skipif(
        not hasattr(os, "fork"), reason="the kill points are reached in forked processes"
    ),
]
DRIVER = Path(__file__).with_name("kill_points.py")
PAIRS = kill_points.PAIRS
ROOT = Path(__file__).resolve().parents[1]

# writer: (fewest kill points expected, the states a kill may leave)
WRITERS = {
    "native": (20, {"old", "new"}),
    "word2vec-vocab": (20, {"old", "new"}),
    "word2vec-binary": (6, {"old", "new"}),
    "fasttext": (10, {"old", "new"}),
    "chunks": (20, {"old/old", "new/old", "new/new"}),
    "checkpoint": (20, {"old/old", "new/new"}),
    "checkpoint-pickle": (20, {"old/old", "new/new"}),
    "onnx": (20, {"old", "new"}),
}


def _kill_points(writer, directory, *options):
    if writer == "onnx":
        pytest.importorskip("onnxscript")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    done = subprocess.run(
        [sys.executable, str(DRIVER), writer, str(directory), *options],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("writer", PAIRS)
def test_a_save_killed_while_it_rolls_back_a_failed_rename_leaves_old_or_new(writer, tmp_path):
    records = _kill_points(writer, tmp_path, "--fail-rename")
    allowed = WRITERS[writer][1]
    *killed, failed = records
    assert failed["point"].startswith("none") and set(failed["state"].split("/")) == {"old"}
    assert failed["left_by_kill"] == []  # the failed save removed its temporaries
    wrong = [r for r in killed if r["state"] not in allowed]
    assert wrong == []
    in_rollback = [r for r in killed if r["point"].startswith("after the failed rename")]
    assert len(in_rollback) >= 8  # the journal's rename, the restores, the removals
    # from the rollback journal on, a kill leaves the old files
    assert {r["state"] for r in in_rollback[1:]} == {failed["state"]}
    assert [r for r in killed if r["left_after_load"]] == []


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_killed_save_leaves_the_old_files_or_the_new(writer, tmp_path):
    records = _kill_points(writer, tmp_path)
    fewest, allowed = WRITERS[writer]
    assert len(records) >= fewest
    states = {record["state"] for record in records}
    assert states <= allowed, [r for r in records if r["state"] not in allowed][:3]
    # both outcomes are reached: the kills fall before and after the switch
    assert {"old", "new"} <= {part for state in states for part in state.split("/")}
    # the kills leave temporaries behind, and the load after each removes them
    assert any(record["left_by_kill"] for record in records)
    assert [r for r in records if r["left_after_load"]] == []
