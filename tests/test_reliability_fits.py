"""Fits attacked as a red team would (issue 22): reproducibility at several torch
threads, continued fits after ``set_params``, ``partial_fit`` misuse, divergence in a
continued fit, and settings that cannot train, named before training starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.filterwarnings(
    "ignore:The validation loss never fell:sklearn.exceptions.ConvergenceWarning"
)

# --- reproducibility with two torch threads -------------------------------------------------
_TWO_THREADS = textwrap.dedent(
    """
    import hashlib, torch
    torch.set_num_threads(2)
    from sklearn.datasets import load_digits
    from sknce import DirectNCEEmbedder, LatentClassNCEEmbedder
    from sknce.datasets import make_topic_corpus

    X, y = load_digits(return_X_y=True)
    latent = LatentClassNCEEmbedder(max_epochs=1, early_stopping=False, random_state=0)
    corpus = make_topic_corpus(800, n_topics=3, n_words=200, mean_length=60, random_state=0)
    direct = DirectNCEEmbedder(
        n_components=64, batch_size=256, max_epochs=2, early_stopping=False, random_state=0
    )
    for Z in (latent.fit(X, y).transform(X), direct.fit(corpus.X).transform(corpus.X)):
        print(hashlib.sha256(Z.tobytes()).hexdigest())
    """
)


def test_fits_at_two_torch_threads_are_identical_in_separate_processes():
    """The backward of the negatives' gather added in a thread-dependent order (issue 22):
    three digits fits in three processes gave three outputs, and the neighbour-rate early
    stopping turned the last-bit differences into different numbers of epochs."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "2"}
    runs = [
        subprocess.run(
            [sys.executable, "-c", _TWO_THREADS],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for _ in range(2)
    ]
    assert len(runs[0]) == 2
    assert runs[0] == runs[1]


# --- continued fits after set_params ----------------------------------------------------------
import numpy as np  # noqa: E402
import torch  # noqa: E402
from _registry import CLASSIFICATION, COUNTS  # noqa: E402
from skorch.callbacks import Callback  # noqa: E402
from test_common import ESTIMATORS, REGISTRY, _data, _output  # noqa: E402
from test_training_contract import _assert_same_state, _fit, _make, _state  # noqa: E402
from torch import nn  # noqa: E402

from sknce import ConditionalNCEClassifier, DirectNCEEmbedder  # noqa: E402
from sknce.exceptions import TrainingDivergedError  # noqa: E402


def _partial_fit(estimator, name):
    X, y = _data(REGISTRY[name].data)
    return REGISTRY[name].partial_fit(estimator, X, y)


def _continue(estimator, name, how):
    if how == "partial_fit":
        return _partial_fit(estimator, name)
    return _fit(estimator.set_params(warm_start=True), name)


@pytest.mark.parametrize("how", ["warm_start", "partial_fit"])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_continued_fit_refuses_a_changed_network_parameter(name, how):
    estimator = _fit(_make(name), name) if how == "warm_start" else _partial_fit(_make(name), name)
    ((param, value),) = REGISTRY[name].network_change.items()
    estimator.set_params(warm_start=how == "warm_start", **{param: value})
    before = _state(estimator)
    with pytest.raises(ValueError, match=f"cannot honour the changed parameter.*{param}.*refit"):
        _continue(estimator, name, how)
    _assert_same_state(estimator, before)
    # set back, the fit continues
    estimator.set_params(**{param: _make(name).get_params()[param]})
    _continue(estimator, name, how)


class _Count(Callback):
    def initialize(self):
        self.epochs_ = getattr(self, "epochs_", 0)
        return self

    def on_epoch_end(self, net, **kwargs):
        self.epochs_ += 1


@pytest.mark.parametrize("how", ["warm_start", "partial_fit"])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_continued_fit_honours_new_callbacks_batch_size_and_optimizer(name, how):
    estimator = _fit(_make(name), name) if how == "warm_start" else _partial_fit(_make(name), name)
    counter = _Count()
    estimator.set_params(
        callbacks=[("count", counter)],
        batch_size=5,
        optimizer=torch.optim.SGD,
        optimizer_kwargs={"momentum": 0.5},
    )
    _continue(estimator, name, how)
    net = estimator.net_
    assert counter.epochs_ >= 1
    assert net.batch_size == 5
    assert isinstance(net.optimizer_, torch.optim.SGD)
    assert all(group["momentum"] == 0.5 for group in net.optimizer_.param_groups)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_diverging_partial_fit_leaves_the_estimator_exactly_as_before(name):
    estimator = _partial_fit(_make(name), name)
    X, _ = _data(REGISTRY[name].data)
    expected = _output(estimator, X)
    estimator.set_params(lr=1e12)
    before = _state(estimator)
    with pytest.raises(TrainingDivergedError):
        for _ in range(3):  # the latent-class guard needs its weights to run away
            _partial_fit(estimator, name)
    _assert_same_state(estimator, before)
    np.testing.assert_array_equal(_output(estimator, X), expected)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_diverging_warm_start_with_new_settings_leaves_the_net_as_before(name):
    estimator = _fit(_make(name), name)
    estimator.set_params(
        warm_start=True, lr=1e12, batch_size=7, callbacks=[_Count()], optimizer=torch.optim.SGD
    )
    before = _state(estimator)
    with pytest.raises(TrainingDivergedError):
        _fit(estimator, name)
    _assert_same_state(estimator, before)


def test_partial_fit_with_other_classes_later_is_an_error():
    X, y = _data(CLASSIFICATION)
    clf = ConditionalNCEClassifier(**REGISTRY["ConditionalNCEClassifier"].params)
    clf.partial_fit(X, y, classes=np.unique(y))
    before = _state(clf)
    with pytest.raises(ValueError, match=r"classes differ.*\[99\] added"):
        clf.partial_fit(X, y, classes=[*np.unique(y), 99])
    with pytest.raises(ValueError, match=r"classes differ.*missing"):
        clf.partial_fit(X, y, classes=np.unique(y)[:-1])
    _assert_same_state(clf, before)
    clf.partial_fit(X, y, classes=np.unique(y)[::-1])  # the same classes, in any order
    clf.partial_fit(X, y)


# --- settings that cannot train, named before training ----------------------------------------
@pytest.mark.parametrize(
    ("optimizer", "kwargs"),
    [
        (torch.optim.RMSprop, {}),
        (torch.optim.Adamax, {}),
        (torch.optim.Adagrad, {"weight_decay": 0.1}),
        (torch.optim.SGD, {"weight_decay": 0.1}),
    ],
)
@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: ConditionalNCEClassifier(**REGISTRY["ConditionalNCEClassifier"].params, **kw),
        lambda **kw: DirectNCEEmbedder(**REGISTRY["DirectNCEEmbedder"].params, **kw),
    ],
    ids=["classifier", "direct"],
)
def test_sparse_embeddings_with_an_optimizer_that_cannot_take_them_is_named(
    make, optimizer, kwargs
):
    estimator = make(sparse_embeddings=True, optimizer=optimizer, optimizer_kwargs=kwargs)
    X, y = _data(CLASSIFICATION if isinstance(estimator, ConditionalNCEClassifier) else COUNTS)
    with pytest.raises(
        ValueError, match=f"sparse_embeddings=True.*{optimizer.__name__}.*LazyAdam"
    ):
        estimator.fit(X, y)
    assert not hasattr(estimator, "net_")


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_capturable_on_the_cpu_is_named_before_training(name):
    estimator = _make(name, optimizer=torch.optim.Adam, optimizer_kwargs={"capturable": True})
    with pytest.raises(ValueError, match="capturable=True.*GPU.*Remove capturable"):
        _fit(estimator, name)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_an_accelerator_class_instead_of_an_instance_is_named(name):
    class Accelerator:  # has the methods of accelerate.Accelerator, as a class
        def prepare(self, *args):
            return args

        def unwrap_model(self, model):
            return model

    with pytest.raises(TypeError, match=r"accelerator must be an instance.*Accelerator\(\)"):
        _fit(_make(name, accelerator=Accelerator), name)


