"""The shared skorch plumbing: seeding, early stopping, history, verbosity, pickling."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone

from sknce._base import BaseNCE, ChanceAwareEarlyStopping, NCENet, resolve_device, seeded
from sknce._compat import _fit_context, check_is_fitted, validate_data
from sknce._data import BatchDataset, as_csr_or_dense, rows_to_tensor
from sknce.losses import ranking_nce
from sknce.nn import MLP
from sknce.noise import UniformNoise, remove_accidental_hits


class _ToyScorer(torch.nn.Module):
    """s(x, y) = h(x)ᵀ e_y with ranking NCE against uniform noise over labels."""

    def __init__(self, n_features, n_classes, n_negatives):
        super().__init__()
        self.encoder = MLP(n_features, (8,), 4)
        self.labels = torch.nn.Embedding(n_classes, 4)
        self.noise = UniformNoise(n_classes)
        self.n_negatives = n_negatives

    def scores(self, x):
        return self.encoder(x) @ self.labels.weight.T

    def forward(self, x, y):
        h = self.encoder(x)
        negatives = self.noise.sample((y.shape[0], self.n_negatives))
        pos = (h * self.labels(y)).sum(1)
        neg = torch.einsum("bd,bkd->bk", h, self.labels(negatives))
        neg = remove_accidental_hits(neg, y, negatives)
        return ranking_nce(pos, neg, self.noise.log_prob(y), self.noise.log_prob(negatives))


class ToyNCEClassifier(BaseNCE):
    """A minimal estimator on the shared base, used to test the base only."""

    _parameter_constraints = {**BaseNCE._parameter_constraints}

    def __init__(
        self,
        *,
        max_epochs=5,
        batch_size=32,
        lr=1e-2,
        optimizer=torch.optim.Adam,
        device="cpu",
        random_state=None,
        verbose=0,
        early_stopping=False,
        validation_fraction=0.2,
        patience=2,
    ):
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.optimizer = optimizer
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, accept_sparse="csr")
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        X = as_csr_or_dense(X)
        y_t = torch.as_tensor(y_enc)

        def make_batch(idx):
            return {"x": rows_to_tensor(X, idx), "y": y_t[idx]}, None

        seed, device = self._seed_and_device()
        with seeded(seed, device):
            module = _ToyScorer(X.shape[1], len(self.classes_), 3)
            self._fit_module(module, BatchDataset(X.shape[0], make_batch), seed, device)
        return self

    def predict(self, X):
        check_is_fitted(self)
        X = as_csr_or_dense(validate_data(self, X, accept_sparse="csr", reset=False))
        with torch.no_grad():
            scores = self.net_.module_.scores(rows_to_tensor(X, slice(None), self.net_.device))
        return self.classes_[scores.argmax(1).cpu().numpy()]


@pytest.fixture
def blobs():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=4, size=(4, 6))
    y = rng.integers(0, 4, size=200)
    X = centers[y] + rng.normal(size=(200, 6))
    return X.astype(np.float32), y


def _weights(est):
    return [p.detach().clone() for p in est.net_.module_.parameters()]


def test_same_random_state_same_fit_and_global_rng_untouched(blobs):
    X, y = blobs
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = ToyNCEClassifier(random_state=0).fit(X, y)
    assert torch.equal(torch.random.get_rng_state(), before)
    b = ToyNCEClassifier(random_state=0).fit(X, y)
    c = ToyNCEClassifier(random_state=1).fit(X, y)
    for wa, wb in zip(_weights(a), _weights(b)):
        assert torch.equal(wa, wb)
    assert any(not torch.equal(wa, wc) for wa, wc in zip(_weights(a), _weights(c)))


def test_learns_and_history(blobs):
    X, y = blobs
    est = ToyNCEClassifier(random_state=0, max_epochs=15).fit(X, y)
    assert (est.predict(X) == y).mean() > 0.9
    assert len(est.history_) == 15 == est.n_iter_
    assert est.history_[-1]["train_loss"] < est.history_[0]["train_loss"]


def test_sparse_input_matches_dense(blobs):
    X, y = blobs
    X = np.abs(X)
    dense = ToyNCEClassifier(random_state=0).fit(X, y)
    sparse = ToyNCEClassifier(random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.predict(X), sparse.predict(sp.csr_matrix(X)))


def test_early_stopping_restores_best_weights(blobs):
    X, y = blobs
    # A learning rate far too high makes the validation loss bounce, so the last
    # epoch is rarely the best; the restored weights must be the best epoch's.
    est = ToyNCEClassifier(
        random_state=0, early_stopping=True, patience=3, max_epochs=30, lr=0.5
    ).fit(X, y)
    valid = [row["valid_loss"] for row in est.history_]
    assert all(np.isfinite(valid))
    best = int(np.argmin(valid))
    assert len(valid) <= best + 1 + 3
    # Re-evaluating the validation loss with the restored weights gives the best value.
    net = est.net_
    _, ds_valid = net.get_split_datasets(net.get_dataset(_toy_dataset(X, y, est)), None)
    losses = []
    net.module_.eval()
    with seeded(net.valid_seed):
        for batch in net.get_iterator(ds_valid, training=False):
            with torch.no_grad():
                loss = float(net.module_(**batch[0]))
            losses.append(loss * len(batch[0]["y"]))
    assert np.isclose(sum(losses) / len(ds_valid), valid[best], rtol=1e-4)


def _toy_dataset(X, y, est):
    y_t = torch.as_tensor(np.searchsorted(est.classes_, y))
    return BatchDataset(
        X.shape[0], lambda idx: ({"x": rows_to_tensor(X, idx), "y": y_t[idx]}, None)
    )


def test_validation_loss_is_deterministic_across_epochs(blobs):
    X, y = blobs
    # With lr tiny the weights barely move: a validation loss with fixed negatives
    # is then (almost) constant, one with fresh negatives would jitter.
    est = ToyNCEClassifier(
        random_state=0, early_stopping=True, patience=50, max_epochs=4, lr=1e-9
    ).fit(X, y)
    valid = np.array([row["valid_loss"] for row in est.history_])
    np.testing.assert_allclose(valid, valid[0], rtol=1e-6)


def test_verbose_prints_progress_and_table(blobs, capsys):
    X, y = blobs
    ToyNCEClassifier(random_state=0, verbose=1, max_epochs=2).fit(X, y)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "train_loss" in text and "epoch" in text


def test_pickle_and_clone(blobs):
    X, y = blobs
    est = ToyNCEClassifier(random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    assert clone(est).get_params() == est.get_params()


def test_cuda_trained_net_loads_on_cpu(blobs):
    """skorch maps CUDA tensors to the CPU on unpickling when no GPU is present."""
    if torch.cuda.is_available():
        pytest.skip("the fallback is only exercised on a CPU-only machine")
    X, y = blobs
    est = ToyNCEClassifier(random_state=0).fit(X, y)
    expected = est.predict(X)
    # Pretend the net was trained on a GPU: skorch keys its map_location on this.
    est.net_.device = "cuda"
    with pytest.warns(UserWarning, match="CUDA"):
        again = pickle.loads(pickle.dumps(est))
    assert str(again.net_.device) == "cpu"
    np.testing.assert_array_equal(again.predict(X), expected)


def test_device_errors_are_clear():
    assert resolve_device("auto") in {"cpu", "cuda"}
    assert resolve_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='auto'"):
            resolve_device("cuda")


def test_early_stopping_needs_a_validation_example():
    X = np.eye(3, dtype=np.float32)
    with pytest.raises(ValueError, match="validation_fraction"):
        ToyNCEClassifier(early_stopping=True, validation_fraction=0.1).fit(X, [0, 1, 2])


def test_net_class_is_nce_net(blobs):
    X, y = blobs
    assert isinstance(ToyNCEClassifier(max_epochs=1).fit(X, y).net_, NCENet)


@pytest.mark.parametrize(
    ("chance", "stop_epoch", "best_epoch"),
    # Losses 0.70, 0.695, 0.69, 0.691, 0.692 sit at chance (log 2 = 0.693); 0.5 beats it.
    [(None, 5, 3), (np.log(2), 8, 6)],
)
def test_chance_aware_early_stopping_counts_from_the_first_epoch_below_chance(
    chance, stop_epoch, best_epoch
):
    from types import SimpleNamespace

    from skorch.history import History

    callback = ChanceAwareEarlyStopping(patience=2, chance=chance)
    net = SimpleNamespace(history=History(), verbose=0)
    callback.on_train_begin(net)
    stopped = None
    for epoch, loss in enumerate([0.70, 0.695, 0.69, 0.691, 0.692, 0.5, 0.6, 0.6, 0.4], 1):
        net.history.new_epoch()
        net.history.record("epoch", epoch)
        net.history.record("valid_loss", loss)
        try:
            callback.on_epoch_end(net)
        except KeyboardInterrupt:
            stopped = epoch
            break
    assert stopped == stop_epoch
    assert callback.best_epoch_ == best_epoch
