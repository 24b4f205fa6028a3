"""Check every CUDA path of sknce and measure one benchmark per family, in one command.

Written for a borrowed GPU machine with no network and minutes of time in all: one
command installs what is missing, runs the suite's CUDA tests and its registry-driven
tests on the device, and measures each estimator family on the device against the same
benchmark on the CPU paths, writing its results as it goes. The steps, in order, each
with its own time budget (:data:`STEPS`); a step that would overrun the run's
``--budget`` is not run, and a step in a child process is killed at its budget:

==============  =========================================================================
step            what
==============  =========================================================================
install         the wheels of ``--wheels`` (``gpu_wheels.py``) into a temporary folder put
                first on the path; skipped without ``--wheels``
device          the device's name, memory and capability, torch's CUDA version, and a
                matrix product on it (in a child: this process never starts CUDA, so
                that its forked children can)
data            the Wikipedia excerpt parsed and the runners imported once, for every
                child to inherit
tests-cuda      ``pytest -m cuda``: every test marked for CUDA
words ...       one benchmark per family (``_gpu_families.py``): words, classifier,
latent          documents, multilabel, regressor, latent; each row with its fit time, a
                quality figure and its peak device memory
tests-device    ``pytest --device cuda`` on the registry-driven tests (the common checks
                and round trips, tests/test_device.py, partial_fit over chunks, host
                syncs): every estimator's fit, predict or transform, pickling,
                partial_fit and export on the device; it runs with what is left
==============  =========================================================================

Under ``--out``: ``gpu_check.json`` and ``gpu_check.md`` (rewritten after every step and
row, so a run killed at a time limit leaves what it measured) and ``gpu_check_tests.log``
(pytest's output). Exit status: 0 when every step ran and passed, 1 when one failed,
2 when one was not run (over the budget).

``--dry-run`` runs the same code on the CPU at tiny sizes (``device="cpu"``, a few
hundred rows, one or two epochs, a narrow choice of tests) in about a minute on an idle
machine; the test suite runs it (``tests/test_gpu_check.py``), so the script cannot rot
between GPUs.

Run on the GPU machine, from the repository's root, after ``gpu_wheels.py`` here::

    python3 benchmarks/gpu_check.py --wheels .whl --out "$OUT"

and here::

    .venv/bin/python benchmarks/gpu_check.py --dry-run --out /tmp/gpu_check
"""

from __future__ import annotations

import argparse
import importlib.metadata
import multiprocessing
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from _gpu_results import Results
from gpu_wheels import check_wheels, install

ROOT = Path(__file__).resolve().parents[1]

#: The run's budget in seconds: under 8 minutes with the set-up, and a dry run's.
BUDGET_S, DRY_BUDGET_S = 450.0, 1800.0
#: A dry run's limit on each step: its steps take seconds, so the limit only guards
#: against a hang, with room for a loaded machine.
DRY_STEP_BUDGET_S = 300.0
#: Seconds the run keeps back at the end to write its files and kill what is left.
RESERVE_S = 5.0
#: The distributions whose versions the facts record.
VERSIONS = (
    "torch", "numpy", "scipy", "scikit-learn", "skorch", "numba", "gensim", "fasttext-wheel",
)  # fmt: skip

#: ``pytest`` arguments of the test steps: the full run's, and the dry run's narrow choice.
CUDA_TESTS = (["-m", "cuda", "tests"], ["-m", "cuda", "tests/test_host_syncs.py"])
_REGISTRY_TEST_PATHS = [
    "tests/test_common.py",
    "tests/test_device.py",
    "tests/test_host_syncs.py",
    "tests/test_streaming.py::test_partial_fit_over_chunks_reaches_the_quality_of_a_whole_fit",
]
REGISTRY_TESTS = (
    _REGISTRY_TEST_PATHS,
    [*_REGISTRY_TEST_PATHS, "-k", "DirectNCEEmbedder and not check_"],
)


@dataclass
class Run:
    """One run: its arguments, results, clock and the environment of its subprocesses."""

    args: argparse.Namespace
    results: Results
    started: float
    env: dict = field(default_factory=lambda: dict(os.environ))

    @property
    def device(self) -> str:
        return self.args.device

    def left(self) -> float:
        """Seconds left of the run's budget."""
        return self.args.budget - (time.monotonic() - self.started)


