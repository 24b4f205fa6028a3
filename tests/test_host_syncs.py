"""Training makes no per-step host read-back on an accelerator.

Reading a device tensor back to the host (``.item()``, ``float()``, ``.tolist()``,
``.cpu()``) waits until the device has run everything queued before it. The
engine and its callbacks read the losses of a pass together on an accelerator
(:func:`sknce._engine.host_reads_are_free`). Without a GPU the tests make the CPU
count as an accelerator and count the read-backs of a fit: their number must not
grow with the number of training steps.
"""

from __future__ import annotations

import collections
import sys

import pytest
import torch
from test_common import ESTIMATORS, REGISTRY, _data

import sknce._callbacks
import sknce._engine

#: The ways of reading a tensor back to the host.
READS = ("item", "__float__", "__int__", "__bool__", "__index__", "tolist", "cpu")

#: torch's Adam reads its step counter, a tensor it keeps on the host (not on the
#: device) unless ``capturable=True``: no device sync, so not counted.
HOST_RESIDENT = ("torch/optim/",)

#: ACEWord2Vec trains with autograd (the path an accelerator takes) when the optimizer
#: has options; its compiled kernel runs on the CPU only.
AUTOGRAD = {"ACEWord2Vec": {"optimizer_kwargs": {"momentum": 0.0}}}

#: Batch sizes giving a few and many training steps per epoch.
BATCH_SIZES = {"ACEWord2Vec": (2000, 200)}


@pytest.fixture
def cpu_as_accelerator(monkeypatch):
    """Make the engine and its callbacks treat the CPU as an accelerator; count reads."""
    monkeypatch.setattr(sknce._engine, "host_reads_are_free", lambda device: False)
    monkeypatch.setattr(sknce._callbacks, "host_reads_are_free", lambda device: False)
    counts: collections.Counter = collections.Counter()
    for name in READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            caller = sys._getframe(1).f_code.co_filename.replace("\\", "/")
            if not any(part in caller for part in HOST_RESIDENT):
                counts[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return counts


def _fit_counting(name, batch_size, counts):
    params = {**REGISTRY[name].params, **AUTOGRAD.get(name, {})}
    estimator = ESTIMATORS[name](**{**params, "batch_size": batch_size, "max_epochs": 2})
    X, y = _data(REGISTRY[name].data)
    counts.clear()
    REGISTRY[name].fit(estimator, X, y)
    steps = sum(len(row["batches"]) for row in estimator.net_.history)
    return dict(counts), steps, estimator


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_host_reads_do_not_grow_with_the_training_steps(name, cpu_as_accelerator):
    few, many = BATCH_SIZES.get(name, (64, 16))
    reads_few, steps_few, _ = _fit_counting(name, few, cpu_as_accelerator)
    reads_many, steps_many, estimator = _fit_counting(name, many, cpu_as_accelerator)
    assert steps_many >= 2 * steps_few
    assert reads_many == reads_few
    # The losses read back at the end of each pass are all in the history.
    for row in estimator.net_.history:
        assert all("train_loss" in b or "valid_loss" in b for b in row["batches"])
        assert all(isinstance(b.get("train_loss", 0.0), float) for b in row["batches"])


def test_the_cpu_reads_each_loss_when_its_batch_ends():
    """On the CPU a callback sees the batch's loss in the history at on_batch_end."""
    from skorch.callbacks import Callback

    seen = []

    class LastLoss(Callback):
        def on_batch_end(self, net, training=False, **kwargs):
            if training:
                seen.append(net.history[-1, "batches", -1, "train_loss"])

    name = "DirectNCEEmbedder"
    X, _ = _data(REGISTRY[name].data)
    estimator = ESTIMATORS[name](**REGISTRY[name].params, callbacks=[LastLoss()]).fit(X)
    recorded = [
        b["train_loss"]
        for row in estimator.net_.history
        for b in row["batches"]
        if "train_loss" in b
    ]
    assert recorded and seen == recorded


def test_a_nan_loss_is_caught_within_the_check_period(cpu_as_accelerator):
    """On an accelerator the divergence guard reads losses every check_period batches."""
    from sknce._callbacks import DivergenceGuard
    from sknce.exceptions import TrainingDivergedError

    class Net:
        history = [{}]

    guard = DivergenceGuard(hint="Lower lr.", check_period=4)
    guard.pending_, guard.start_loss_ = [], None
    for _ in range(3):
        guard.on_batch_end(Net(), training=True, loss=torch.tensor(1.0))
    assert len(guard.pending_) == 3
    with pytest.raises(TrainingDivergedError, match="the training loss is nan"):
        guard.on_batch_end(Net(), training=True, loss=torch.tensor(float("nan")))
    guard.pending_ = [(torch.tensor(5e3), True)]
    with pytest.raises(TrainingDivergedError, match="loss reached 5000"):
        guard.on_epoch_end(Net())


def test_to_device_keeps_a_cpu_tensor_and_wraps_an_array():
    from sknce._data import to_device

    tensor = torch.arange(6)
    assert to_device(tensor, "cpu") is tensor
    array = tensor.numpy()
    wrapped = to_device(array, "cpu")
    assert wrapped.data_ptr() == tensor.data_ptr()  # no copy on the CPU


@pytest.mark.cuda
def test_to_device_copies_to_the_gpu_from_page_locked_memory():
    from sknce._data import csr_to_tensor, to_device

    array = torch.randn(64, 8).numpy()
    on_gpu = to_device(array, "cuda")
    assert on_gpu.is_cuda
    torch.testing.assert_close(on_gpu.cpu(), torch.from_numpy(array))
    import scipy.sparse as sp

    block = sp.random(16, 10, density=0.3, format="csr", dtype="float32", random_state=0)
    sparse = csr_to_tensor(block, "cuda")
    assert sparse.is_cuda and sparse.is_coalesced()
    torch.testing.assert_close(sparse.to_dense().cpu(), torch.from_numpy(block.toarray()))
