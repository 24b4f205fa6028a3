"""Every estimator trains, continues and exports where ``pytest --device`` says.

The registry's settings carry the suite's device (``tests/_registry.py``, set by
``--device`` in ``tests/conftest.py``); on the CPU these tests guard the switch itself,
and ``benchmarks/gpu_check.py`` runs them with ``--device cuda`` on a GPU.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from _registry import DEVICE
from test_common import ESTIMATORS, REGISTRY, TINY_FITS, _data

from sknce.export import to_torch_module, word_ids

ROOT = Path(__file__).resolve().parents[1]


def _on(device: torch.device) -> bool:
    """Whether ``device`` is the suite's (``cuda`` matches any index, as torch places it)."""
    wanted = torch.device(DEVICE)
    return device.type == wanted.type and wanted.index in (None, device.index)


def _devices(module: torch.nn.Module) -> set[torch.device]:
    return {t.device for t in (*module.parameters(), *module.buffers())}


def _exported(estimator) -> str:
    """The method whose output sknce.export's module computes by default (the first the
    estimator exports, ``BaseNCE._exported_methods``)."""
    return type(estimator)._exported_methods[0]


def test_every_setting_of_the_registry_names_the_suite_device():
    for name, entry in REGISTRY.items():
        for settings in (entry.params, entry.tiny, entry.streaming or {"device": DEVICE}):
            assert settings["device"] == DEVICE, name


@TINY_FITS
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_fit_trains_continues_and_exports_from_the_suite_device(name):
    entry = REGISTRY[name]
    X, y = _data(entry.data)
    estimator = entry.fit(ESTIMATORS[name](**entry.params), X, y)
    module = estimator.net_.module_
    assert _devices(module) and all(_on(d) for d in _devices(module)), _devices(module)
    assert np.all(np.isfinite(entry.output_of(estimator, X)))

    epochs = estimator.n_iter_
    before = [p.detach().clone() for p in module.parameters()]
    entry.partial_fit(estimator, X, y)
    assert estimator.n_iter_ == epochs + 1
    assert all(_on(d) for d in _devices(estimator.net_.module_))
    after = list(estimator.net_.module_.parameters())
    assert any(not torch.equal(b, a) for b, a in zip(before, after))  # the pass trained

    exported = to_torch_module(estimator)
    inputs = (
        torch.as_tensor(np.asarray(X.toarray() if hasattr(X, "toarray") else X, np.float32))
        if entry.data.array
        else word_ids(estimator, X)
    )
    assert {d.type for d in _devices(exported)} == {"cpu"}
    expected = getattr(estimator, _exported(estimator))(X)
    np.testing.assert_allclose(exported(inputs).numpy(), expected, rtol=1e-4, atol=1e-5)


#: Run where torch sees no GPU: unpickle each estimator and compare its output.
_LOAD_ON_CPU = """
import pickle, sys, warnings
import numpy as np, torch
assert not torch.cuda.is_available()
with open(sys.argv[1], "rb") as handle:
    cases = pickle.load(handle)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # skorch: the CUDA-trained net is mapped to the CPU
    for name, (blob, X, method, expected) in cases.items():
        out = getattr(pickle.loads(blob), method)(X)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5, err_msg=name)
print(len(cases))
"""


@TINY_FITS
@pytest.mark.cuda
def test_a_gpu_fit_pickles_and_predicts_where_there_is_no_gpu(tmp_path):
    cases = {}
    for name, cls in ESTIMATORS.items():
        entry = REGISTRY[name]
        X, y = _data(entry.data)
        estimator = entry.fit(cls(**{**entry.params, "device": "cuda"}), X, y)
        output = entry.output_of(estimator, X)
        cases[name] = (pickle.dumps(estimator), X, entry.output, output)
    path = tmp_path / "cases.pkl"
    path.write_bytes(pickle.dumps(cases))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, "-c", _LOAD_ON_CPU, str(path)], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [str(len(ESTIMATORS))]


def _collect(*options: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only"]
    env = {k: v for k, v in os.environ.items() if k != "SKNCE_TEST_DEVICE"}
    return subprocess.run(
        [*command, "-q", *options, "tests/test_device.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )


@pytest.mark.parametrize("device", ["cuda:x", "meta"])
def test_a_device_pytest_cannot_train_on_is_a_usage_error(device):
    result = _collect("--device", device)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--device takes cpu, cuda or cuda:N" in result.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has a CUDA device")
def test_cuda_without_a_gpu_is_a_usage_error_naming_the_fix():
    result = _collect("--device", "cuda")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "torch sees 0 CUDA device(s)" in result.stderr
    assert "leave --device out" in result.stderr
