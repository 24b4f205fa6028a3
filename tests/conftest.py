"""Test-suite settings: one torch thread, the device of the registry's fits, the cuda marker.

``pytest --device cuda`` (or ``cuda:N``; default ``cpu``) trains every fit that takes its
settings from the registry (``tests/_registry.py``) on that device: the option is passed
on as the environment variable the registry reads, so the suite's subprocesses train
there too. Tests marked ``cuda`` are skipped where torch sees no CUDA device.
``benchmarks/gpu_check.py`` runs both on a GPU.
"""

import os

import pytest
import torch

torch.set_num_threads(1)

#: The variable ``tests/_registry.py`` reads the device from.
DEVICE_VARIABLE = "SKNCE_TEST_DEVICE"


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        default=None,
        help="where the registry's estimators train: cpu (default), cuda or cuda:N",
    )


def pytest_configure(config):
    device = config.getoption("--device")
    if device is None:
        device = os.environ.get(DEVICE_VARIABLE, "cpu")
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        parsed = None
    if parsed is None or parsed.type not in ("cpu", "cuda"):
        raise pytest.UsageError(f"--device takes cpu, cuda or cuda:N; got {device!r}.")
    if parsed.type == "cuda" and (parsed.index or 0) >= torch.cuda.device_count():
        raise pytest.UsageError(
            f"--device {device}: torch sees {torch.cuda.device_count()} CUDA device(s); "
            "run on a machine with a GPU, or leave --device out (cpu)."
        )
    os.environ[DEVICE_VARIABLE] = device


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)