# --- the steps ------------------------------------------------------------------------
def install_wheels(run: Run, budget: float) -> tuple[str, str]:
    """Install ``--wheels`` into a temporary folder put first on the path."""
    if run.args.wheels is None:
        return "skipped", "no --wheels: this environment's libraries"
    wheels = check_wheels(run.args.wheels)
    target = Path(tempfile.gettempdir()) / "sknce-gpu-check-site"
    install(wheels, target, timeout=budget)
    sys.path.insert(0, str(target))
    run.env["PYTHONPATH"] = os.pathsep.join([str(target), run.env["PYTHONPATH"]])
    return "ok", ", ".join(w.name for w in wheels)


def device_facts(device: str) -> Iterator[dict]:
    """The device's facts, and a matrix product on it (in a child)."""
    import torch

    facts = {"device": device, "torch_cuda": torch.version.cuda}
    if torch.device(device).type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"--device {device}, but torch sees no CUDA device")
        props = torch.cuda.get_device_properties(device)
        facts |= {
            "gpu": props.name,
            "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "capability": f"{props.major}.{props.minor}",
            "multiprocessors": props.multi_processor_count,
            "cudnn": torch.backends.cudnn.version(),
        }
    x = torch.randn(256, 256, device=device)
    gram = (x @ x.T).diagonal().cpu()
    if not bool(torch.all(gram > 0)):
        raise RuntimeError(f"a matrix product on {device} gave a non-positive Gram diagonal")
    yield facts
    yield facts.get("gpu", device)


def check_device(run: Run, budget: float) -> tuple[str, str]:
    facts = run.results.facts
    return in_child(budget, lambda: device_facts(run.device), lambda f: facts(**f))


def load_data(run: Run, budget: float) -> tuple[str, str]:
    """Import the runners and parse the Wikipedia excerpt, for the children to inherit."""
    import bench_multilabel  # noqa: F401
    import bench_real_documents  # noqa: F401
    import bench_real_latent  # noqa: F401
    import bench_real_regression  # noqa: F401
    import bench_vs_fasttext  # noqa: F401
    import bench_words  # noqa: F401
    import fasttext  # noqa: F401
    import torch._dynamo  # noqa: F401  (a process's first optimizer imports it: seconds)
    from _gpu_families import THREADS
    from _real_conditional_data import wiki_articles

    import sknce

    articles = wiki_articles()
    run.results.facts(sknce=sknce.__version__, cpu_threads=THREADS, **library_versions())
    return "ok", f"{len(articles)} articles, {sum(map(len, articles))} tokens"


def family_step(name: str) -> Callable[[Run, float], tuple[str, str]]:
    """The step that runs family ``name`` of ``_gpu_families`` in a child."""

    def step(run: Run, budget: float) -> tuple[str, str]:
        from _gpu_families import Plan, run_family

        plan = Plan(device=run.device, dry=run.args.dry_run)
        return in_child(budget, lambda: run_family(name, plan), run.results.row)

    return step


def pytest_step(arguments: tuple[list[str], list[str]], on_device: bool):
    """The step that runs pytest with ``arguments`` (full run's, dry run's)."""

    def step(run: Run, budget: float) -> tuple[str, str]:
        args = arguments[1] if run.args.dry_run else arguments[0]
        if on_device:
            args = ["--device", run.device, *args]
        return run_pytest(run, budget, args)

    return step


@dataclass(frozen=True)
class Step:
    """A step of the run: its name, budget (seconds, in a full run) and what it does."""

    name: str
    budget_s: float
    run: Callable[[Run, float], tuple[str, str]]
    #: A step every other needs: when it fails the run stops.
    required: bool = False
    #: A step that runs with what is left of the run's budget, up to its own.
    elastic: bool = False


STEPS = (
    Step("install", 60, install_wheels, required=True),
    Step("device", 45, check_device, required=True),
    Step("data", 45, load_data, required=True),
    Step("tests-cuda", 60, pytest_step(CUDA_TESTS, on_device=False)),
    Step("words", 120, family_step("words")),
    Step("classifier", 80, family_step("classifier")),
    Step("documents", 60, family_step("documents")),
    Step("multilabel", 70, family_step("multilabel")),
    Step("regressor", 30, family_step("regressor")),
    Step("latent", 40, family_step("latent")),
    Step("tests-device", 150, pytest_step(REGISTRY_TESTS, on_device=True), elastic=True),
)
OPTIONAL = [step.name for step in STEPS if not step.required]
#: A step's statuses beyond "ok" and "skipped" (not needed, e.g. install without wheels).
FAILED = ("failed", "timed out", "crashed")
NOT_RUN = "not run"  # over the budget, or after a required step failed