# --- user encoders ------------------------------------------------------------------------------
class _Rows(nn.Module):
    """Returns ``rows`` rows whatever the batch (e.g. a mean over the batch)."""

    def __init__(self, n_features):
        super().__init__()
        self.linear = nn.Linear(n_features, 4)

    def forward(self, x):
        out = self.linear(x)
        return out[:2] if x.shape[0] > 2 else out


class _Double(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.linear = nn.Linear(n_features, 4).double()

    def forward(self, x):
        return self.linear(x.double())


class _Integer(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.linear = nn.Linear(n_features, 4)

    def forward(self, x):
        return self.linear(x).argsort(dim=1)


class _NaN(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.linear = nn.Linear(n_features, 4)

    def forward(self, x):
        out = self.linear(x)
        return out * torch.log(x.abs().sum(1, keepdim=True) * 0) if self.training else out


ENCODER_FAULTS = [
    (_Rows, r"returned \(2, 4\) for a batch of shape \(\d+, \d+\).*one row per input row"),
    (_Double, r"torch.float64.*float32"),
    (_Integer, r"torch.int64.*float32"),
    (_NaN, r"NaN or infinite values on a training batch"),
]


@pytest.mark.parametrize(("encoder", "message"), ENCODER_FAULTS)
@pytest.mark.parametrize(
    "name",
    [
        "DirectNCEEmbedder",
        "ConditionalNCEClassifier",
        "ConditionalNCERegressor",
        "LatentClassNCEEmbedder",
    ],
)
def test_an_encoder_returning_the_wrong_thing_is_named(name, encoder, message):
    estimator = _make(name, encoder=encoder)
    with pytest.raises(ValueError, match=message):
        _fit(estimator, name)
    assert not hasattr(estimator, "net_")


class _NoWidth(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.LazyLinear(6), nn.ReLU(), nn.Linear(6, 4))

    def forward(self, x):
        return self.net(x)


class _BatchNorm(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_features, 6), nn.BatchNorm1d(6), nn.Linear(6, 4))

    def forward(self, x):
        return self.net(x)


@pytest.mark.parametrize(
    "name", ["DirectNCEEmbedder", "ConditionalNCERegressor", "LatentClassNCEEmbedder"]
)
def test_an_encoder_class_that_takes_no_width_is_built_without_one(name):
    estimator = _fit(_make(name, encoder=_NoWidth), name)
    X, _ = _data(REGISTRY[name].data)
    assert np.all(np.isfinite(_output(estimator, X)))


@pytest.mark.parametrize(
    "name", ["ConditionalNCEClassifier", "ConditionalNCERegressor", "LatentClassNCEEmbedder"]
)
def test_a_batchnorm_encoder_trains_through_a_last_batch_of_one_row(name):
    X, y = _data(REGISTRY[name].data)
    n = X.shape[0]
    # every training batch but the last has 8 rows: the last has one
    estimator = _make(name, encoder=_BatchNorm, early_stopping=False, batch_size=8)
    keep = n - (n % 8) + 1 if n % 8 != 1 else n
    estimator.fit(X[:keep], y[:keep])
    assert np.all(np.isfinite(_output(estimator, X)))
