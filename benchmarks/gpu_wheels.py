"""The wheels a GPU machine without network needs for ``gpu_check.py``: download, check, install.

The GPU machines this project borrows run Python 3.12 on x86-64 with torch (a CUDA
build), numba, scikit-learn, scipy, numpy, tabulate, tqdm, wrapt, pybind11 and
setuptools installed, and reach no package index. sknce's own dependency skorch, and
gensim (the corpora and the word-vector baseline) and fastText (the classifiers'
baseline) travel with the checkout as wheels, in a git-ignored folder (``.whl/``), and
``gpu_check.py --wheels .whl`` installs them there with ``pip install --no-index
--no-deps --target``. :data:`NEEDED` lists them with what they need that the machine
lacks (gensim's ``smart_open``).

Run here, once, from the repository's root (the versions are this environment's, so
the GPU machine runs the code the CPU figures ran)::

    .venv/bin/python benchmarks/gpu_wheels.py            # into .whl/
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

#: The distributions the GPU machine lacks: sknce's skorch, the benchmarks' gensim and
#: fastText (``fasttext-wheel``), and gensim's ``smart_open`` (the rest of their needs,
#: numpy, scipy, scikit-learn, tabulate, tqdm, wrapt, pybind11 and setuptools, are there).
NEEDED = ("skorch", "gensim", "fasttext-wheel", "smart_open")

#: The interpreter of the GPU machine: CPython 3.12 on 64-bit x86 Linux.
PYTHON_VERSION = "3.12"
_INTERPRETERS = {"cp312", "py3", "py312"}
_ABIS = {"cp312", "abi3", "none"}
#: ``pip download --platform`` values, newest first: pip matches each exactly.
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)


def _runs_there(tag) -> bool:
    """Whether a wheel tag installs on CPython 3.12 on x86-64 Linux (glibc)."""
    platform_ok = tag.platform == "any" or (
        tag.platform.startswith("manylinux") and tag.platform.endswith("_x86_64")
    )
    return tag.interpreter in _INTERPRETERS and tag.abi in _ABIS and platform_ok


def check_wheels(folder: str | Path, needed: tuple[str, ...] = NEEDED) -> list[Path]:
    """The wheels of ``folder``, once checked: one of each needed name, all for the machine.

    Parameters
    ----------
    folder : path
        A folder of ``.whl`` files (other files are ignored).
    needed : tuple of str, default=NEEDED
        Distribution names that must each have exactly one wheel there.

    Returns
    -------
    list of Path
        The wheels, sorted by name.

    Raises
    ------
    FileNotFoundError
        If ``folder`` is not a folder.
    ValueError
        If a file name is not a wheel's, a wheel does not install on CPython 3.12 on
        x86-64 Linux, a name has two wheels (``pip install`` stops on both), or a needed
        name has none; the message names the file and the fix.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} is not a folder of wheels; make it here with "
            f"`.venv/bin/python benchmarks/gpu_wheels.py --dest {folder}`."
        )
    found: dict[str, Path] = {}
    for path in sorted(folder.glob("*.whl")):
        try:
            name, _, _, tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename as error:
            raise ValueError(
                f"{path.name} is not a wheel's file name ({error}); remove it."
            ) from None
        if not any(_runs_there(tag) for tag in tags):
            raise ValueError(
                f"{path.name} does not install on CPython {PYTHON_VERSION} on x86-64 Linux "
                f"(tags {sorted(map(str, tags))}); remove it and run benchmarks/gpu_wheels.py."
            )
        if name in found:
            raise ValueError(
                f"{folder} holds two wheels of {name}: {found[name].name} and {path.name}; "
                "keep one (pip install stops on both)."
            )
        found[name] = path
    missing = sorted({canonicalize_name(n) for n in needed} - set(found))
    if missing:
        raise ValueError(
            f"{folder} lacks the wheels of {missing}; run benchmarks/gpu_wheels.py to "
            "download them."
        )
    return [found[name] for name in sorted(found)]


def install(wheels: list[Path], target: str | Path, timeout: float | None = None) -> None:
    """Install ``wheels`` into ``target`` (emptied first) with no index and no dependencies.

    Put ``target`` first on ``sys.path`` (and ``PYTHONPATH``) to import them. Raises
    :class:`subprocess.CalledProcessError` if pip fails, and
    :class:`subprocess.TimeoutExpired` after ``timeout`` seconds.
    """
    target = Path(target)
    shutil.rmtree(target, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    command += ["--no-compile", "--no-cache-dir", "--disable-pip-version-check"]
    command += ["--target", str(target), *map(str, wheels)]
    subprocess.run(command, check=True, timeout=timeout)


def pinned(names: tuple[str, ...] = NEEDED) -> list[str]:
    """``name==version`` of each name as installed in this environment."""
    specs = []
    for name in names:
        try:
            specs.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            raise SystemExit(
                f"{name} is not installed here, so its version is unknown; install the "
                "benchmarks' extra first (pip install '.[bench]')."
            ) from None
    return specs


def download(specs: list[str], dest: Path) -> None:
    """``pip download`` each spec's wheel for CPython 3.12 on x86-64 Linux into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
    command += ["--only-binary=:all:", "--python-version", PYTHON_VERSION]
    command += ["--implementation", "cp", "-d", str(dest)]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    subprocess.run(command + specs, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=Path(".whl"), help="default: .whl")
    args = parser.parse_args(argv)
    specs = pinned()
    print("downloading", " ".join(specs), "into", args.dest, flush=True)
    download(specs, args.dest)
    wheels = check_wheels(args.dest)
    size = sum(w.stat().st_size for w in wheels) / 2**20
    for wheel in wheels:
        print(f"  {wheel.name}  {wheel.stat().st_size / 2**20:.1f} MiB")
    print(f"{len(wheels)} wheels, {size:.1f} MiB: they travel with the checkout (carry it).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
