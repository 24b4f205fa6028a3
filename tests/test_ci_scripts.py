"""The CI scripts: floors pinned from pyproject.toml, a set-up that skips an up-to-date venv."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
ATTACK = pytest.mark.attack("CI and docstrings")


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


# --- .ci/test: a step fails when any command of it fails ----------------------------------


def _ci_copy(tmp_path, venv=None):
    """A directory holding a copy of .ci/test, its .venv either faked or the real one."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "test", tmp_path / ".ci" / "test")
    if venv is None:
        (tmp_path / ".venv" / "bin").mkdir(parents=True)
    else:
        (tmp_path / ".venv").symlink_to(venv, target_is_directory=True)
    return tmp_path


def _run_ci(directory, steps):
    env = {**os.environ, "CI_STEPS": steps}
    return subprocess.run(
        [shutil.which("bash"), str(directory / ".ci" / "test")],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip


@ATTACK
@pytest.mark.parametrize("failing", ["check", "format"])
def test_a_failing_command_fails_its_step_and_stops_the_script(tmp_path, failing):
    # ruff check failing and ruff format passing: bash ignores set -e in a function
    # called from "cmd || status=$?", so the old step passed whenever the last command did
    directory = _ci_copy(tmp_path)
    ruff = directory / ".venv" / "bin" / "ruff"
    ruff.write_text(f'#!/bin/sh\necho "ruff $*"\n[ "$1" = {failing} ] && exit 3\nexit 0\n')
    ruff.chmod(0o755)
    result = _run_ci(directory, "lint")
    assert result.returncode == 3
    assert re.search(r"=== lint \(ruff\): \d+ s \(failed, exit status 3\)", result.stdout)
    if failing == "check":
        assert "ruff format" not in result.stdout  # the step stopped at its failing command


@ATTACK
def test_only_the_named_steps_run(tmp_path):
    directory = _ci_copy(tmp_path)
    ruff = directory / ".venv" / "bin" / "ruff"
    ruff.write_text("#!/bin/sh\nexit 0\n")
    ruff.chmod(0o755)
    result = _run_ci(directory, "lint")
    assert result.returncode == 0
    assert [line for line in result.stdout.splitlines() if line.startswith("=== ")] == [
        "=== lint (ruff)",
        result.stdout.splitlines()[-1],
    ]


CONF = """
import os
import sys

sys.path.insert(0, os.path.abspath(".."))
extensions = ["sphinx.ext.autodoc", "numpydoc"]
numpydoc_show_class_members = False
"""
INDEX = """Docs
====

.. autofunction:: module.function
"""


@ATTACK
@pytest.mark.parametrize(
    ("docstring", "fails"),
    [('"""Return ``x``, an `unclosed interpreted text."""', True),
     ('"""Return ``x``, the input."""', False)],
)  # fmt: skip
def test_the_docs_step_fails_on_a_sphinx_warning(tmp_path, docstring, fails):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    directory = _ci_copy(tmp_path, venv=Path(sys.prefix))
    (directory / "docs").mkdir()
    (directory / "docs" / "conf.py").write_text(CONF)
    (directory / "docs" / "index.rst").write_text(INDEX)
    (directory / "module.py").write_text(f"def function(x):\n    {docstring}\n    return x\n")
    result = _run_ci(directory, "docs")
    assert (result.returncode != 0) == fails, result.stdout + result.stderr
    if fails:
        assert "without end-string" in result.stderr
        assert "(failed, exit status" in result.stdout
