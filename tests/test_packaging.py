"""The built wheel: every module of the source tree and nothing else, installable into a
fresh virtual environment, where it imports and fits from its own files.

The wheel is the one ``bash .ci/test`` builds with ``python -m build`` (after which
``twine check`` has accepted it); ``.ci/test`` passes its folder as ``SKNCE_DIST``.
Without that variable (a plain local ``pytest``) these tests are skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
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


# Run by the fresh environment's interpreter, from a folder outside the checkout.
_CHECK_INSTALLED = r"""
import importlib, importlib.metadata, json, pkgutil
from packaging.requirements import Requirement
import numpy as np
import sknce

modules = [m.name for m in pkgutil.walk_packages(sknce.__path__, "sknce.")]
for name in modules:
    importlib.import_module(name)
unmet = []
for line in importlib.metadata.requires("sknce") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue  # an optional extra
    try:
        installed = importlib.metadata.version(req.name)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed is None or not req.specifier.contains(installed, prereleases=True):
        unmet.append(f"{req} (installed: {installed})")

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
    "unmet": unmet,
    "proba_shape": list(clf.predict_proba(X[:2]).shape),
}))
"""


def test_wheel_installs_into_a_fresh_environment_and_imports_from_it(wheel, tmp_path):
    # A new environment holding only the wheel. Its dependencies (torch and the rest) are
    # read from the environment running these tests through a .pth path line, which adds
    # that site-packages to sys.path without running its .pth files, so the editable
    # install of the checkout there is not seen. Installing the dependencies afresh would
    # copy torch (1.4 GB, about a minute) on every run.
    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=False)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "-q", "--no-deps", str(wheel)], check=True)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "_sknce_test_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )

    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    result = subprocess.run(
        [str(python), "-c", _CHECK_INSTALLED],
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
    assert report["unmet"] == [], "the wheel's requirements are not met by its dependencies"
    assert report["proba_shape"] == [2, 3]