# --- children and subprocesses ---------------------------------------------------------
def _child(items: Callable[[], Iterator], connection) -> None:
    """In the child: send each item, then ``done`` or the error's traceback."""
    try:
        for item in items():
            connection.send(("item", item))
        connection.send(("done", None))
    except BaseException:
        connection.send(("error", traceback.format_exc(limit=-6)[-3000:]))
    finally:
        connection.close()


def in_child(budget: float, items: Callable[[], Iterator], receive: Callable) -> tuple[str, str]:
    """Run ``items()`` in a forked child, killed at ``budget`` seconds.

    A dict it yields goes to ``receive`` at once (a row, or facts), a str to the step's
    note; a row with an ``error`` fails the step.
    """
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    # not a daemon: joblib (sknce's n_jobs) runs one job in a daemonic process
    child = context.Process(target=_child, args=(items, writer))
    child.start()
    writer.close()
    deadline = time.monotonic() + budget
    notes, status = [], None
    while status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            status = "timed out"
            notes.append(f"killed at its budget of {budget:.0f} s")
        elif reader.poll(min(left, 1.0)):
            try:
                kind, item = reader.recv()
            except EOFError:
                status = "crashed"
                continue
            if kind == "done":
                status = "ok"
            elif kind == "error":
                status = "failed"
                notes.append(item)
            elif isinstance(item, dict):
                receive(item)
                if "error" in item:
                    notes.append(f"{item.get('system')} on {item.get('device')} failed")
            else:
                notes.append(item)
    child.kill()
    child.join()
    if status == "crashed":
        notes.append(f"the child ended with exit code {child.exitcode}")
    if status == "ok" and any(n.endswith(" failed") for n in notes):
        status = "failed"
    return status, "; ".join(notes)


_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")


def summarise_pytest(output: str) -> dict:
    """Counts of pytest's last summary line, and its failure and skip lines."""
    counts: dict = {}
    for line in reversed(output.splitlines()):
        if re.search(r" in [\d.]+s\b", line) and _SUMMARY.search(line):
            counts = {what: int(n) for n, what in _SUMMARY.findall(line)}
            break
    lines = output.splitlines()
    return {
        "counts": counts,
        "failures": [line for line in lines if line.startswith(("FAILED ", "ERROR "))],
        "skips": [line for line in lines if line.startswith("SKIPPED ")],
    }


