"""The results of ``gpu_check.py``: a JSON file and a markdown table, rewritten after each step.

A run on a borrowed GPU can be killed at its time limit at any moment, so every step
and every benchmark row is written out as soon as it ends (each file replaced whole,
through a temporary file): what was measured before the kill stays readable.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

#: The row figures the markdown table shows, in order, and their headers.
_ROW_COLUMNS = {
    "family": "family",
    "system": "system",
    "side": "side",
    "device": "device",
    "fit_s": "fit s",
    "metric": "quality figure",
    "quality": "quality",
    "peak_device_mib": "peak device MiB",
    "row_s": "row s",
    "load": "load",
}


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value).replace("|", "/").replace("\n", " ")


def _plain(value):
    """``value`` with its non-finite floats as strings: strict JSON has no NaN or infinity."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole: a kill leaves the old file or the new one."""
    partial = path.with_name(path.name + ".part")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


class Results:
    """The steps, facts and rows of one run, kept in ``<out>/gpu_check.json`` and ``.md``.

    Parameters
    ----------
    out : path
        The results folder (made if missing).
    header : dict
        What the run is (mode, device, budget, command line): saved first.
    """

    def __init__(self, out: str | Path, header: dict) -> None:
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.data = {**header, "facts": {}, "steps": [], "rows": [], "tests": []}
        self.write()

    @property
    def json_path(self) -> Path:
        return self.out / "gpu_check.json"

    @property
    def markdown_path(self) -> Path:
        return self.out / "gpu_check.md"

    def facts(self, **facts) -> None:
        """Add facts about the machine and the libraries."""
        self.data["facts"].update(facts)
        self.write()

    def step(self, record: dict) -> None:
        """Add the record of a finished (or skipped) step."""
        self.data["steps"].append(record)
        self.write()

    def row(self, row: dict) -> None:
        """Add one benchmark row."""
        self.data["rows"].append(row)
        self.write()

    def tests(self, summary: dict) -> None:
        """Add the summary of one pytest run."""
        self.data["tests"].append(summary)
        self.write()

    def write(self) -> None:
        """Rewrite both files from what is known now."""
        text = json.dumps(_plain(self.data), indent=2, default=str, allow_nan=False)
        _replace(self.json_path, text + "\n")
        _replace(self.markdown_path, self.markdown())

    def markdown(self) -> str:
        """The run as markdown: facts, steps, benchmark rows, test results."""
        data = self.data
        lines = [f"# gpu_check ({data.get('mode', '')}, device {data.get('device', '')})", ""]
        lines += [f"- {key}: {_cell(value)}" for key, value in data["facts"].items()]
        lines += ["", "## Steps", ""]
        lines += _table(
            ["step", "status", "wall s", "budget s", "note"],
            [
                [s["step"], s["status"], s.get("wall_s"), s.get("budget_s"), s.get("note", "")]
                for s in data["steps"]
            ],
        )
        lines += ["", "## Benchmarks", ""]
        lines += _table(
            [*_ROW_COLUMNS.values(), "other figures"],
            [[*(r.get(key) for key in _ROW_COLUMNS), _others(r)] for r in data["rows"]],
        )
        lines += ["", "## Tests", ""]
        for summary in data["tests"]:
            counts = ", ".join(f"{n} {what}" for what, n in summary["counts"].items())
            lines.append(f"- `{summary['command']}`: {counts or 'no summary'}")
            lines += [f"  - {line}" for line in summary["failures"] + summary["skips"]]
        return "\n".join(lines) + "\n"


def _others(row: dict) -> str:
    """The row's figures beyond the table's columns, as ``key=value`` pairs."""
    shown = set(_ROW_COLUMNS)
    return ", ".join(f"{k}={_cell(v)}" for k, v in row.items() if k not in shown)
