"""benchmarks/gpu_check.py: its dry run end to end, and its parts on bad input.

A GPU is lent to this project for minutes at a time, so the script that uses one must
work the first time: its dry run runs the same code on the CPU at tiny sizes here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
#: Python 3.12 warns when a process with threads forks; in_child forks on purpose (and
#: the test process, which has threads, forks only children that run plain Python).
FORKS = pytest.mark.filterwarnings("ignore:This process .* use of fork:DeprecationWarning")


@pytest.fixture
def bench(monkeypatch):
    """The benchmarks folder on the path (gpu_check and its modules import from there)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))


def _script(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SKNCE_TEST_DEVICE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, str(BENCHMARKS / "gpu_check.py"), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)


# --- the whole script -------------------------------------------------------------------
def test_the_dry_run_passes_every_step_and_measures_every_family(tmp_path, bench):
    pytest.importorskip("gensim")  # the corpora
    pytest.importorskip("fasttext")  # the classifiers' baseline
    import gpu_check
    from _gpu_families import FAMILIES

    result = _script("--dry-run", "--out", str(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    data = json.loads((tmp_path / "gpu_check.json").read_text())
    statuses = {step["step"]: step["status"] for step in data["steps"]}
    expected = {step.name: "ok" for step in gpu_check.STEPS}
    assert statuses == {**expected, "install": "skipped"}  # no --wheels: nothing to install
    rows = data["rows"]
    assert not [row for row in rows if "error" in row]
    for family in FAMILIES:
        mine = [row for row in rows if row["family"] == family]
        assert {row["side"] for row in mine} >= {"cpu", "device"}, family
        for row in mine:
            assert row["fit_s"] > 0 and row["row_s"] >= row["fit_s"], row
            assert isinstance(row["quality"], float) and row["metric"], row
    baselines = {row["family"] for row in rows if row["side"] == "baseline"}
    assert baselines == {"words", "classifier", "multilabel"}
    cuda_tests, device_tests = data["tests"]
    assert cuda_tests["counts"].get("skipped", 0) >= 1  # marked for CUDA, no GPU here
    assert all("needs a CUDA device" in line for line in cuda_tests["skips"])
    assert device_tests["counts"]["passed"] >= 3 and not device_tests["failures"]
    markdown = (tmp_path / "gpu_check.md").read_text()
    assert all(f"| {family} |" in markdown for family in FAMILIES)
    assert "tests/test_host_syncs.py" in (tmp_path / "gpu_check_tests.log").read_text()


def test_a_budget_too_small_runs_nothing_and_says_so(tmp_path):
    result = _script("--dry-run", "--out", str(tmp_path), "--budget", "6")
    assert result.returncode == 2, result.stderr[-2000:]
    steps = json.loads((tmp_path / "gpu_check.json").read_text())["steps"]
    assert steps and {step["status"] for step in steps} == {"not run"}
    assert all("would overrun" in step["note"] for step in steps)
    assert "| install | not run |" in (tmp_path / "gpu_check.md").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "0"], "--budget must exceed 5 seconds"),
        (["--budget", "nan"], "--budget must exceed 5 seconds"),
        (["--only", "everything"], "invalid choice: 'everything'"),
        (["--device", "tpu"], "--device takes cpu, cuda or cuda:N; got 'tpu'"),
        ([], "the following arguments are required: --out"),
    ],
)
def test_bad_arguments_are_refused_with_the_fix(tmp_path, args, message):
    out = [] if not args else ["--out", str(tmp_path)]
    result = _script(*out, *args)
    assert result.returncode == 2 and message in result.stderr
    assert not (tmp_path / "gpu_check.json").exists()


def test_an_out_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("{}")
    result = _script("--dry-run", "--out", str(path))
    assert result.returncode == 2 and "is a file; name a folder" in result.stderr
    assert path.read_text() == "{}"


# --- the wheels -------------------------------------------------------------------------
GOOD = [
    "skorch-1.4.0-py3-none-any.whl",
    "gensim-4.4.0-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
    "fasttext_wheel-0.9.2-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "smart_open-9.0.2-py3-none-any.whl",
]


def _folder(path: Path, names: list[str]) -> Path:
    path.mkdir(exist_ok=True)
    for name in names:
        (path / name).write_bytes(b"")
    return path


def test_one_wheel_of_each_needed_name_passes(tmp_path, bench):
    from gpu_wheels import check_wheels

    folder = _folder(tmp_path / "whl", [*GOOD, "README.txt"])
    found = check_wheels(folder)
    assert [p.name for p in found] == sorted(GOOD, key=lambda n: n.split("-")[0])


@pytest.mark.parametrize(
    ("gensim", "message"),
    [
        ("gensim-4.4.0-cp311-cp311-manylinux_2_28_x86_64.whl", "does not install on CPython"),
        ("gensim-4.4.0-cp312-cp312-win_amd64.whl", "does not install on CPython"),
        ("gensim-4.4.0-cp312-cp312-manylinux_2_28_aarch64.whl", "does not install on CPython"),
        ("gensim-4.4.0-cp312-cp312-macosx_11_0_arm64.whl", "does not install on CPython"),
        ("gensim-4.4.0-cp312-cp312-musllinux_1_2_x86_64.whl", "does not install on CPython"),
        ("gensim-4.4.0-pp310-pypy310_pp73-manylinux_2_28_x86_64.whl", "does not install"),
        ("gensim.whl", "is not a wheel's file name"),
    ],
)
def test_a_wheel_for_another_machine_is_named(tmp_path, bench, gensim, message):
    from gpu_wheels import check_wheels

    folder = _folder(tmp_path / "whl", [*GOOD[:1], *GOOD[2:], gensim])
    with pytest.raises(ValueError, match=message) as error:
        check_wheels(folder)
    assert gensim in str(error.value)