def _pytest_workers() -> list[str]:
    """pytest-xdist's workers on a machine of 8 cores or more where it is installed."""
    import importlib.util

    cores = os.cpu_count() or 1
    if cores < 8 or importlib.util.find_spec("xdist") is None:
        return []
    return ["-n", str(min(8, cores // 2))]


def run_pytest(run: Run, budget: float, args: list[str]) -> tuple[str, str]:
    """pytest in a subprocess (its own process group, killed at ``budget``); log appended."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfEs"]
    command += ["--continue-on-collection-errors"]  # a module that fails leaves the rest
    command += [*_pytest_workers(), *args]
    log = run.results.out / "gpu_check_tests.log"
    with open(log, "a", encoding="utf-8") as handle:
        start = handle.tell()
        handle.write(f"\n===== {shlex.join(command)}\n")
        handle.flush()
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**run.env, "SCIPY_ARRAY_API": "1", "PYTHONUNBUFFERED": "1"},
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = process.wait(timeout=budget)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            code = process.wait()
            handle.write(f"\n===== killed at its budget of {budget:.0f} s\n")
    with open(log, encoding="utf-8") as handle:
        handle.seek(start)
        summary = summarise_pytest(handle.read())
    run.results.tests({"command": shlex.join(args), "exit_code": code, **summary})
    counts = ", ".join(f"{n} {what}" for what, n in summary["counts"].items())
    if code == -signal.SIGKILL:
        return "timed out", f"killed at its budget of {budget:.0f} s; see gpu_check_tests.log"
    return ("ok" if code == 0 else "failed"), counts or f"exit code {code}"


# --- facts and the run -----------------------------------------------------------------
def library_versions() -> dict:
    """Installed versions of :data:`VERSIONS` (those found)."""
    found = {}
    for name in VERSIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def machine_facts() -> dict:
    """The host, and the GPU as ``nvidia-smi`` sees it (without starting CUDA here)."""
    from _common import machine_facts as host

    facts = {k: v for k, v in host().items() if k not in ("device", "torch_threads")}
    facts["platform"] = platform.platform()
    facts["load_at_start"] = os.getloadavg()[0]
    if shutil.which("nvidia-smi"):
        query = "--query-gpu=name,driver_version,memory.total"
        smi = subprocess.run(
            ["nvidia-smi", query, "--format=csv,noheader"], capture_output=True, text=True
        )
        facts["nvidia_smi"] = smi.stdout.strip() or smi.stderr.strip()
    return facts


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="results folder ($OUT)")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU")
    parser.add_argument("--device", default=None, help="default: cuda (cpu for --dry-run)")
    parser.add_argument("--wheels", type=Path, default=None, help="folder of gpu_wheels.py")
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help=f"seconds for the whole run (default {BUDGET_S:.0f}; dry run {DRY_BUDGET_S:.0f})",
    )
    parser.add_argument(
        "--only", nargs="+", choices=OPTIONAL, default=None, help="run only these steps"
    )
    args = parser.parse_args(argv)
    args.device = args.device or ("cpu" if args.dry_run else "cuda")
    if not re.fullmatch(r"cpu|cuda(:\d+)?", args.device):
        parser.error(f"--device takes cpu, cuda or cuda:N; got {args.device!r}")
    args.steps = [s.name for s in STEPS if s.required or s.name in (args.only or OPTIONAL)]
    if args.budget is None:
        args.budget = DRY_BUDGET_S if args.dry_run else BUDGET_S
    if not args.budget > RESERVE_S:
        parser.error(f"--budget must exceed {RESERVE_S:.0f} seconds; got {args.budget}")
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out} is a file; name a folder")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    # torch's CUDA check by NVML, not by the CUDA runtime: a process that starts the
    # runtime cannot fork children that use CUDA, and the device's steps are such children
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    sys.path.insert(0, str(ROOT))  # this checkout's sknce
    header = {
        "name": "gpu_check",
        "mode": "dry run" if args.dry_run else "full",
        "device": args.device,
        "budget_s": args.budget,
        "command": shlex.join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
    }
    run = Run(args, Results(args.out, header), started)
    run.env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [run.env.get("PYTHONPATH")])]
    )
    run.results.facts(**machine_facts())
    statuses = [run_step(run, step) for step in STEPS if step.name in args.steps]
    run.results.facts(wall_s=round(time.monotonic() - started, 1))
    print(f"results: {run.results.json_path}, {run.results.markdown_path}", flush=True)
    if any(status in FAILED for status in statuses):
        return 1
    return 2 if NOT_RUN in statuses else 0


def run_step(run: Run, step: Step) -> str:
    """Run ``step`` within its budget and the run's, or record why not; its status."""
    budget = DRY_STEP_BUDGET_S if run.args.dry_run else step.budget_s
    left = run.left() - RESERVE_S
    if step.elastic:
        budget = min(budget, left)
    record = {"step": step.name, "budget_s": round(budget, 1)}
    failed = [s["step"] for s in run.results.data["steps"] if s["status"] in FAILED]
    required = [s.name for s in STEPS if s.required]
    if any(name in required for name in failed) or budget > left or budget <= 0:
        stopped = [name for name in failed if name in required]
        note = f"{stopped[0]} failed" if stopped else f"would overrun: {max(left, 0):.0f} s left"
        run.results.step({**record, "status": NOT_RUN, "note": note})
        return NOT_RUN
    print(f"[{run.args.budget - run.left():6.1f} s] {step.name} ...", flush=True)
    begun = time.monotonic()
    try:
        status, note = step.run(run, budget)
    except Exception:
        status, note = "failed", traceback.format_exc(limit=-4)[-3000:]
    record |= {"status": status, "wall_s": round(time.monotonic() - begun, 2), "note": note}
    run.results.step(record)
    print(f"    {status} in {record['wall_s']} s: {note[:300]}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
