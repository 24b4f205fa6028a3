"""The built wheel: every module of the source tree and nothing else, installable into a
fresh virtual environment, where it imports and fits from its own files with only the
dependencies it declares.

The wheel is the one ``bash .ci/test`` builds with ``python -m build`` (after which
``twine check`` has accepted it); ``.ci/test`` passes its folder as ``SKNCE_DIST``.
Without that variable (a plain local ``pytest``) these tests are skipped. ``python -m
build`` builds the wheel from the sdist, so installing the wheel also tests that the sdist
holds everything a build needs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

import sknce

ROOT = Path(__file__).resolve().parent.parent


def _source_files() -> list[Path]:
    """The Python files of the package in the source tree."""
    return [p for p in (ROOT / "sknce").rglob("*.py") if "__pycache__" not in p.parts]


def _source_modules() -> list[str]:
    """Dotted names of every module and subpackage below ``sknce`` in the source tree."""
    names = set()
    for path in _source_files():
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names - {"sknce"})


@pytest.fixture(scope="module")
def wheel() -> Path:
    dist = os.environ.get("SKNCE_DIST")
    if not dist:
        pytest.skip(
            "no built wheel: set SKNCE_DIST to the folder of `python -m build` "
            "(bash .ci/test builds one into dist/ and sets it)"
        )
    wheels = sorted(Path(dist).glob("sknce-*.whl"))
    assert len(wheels) == 1, f"expected one sknce wheel in {dist}, found {wheels}"
    return wheels[0]


def test_wheel_holds_every_module_and_no_tests(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = f"sknce-{sknce.__version__}.dist-info"
    # Only the package and its metadata: no tests/, benchmarks/, docs/ or stray modules.
    assert {name.split("/")[0] for name in names} == {"sknce", dist_info}
    source = {path.relative_to(ROOT).as_posix() for path in _source_files()}
    packed = {name for name in names if name.endswith(".py")}
    assert source - packed == set(), "modules of the source tree missing from the wheel"
    assert packed - source == set(), "modules in the wheel that the source tree lacks"


def test_wheel_metadata_carries_the_package_version(wheel):
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read(f"sknce-{sknce.__version__}.dist-info/METADATA").decode()
    assert "Name: sknce\n" in metadata
    assert f"Version: {sknce.__version__}\n" in metadata
    assert wheel.name.startswith(f"sknce-{sknce.__version__}-")


def test_sdist_holds_the_package_and_its_build_files(wheel):
    sdist = wheel.parent / f"sknce-{sknce.__version__}.tar.gz"
    assert sdist.is_file(), f"no sdist {sdist.name} beside the wheel"
    with tarfile.open(sdist) as tf:
        names = {name.split("/", 1)[1] for name in tf.getnames() if "/" in name}
    source = {path.relative_to(ROOT).as_posix() for path in _source_files()}
    assert source - names == set(), "modules of the source tree missing from the sdist"
    assert {"pyproject.toml", "README.md", "LICENSE"} <= names


def test_the_version_is_written_once():
    """pyproject.toml reads the version from sknce.__version__ and writes none itself."""
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^dynamic = \["version"\]$', text, re.M)
    # The only version line is [tool.setuptools.dynamic]'s, pointing to the package.
    assert re.findall(r"^version\b.*$", text, re.M) == ['version = { attr = "sknce.__version__" }']


# Run by the fresh environment's interpreter, from a folder outside the checkout.
_CHECK_INSTALLED = r"""
import importlib, importlib.metadata, importlib.util, json, pkgutil, sys
import numpy as np
import sknce

# Nothing of the environment running the tests leaks in: pytest is installed there and
# is no dependency of sknce.
assert sys.argv[1] not in sys.path, sys.path
assert importlib.util.find_spec("pytest") is None, "the fresh environment sees pytest"

modules = [m.name for m in pkgutil.walk_packages(sknce.__path__, "sknce.")]
for name in modules:
    importlib.import_module(name)

from sknce import ConditionalNCEClassifier

rng = np.random.default_rng(0)
X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, size=60)
clf = ConditionalNCEClassifier(
    n_negatives=2, hidden_layer_sizes=(), max_epochs=1, random_state=0
).fit(X, y)
print(json.dumps({
    "file": sknce.__file__,
    "version": sknce.__version__,
    "metadata_version": importlib.metadata.version("sknce"),
    "modules": modules,
    "proba_shape": list(clf.predict_proba(X[:2]).shape),
}))
"""


def _pip(python: Path, *args: str) -> None:
    """Run pip on the environment of ``python`` (which has no pip of its own)."""
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    result = subprocess.run([*pip, "-q", *args], capture_output=True, text=True)
    assert result.returncode == 0, f"pip {' '.join(args)} failed:\n{result.stderr}"


def test_wheel_installs_into_a_fresh_environment_and_imports_from_it(wheel, tmp_path):
    # A new environment that sees only its own site-packages: torch first, from the pin
    # of .ci/constraints.txt (on this project's machines a CPU wheel on local disk; any
    # other spec pulls a multi-GB CUDA build), then the wheel with the dependencies its
    # metadata declares, from the package index. A missing declaration fails the imports.
    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=False)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    constraints = str(ROOT / ".ci" / "constraints.txt")
    _pip(python, "install", "-c", constraints, "torch")
    _pip(python, "install", "-c", constraints, str(wheel))
    _pip(python, "check")  # every installed distribution's requirements are met
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()

    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    result = subprocess.run(
        [str(python), "-c", _CHECK_INSTALLED, sysconfig.get_paths()["purelib"]],
        cwd=tmp_path,  # not the checkout: `import sknce` must find the installed copy
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"the installed wheel failed:\n{result.stderr}"
    report = json.loads(result.stdout.strip().splitlines()[-1])

    assert Path(report["file"]).resolve().is_relative_to(Path(site).resolve())
    assert report["version"] == report["metadata_version"] == sknce.__version__
    assert sorted(report["modules"]) == _source_modules()
    assert report["proba_shape"] == [2, 3]