def test_two_versions_of_a_name_and_a_missing_name_are_refused(tmp_path, bench):
    from gpu_wheels import check_wheels

    two = _folder(tmp_path / "two", [*GOOD, "gensim-4.3.3-cp312-cp312-manylinux_2_17_x86_64.whl"])
    with pytest.raises(ValueError, match="two wheels of gensim.*keep one"):
        check_wheels(two)
    missing = _folder(tmp_path / "missing", GOOD[:3])
    with pytest.raises(ValueError, match=r"lacks the wheels of \['smart-open'\]"):
        check_wheels(missing)
    with pytest.raises(FileNotFoundError, match="gpu_wheels.py --dest"):
        check_wheels(tmp_path / "nowhere")


def _tiny_wheel(folder: Path) -> Path:
    """A pure-Python wheel of one module, ``sknce_probe`` (``VALUE = 42``)."""
    info = "sknce_probe-1.0.dist-info"
    files = {
        "sknce_probe.py": "VALUE = 42\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: sknce-probe\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    path = folder / "sknce_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in [*files, f"{info}/RECORD"]))
    return path


def test_install_puts_the_wheels_in_a_fresh_target(tmp_path, bench):
    from gpu_wheels import install

    wheel = _tiny_wheel(tmp_path)
    target = tmp_path / "site"
    (target / "stale").mkdir(parents=True)
    install([wheel], target, timeout=120)
    assert not (target / "stale").exists()
    probe = [sys.executable, "-c", "import sknce_probe; print(sknce_probe.VALUE)"]
    env = {**os.environ, "PYTHONPATH": str(target)}
    assert subprocess.run(probe, capture_output=True, text=True, env=env).stdout == "42\n"
    damaged = tmp_path / "damaged" / wheel.name
    damaged.parent.mkdir()
    damaged.write_bytes(b"not a zip file")
    with pytest.raises(subprocess.CalledProcessError):
        install([damaged], target, timeout=120)


# --- children, pytest's output, the results files ---------------------------------------
def _items(*items):
    def generate():
        for item in items:
            if callable(item):
                item()
            else:
                yield item

    return generate


def _raise():
    raise ValueError("the family broke")


@FORKS
@pytest.mark.parametrize(
    ("items", "status", "note"),
    [
        (_items({"system": "a"}, "a note"), "ok", "a note"),
        (_items({"system": "a"}, _raise), "failed", "ValueError: the family broke"),
        (_items({"system": "a", "device": "cuda", "error": "Tb"}), "failed", "a on cuda failed"),
        (_items({"system": "a"}, lambda: os._exit(3)), "crashed", "exit code 3"),
        (_items({"system": "a"}, lambda: time.sleep(60)), "timed out", "budget of 2 s"),
    ],
)
def test_a_child_sends_its_rows_until_it_ends_fails_crashes_or_overruns(
    bench, items, status, note
):
    from gpu_check import in_child

    received = []
    start = time.monotonic()
    got, text = in_child(2.0, items, received.append)
    assert (got, received[0]["system"]) == (status, "a")
    assert note in text
    assert time.monotonic() - start < 30


def test_pytest_output_gives_its_counts_failures_and_skips(bench):
    from gpu_check import summarise_pytest

    output = "\n".join(
        [
            "tests/test_a.py .F.s",
            "FAILED tests/test_a.py::test_b[cuda] - AssertionError: assert 1 == 2",
            "SKIPPED [1] tests/test_a.py:9: needs a CUDA device",
            "=== 1 failed, 2 passed, 1 skipped, 4 deselected, 1 warning in 3.21s (0:00:03) ===",
        ]
    )
    summary = summarise_pytest(output)
    assert summary["counts"] == {"failed": 1, "passed": 2, "skipped": 1, "deselected": 4}
    assert summary["failures"] == [output.splitlines()[1]]
    assert summary["skips"] == [output.splitlines()[2]]
    killed = summarise_pytest("tests/test_a.py ....\n===== killed at its budget of 9 s\n")
    assert killed == {"counts": {}, "failures": [], "skips": []}


def test_results_are_strict_json_and_markdown_after_every_row(tmp_path, bench):
    from _gpu_results import Results

    results = Results(tmp_path / "out", {"mode": "dry run", "device": "cpu"})
    results.row({"family": "words", "system": "a | b", "quality": float("nan"), "x": -1e400})
    results.step({"step": "words", "status": "ok", "wall_s": 1.0, "note": "two\nlines"})

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads(results.json_path.read_text(), parse_constant=refuse)
    assert data["rows"][0]["quality"] == "nan" and data["rows"][0]["x"] == "-inf"
    markdown = results.markdown_path.read_text()
    assert "| words | a / b |" in markdown and "| two lines |" in markdown
    assert sorted(p.name for p in results.out.iterdir()) == ["gpu_check.json", "gpu_check.md"]
