"""Print a pip constraints file that pins every runtime dependency of pyproject.toml to its floor.

``name>=X`` becomes ``name==X``, so that installing sknce under these constraints builds the
oldest environment that pyproject.toml claims to support (.ci/min-deps tests it). A runtime
dependency without a ``>=`` floor is an error: its floor could never be tested.
"""

import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip vendors the same parser
    from pip._vendor import tomli as tomllib

# torch is the one dependency whose floor is not installed: the project's machines hold one
# CPU wheel (the pin in .ci/constraints.txt); any other torch is a multi-GB CUDA download.
NOT_PINNED = {"torch"}


def floor_pins(pyproject: Path) -> list[str]:
    """Return ``name==floor`` for each runtime dependency of ``pyproject`` but NOT_PINNED."""
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    pins = []
    for spec in dependencies:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-\[\]]+)\s*>=\s*([0-9][0-9a-zA-Z.]*)\s*", spec)
        if match is None:
            raise SystemExit(
                f"pyproject.toml dependency {spec!r} has no plain 'name>=version' floor; "
                "write one so that .ci/min-deps can install and test it."
            )
        name = re.sub(r"\[.*\]", "", match[1])
        if name.lower() not in NOT_PINNED:
            pins.append(f"{name}=={match[2]}")
    return pins


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    print("\n".join(floor_pins(root / "pyproject.toml")))
