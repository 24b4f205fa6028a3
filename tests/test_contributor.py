"""A contributor's path: the guide's new estimator, in four files, passes the registry tests.

"Adding an estimator" in docs/user_guide/core.rst shows each piece of a new estimator
under a caption naming the file it goes in (its module, the estimator list, its
registry entry, its page). This test reads those pieces from the guide's text (the
code blocks, and the files under tests/contributor/ the guide includes), applies them
to a copy of the repository, checks that no other file changed, and runs every
registry-driven test file on the new estimator there, and the page's example.
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import sknce

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "user_guide" / "core.rst"
NAME = "NCEDensityEstimator"
#: What a copy of the repository needs to run its tests (no build outputs).
COPIED = ["sknce", "tests", "docs", "pyproject.toml", "setup.cfg"]
IGNORED = shutil.ignore_patterns(
    "__pycache__", ".ruff_cache", "_build", "generated", "auto_examples", "*.pyc"
)
_DIRECTIVE = re.compile(r"^\.\. (literalinclude|code-block)::\s*(\S*)\n((?: {3}:.*\n)*)\n?", re.M)


def _section(text: str, title: str) -> str:
    start = text.index(f"\n{title}\n")
    end = re.search(r"\n[^\n]+\n-{3,}\n", text[start + len(title) + 2 :])
    return text[start : start + len(title) + 2 + end.start()] if end else text[start:]


def guide_pieces() -> dict[str, str]:
    """``{path: text}``: each piece of "Adding an estimator" captioned with a path."""
    pieces = {}
    section = _section(GUIDE.read_text(), "Adding an estimator")
    for match in _DIRECTIVE.finditer(section):
        kind, argument, options = match.groups()
        options = dict(re.findall(r"^ {3}:([\w-]+):\s*(.*)$", options, re.M))
        if "caption" not in options:
            continue
        if kind == "literalinclude":
            text = (GUIDE.parent / argument).read_text()
            if "start-after" in options:
                text = text.split(options["start-after"], 1)[1].lstrip("\n")
        else:
            body = re.match(r"((?:(?: {3}.*)?\n)+)", section[match.end() :]).group(1)
            text = textwrap.dedent(body).strip("\n") + "\n"
        pieces[options["caption"].split()[0].rstrip(",")] = text
    return pieces


def _apply(root: Path, path: str, text: str) -> None:
    """One piece, as the guide says: a new file, a line of the estimator list, or code
    after the registry's entries."""
    target = root / path
    if not target.exists():
        target.write_text(text)
    elif path == "sknce/__init__.py":
        source = target.read_text()
        end = source.index("\n}\n", source.index("\n_ESTIMATORS = {\n")) + 1
        target.write_text(source[:end] + "    " + text + source[end:])
    elif path == "tests/_registry.py":
        source = target.read_text()
        start = source.index("\nREGISTRY: dict[str, Entry] = {\n")
        end = source.index("\n}\n", start) + 3
        target.write_text(source[:end] + "\n\n" + text + source[end:])
    else:
        raise AssertionError(f"the guide edits {path}, which the guide's path does not name")


def _changed(copy: Path) -> set[str]:
    """The files of ``copy`` that are new or differ from the repository's."""
    changed = set()
    for directory, _, files in os.walk(copy):
        for name in files:
            path = Path(directory, name).relative_to(copy)
            original = ROOT / path
            if not original.exists() or not filecmp.cmp(original, copy / path, shallow=False):
                changed.add(path.as_posix())
    return changed


def _registry_driven() -> list[str]:
    """Every test file that reads the registry (directly or through test_common)."""
    return sorted(
        path.name
        for path in (ROOT / "tests").glob("test_*.py")
        if path.name != Path(__file__).name
        and re.search(r"^from (_registry|test_common) import", path.read_text(), re.M)
    )


def test_the_guide_shows_the_four_pieces():
    pieces = guide_pieces()
    assert set(pieces) == {
        "sknce/density.py",
        "sknce/__init__.py",
        "tests/_registry.py",
        "docs/user_guide/density.rst",
    }
    assert pieces["sknce/__init__.py"].strip() == f'"{NAME}": "sknce.density",'
    assert pieces["sknce/density.py"] == (ROOT / "tests/contributor/density.py").read_text()


def test_the_guide_estimator_fits_and_weighs():
    sys.path.insert(0, str(ROOT / "tests" / "contributor"))
    try:
        import density
    finally:
        sys.path.remove(str(ROOT / "tests" / "contributor"))
    from sklearn.utils.validation import has_fit_parameter

    estimator = density.NCEDensityEstimator(max_epochs=2, random_state=0)
    assert has_fit_parameter(estimator, "sample_weight")
    X = np.random.default_rng(0).normal(size=(40, 2))
    weights = (X[:, 0] > 0) * 1.0
    estimator.fit(X, sample_weight=weights)
    # the noise Gaussian is fitted with the weights: zero weight is no row
    assert estimator.mean_ == pytest.approx(X[X[:, 0] > 0].mean(axis=0))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_guide_estimator_passes_the_registry_driven_tests(tmp_path):
    copy = tmp_path / "repository"
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=IGNORED)
        else:
            shutil.copy2(source, copy / name)
    pieces = guide_pieces()
    for path, text in pieces.items():
        _apply(copy, path, text)
    assert _changed(copy) == set(pieces)  # four files, no other edit

    env = {**os.environ, "PYTHONPATH": str(copy)}
    others = " or ".join(sorted(sknce._ESTIMATORS))
    tests = [f"tests/{name}" for name in _registry_driven()]
    report = tmp_path / "report.xml"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={report}"]
        + [*tests, "-k", f"not ({others})"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    ran = re.findall(rf'<testcase [^>]*name="[^"]*\[{NAME}', report.read_text())
    assert len(ran) > 100  # the new estimator's own cases ran (not only registry-wide ones)

    page = (copy / "docs/user_guide/density.rst").read_text()
    example = re.search(r"^\.\. code-block:: python\n\n((?:(?: {4}.*)?\n)+)", page, re.M)
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(example.group(1))],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-3000:]
