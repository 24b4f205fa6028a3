"""The numbers of cases that the guarantees page lists per attacked surface are the tests'.

``docs/user_guide/guarantees.rst`` lists, in the table of its section "Attacked
surfaces", each surface with its test files and its number of cases. Each of those
tests is marked ``pytest.mark.attack(surface)``, with the surface as the page names it.
A collection of the files the page names counts the marked tests: a case added or
removed without the page's count changed, a surface without its row, or a row without
its tests fails here.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "user_guide" / "guarantees.rst"
SECTION = "Attacked surfaces: files, sample weights, subword vectors, Displays"


def page_rows(text: str) -> dict[str, tuple[int, set[str]]]:
    """``{surface: (number of cases, test files)}`` of the section's table."""
    section = text.split(SECTION, 1)[1]
    section = re.split(r"\n\S[^\n]*\n-{4,}\n", section, maxsplit=1)[0]  # the next heading
    rows = {}
    for row in re.split(r"\n   \* - ", section)[1:]:
        first, _, rest = row.partition("\n     - ")
        count = re.match(r"\d+", rest)
        files = set(re.findall(r"``(tests/[\w/]+\.py)``", first))
        name = " ".join(first.split(" (``")[0].replace("``", "").split())
        if name == "Surface" or count is None:
            continue  # the header row
        rows[name] = (int(count.group()), files)
    return rows


def census(files) -> list[tuple[str, str, int]]:
    """The marked tests of ``files``, as ``(surface, file, count)``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "attack_census", *sorted(files)],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (printed,) = [line for line in done.stdout.splitlines() if line.startswith("[")]
    return [tuple(row) for row in json.loads(printed)]


def test_the_page_reads_its_table():
    rows = page_rows(PAGE.read_text(encoding="utf8"))
    assert len(rows) >= 10 and all(files for _, files in rows.values())
    assert rows["A full disk"][1] == {"tests/test_files_full_disk.py"}


def test_every_surfaces_count_on_the_page_is_its_number_of_attack_tests():
    rows = page_rows(PAGE.read_text(encoding="utf8"))
    found = census(set().union(*(files for _, files in rows.values())))
    counted = {}
    for surface, path, n in found:
        counted[surface] = counted.get(surface, 0) + n
        assert surface in rows, f"{path} marks attacks on {surface!r}, a surface not on the page"
        assert path in rows[surface][1], f"{path} holds attacks on {surface!r}: name it there"
    assert {surface: rows[surface][0] for surface in rows} == counted


def test_no_other_test_file_marks_attacks():
    rows = page_rows(PAGE.read_text(encoding="utf8"))
    named = set().union(*(files for _, files in rows.values()))
    marking = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if "mark.attack(" in path.read_text(encoding="utf8")
        and path.name != "test_guarantees_counts.py"
    }
    assert marking <= named, marking - named
