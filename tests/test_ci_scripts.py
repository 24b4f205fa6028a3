"""The CI scripts: floors pinned from pyproject.toml, a set-up that skips an up-to-date venv."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def test_floor_constraints_pin_every_runtime_dependency_but_torch():
    out = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "min_constraints.py")],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    pins = dict(line.split("==") for line in out)
    assert "torch" not in pins
    # the floors the issue found: skorch 1.0-1.1 cannot pickle a fit under torch >= 2.6,
    # numpy 1.24 has no Generator.spawn
    assert pins["skorch"] == "1.2.0" and pins["numpy"] == "1.25"
    assert set(pins) == {"numpy", "scipy", "scikit-learn", "skorch", "numba", "threadpoolctl"}


def test_floor_constraints_refuse_a_dependency_without_floor(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["numpy"]\n')
    result = subprocess.run(
        [sys.executable, str(ROOT / ".ci" / "min_constraints.py"), str(tmp_path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0 and "'numpy' has no plain" in result.stderr


def test_setup_env_does_nothing_when_the_venv_is_up_to_date(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls.log"
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "$PYTHONWARNINGS | $*" >> "{log}"\n')
    python.chmod(0o755)
    env = {**os.environ, "VENV": str(venv)}
    setup = [shutil.which("bash"), str(ROOT / ".ci" / "setup-env")]
    subprocess.run(setup, env=env, check=True)
    calls = log.read_text().splitlines()
    assert any("-e .[" in c for c in calls)  # installed sknce, editable
    # setuptools' warning box about editable installs is silenced
    assert all(c.startswith("ignore:Editable installation |") for c in calls)
    subprocess.run(setup, env=env, check=True)
    assert log.read_text().splitlines() == calls  # up to date: not one pip call
