"""The convention every sknce benchmark follows: print a table, save JSON with machine facts.

Use::

    from _common import Timer, machine_facts, report

    rows = [{"method": "sknce", "seconds": 1.2}, {"method": "gensim", "seconds": 0.9}]
    report("my_benchmark", rows, title="What was measured", params={...})

``report`` prints the rows as an aligned table and writes
``benchmarks/results/my_benchmark.json`` with the rows, the parameters and
:func:`machine_facts`.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_facts(device: str = "cpu") -> dict:
    """CPU model, core counts, library versions and the torch device in use."""
    import numpy
    import sklearn
    import torch

    facts = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "sklearn": sklearn.__version__,
        "device": device,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if str(device).startswith("cuda") and torch.cuda.is_available():
        facts["gpu"] = torch.cuda.get_device_name(0)
    return facts


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (Linux ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Timer:
    """Wall-clock timer: ``with Timer() as t: ...; t.seconds``."""

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self._start


def run_one_json(script: str, *args) -> dict:
    """Run ``script --one ARGS`` in a fresh interpreter; parse its last line's JSON.

    Raises
    ------
    RuntimeError
        With the script's stderr, when it fails.
    """
    cmd = [sys.executable, script, "--one", *map(str, args)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def format_table(rows: list[dict]) -> str:
    """Rows of dicts as an aligned plain-text table (floats to 4 significant digits)."""
    if not rows:
        return "(no rows)"
    columns = list(dict.fromkeys(key for row in rows for key in row))

    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    cells = [[cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def report(
    name: str, rows: list[dict], *, title: str = "", params: dict | None = None, device="cpu"
) -> Path:
    """Print ``rows`` as a table and save them with the machine facts as JSON.

    Parameters
    ----------
    name : str
        File stem under ``benchmarks/results/``.
    rows : list of dict
        One dict per measured configuration.
    title : str
        Printed above the table.
    params : dict or None
        The benchmark's settings, saved alongside.
    device : str
        The torch device the sknce side ran on.

    Returns
    -------
    Path
        The JSON file written.
    """
    facts = machine_facts(device)
    print(f"\n{title or name}")
    print(f"machine: {facts['cpu']} ({facts['cores']} cores), torch {facts['torch']}, {device}")
    print(format_table(rows))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "name": name,
        "title": title,
        "params": params or {},
        "machine": facts,
        "rows": rows,
    }
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    print(f"saved {path.relative_to(RESULTS.parent.parent)}")
    return path
