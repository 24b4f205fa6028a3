"""The training engine on a toy estimator: seeding, early stopping, history, failure handling."""

import pickle
import threading

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted as sklearn_check_is_fitted
from skorch.callbacks import Callback

from sknce._base import BaseNCE, common_params
from sknce._callbacks import ChanceAwareEarlyStopping
from sknce._compat import check_is_fitted, validate_data
from sknce._data import Batch, SampledDataset, as_csr_or_dense, rows_to_tensor
from sknce._engine import NCENet, prefetched, resolve_device
from sknce._random import Seeds, seeded_init, torch_generator
from sknce.exceptions import TrainingDivergedError
from sknce.losses import RankingNCELoss
from sknce.nn import MLP
from sknce.noise import UniformNoise


class _ToySampler:
    """Each example against ``k`` uniformly drawn labels."""

    def __init__(self, X, y, n_classes, k=3):
        self.X, self.y, self.noise, self.k = X, torch.as_tensor(y), UniformNoise(n_classes), k

    def __len__(self):
        return self.X.shape[0]

    def __call__(self, rows, rng):
        labels = self.y[rows]
        negatives = self.noise.sample((len(rows), self.k), generator=torch_generator(rng))
        inputs = {"x": rows_to_tensor(self.X, rows), "labels": labels, "negatives": negatives}
        targets = {
            "pos_log_noise": self.noise.log_prob(labels),
            "neg_log_noise": self.noise.log_prob(negatives),
            "neg_mask": negatives != labels.unsqueeze(1),
        }
        return Batch(inputs, targets, size=len(rows))


class _ToyScorer(torch.nn.Module):
    """s(x, y) = h(x)ᵀ e_y."""

    def __init__(self, n_features, n_classes):
        super().__init__()
        self.encoder = MLP(n_features, (8,), 4)
        self.labels = torch.nn.Embedding(n_classes, 4)

    def scores(self, x):
        return self.encoder(x) @ self.labels.weight.T

    def forward(self, x, labels, negatives):
        h = self.encoder(x)
        pos = (h * self.labels(labels)).sum(1)
        neg = torch.einsum("bd,bkd->bk", h, self.labels(negatives))
        return {"pos": pos, "neg": neg}


class ToyNCEClassifier(BaseNCE):
    """A minimal estimator on the shared base, used to test the engine only."""

    _parameter_constraints = {**BaseNCE._parameter_constraints}

    def __init__(
        self,
        *,
        max_epochs=5,
        batch_size=32,
        lr=1e-2,
        optimizer=torch.optim.Adam,
        optimizer_kwargs=None,
        callbacks=None,
        warm_start=False,
        device="cpu",
        random_state=None,
        verbose=0,
        early_stopping=False,
        validation_fraction=0.2,
        patience=2,
        accelerator=None,
        n_jobs=None,
    ):
        super().__init__(**common_params(locals()))

    # the hooks of the fit skeleton
    def _validate_fit_data(self, X, y, *, reset, partial):
        return validate_data(self, X, y, accept_sparse="csr", reset=reset)

    def _start_fit(self, data, seeds):
        self.classes_ = np.unique(data[1])
        return data

    def _make_dataset(self, data, device):
        X, y = data
        y_enc = np.searchsorted(self.classes_, y)
        return SampledDataset(_ToySampler(as_csr_or_dense(X), y_enc, len(self.classes_)))

    def _make_module(self, data, seeds):
        return _ToyScorer(self.n_features_in_, len(self.classes_))

    def _make_objective(self):
        return RankingNCELoss()

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


def _same_weights(a, b):
    return all(torch.equal(wa, wb) for wa, wb in zip(_weights(a), _weights(b)))


def test_same_random_state_same_fit_and_global_rngs_untouched(blobs):
    X, y = blobs
    torch.manual_seed(123)
    np.random.seed(123)  # noqa: NPY002 (the legacy global state is what must stay untouched)
    before = torch.random.get_rng_state(), np.random.get_state()[1].copy()  # noqa: NPY002
    a = ToyNCEClassifier(random_state=0).fit(X, y)
    assert torch.equal(torch.random.get_rng_state(), before[0])
    np.testing.assert_array_equal(np.random.get_state()[1], before[1])  # noqa: NPY002
    b = ToyNCEClassifier(random_state=0).fit(X, y)
    c = ToyNCEClassifier(random_state=1).fit(X, y)
    assert _same_weights(a, b) and not _same_weights(a, c)


class _DrawsInItsConstructor(torch.nn.Module):
    """A user's module initialising itself with torch's random functions."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(5))
        self.b = torch.nn.Parameter(torch.empty(5).uniform_(-1, 1))
        self.c = torch.nn.Parameter(torch.randint(0, 9, (5,)).float())


def test_seeded_init_draws_torchs_defaults_from_the_fits_own_generator():
    seeds = Seeds(7)
    torch.manual_seed(seeds.int("init"))
    expected = [_ToyScorer(6, 4), _DrawsInItsConstructor()]
    state = torch.random.get_rng_state()
    with seeded_init(seeds):
        built = [_ToyScorer(6, 4), _DrawsInItsConstructor()]
    # The same numbers as torch's defaults after torch.manual_seed, but the global
    # generator was neither read nor advanced.
    assert torch.equal(torch.random.get_rng_state(), state)
    for module, reference in zip(built, expected):
        for a, b in zip(module.parameters(), reference.parameters(), strict=True):
            assert torch.equal(a, b)
    with seeded_init(Seeds(8)):
        other = _DrawsInItsConstructor()
    assert not torch.equal(other.a, built[1].a)


def test_fits_in_concurrent_threads_equal_sequential_fits(blobs):
    """Seeding is per fit: threads running fits side by side do not disturb each other."""
    X, y = blobs
    sequential = [ToyNCEClassifier(random_state=s, max_epochs=3).fit(X, y) for s in (0, 0, 1)]
    concurrent = [ToyNCEClassifier(random_state=s, max_epochs=3) for s in (0, 0, 1)]
    threads = [threading.Thread(target=est.fit, args=(X, y)) for est in concurrent]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for seq, con in zip(sequential, concurrent):
        assert _same_weights(seq, con)


def test_learns_and_history(blobs):
    X, y = blobs
    est = ToyNCEClassifier(random_state=0, max_epochs=15).fit(X, y)
    assert (est.predict(X) == y).mean() > 0.9
    assert len(est.history_) == 15 == est.n_iter_
    assert est.history_[-1]["train_loss"] < est.history_[0]["train_loss"]
    assert est.net_.estimator is est


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
    dataset = SampledDataset(_ToySampler(X, np.searchsorted(est.classes_, y), 4))
    _, valid_set = net.get_split_datasets(dataset)
    again = net.mean_loss(valid_set, net.seeds.numpy("valid"))
    assert np.isclose(again, valid[best], rtol=1e-5)


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


@pytest.mark.filterwarnings("ignore:Setting self.device = cpu:skorch.exceptions.DeviceWarning")
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


def test_early_stopping_without_training_examples_left_warns_and_trains_on_all():
    X = np.eye(3, dtype=np.float32)
    est = ToyNCEClassifier(early_stopping=True, validation_fraction=0.9)
    with pytest.warns(UserWarning, match="early stopping is off for this fit"):
        est.fit(X, [0, 1, 2])
    assert "valid_loss" not in est.history_[-1]


def test_net_class_is_nce_net(blobs):
    X, y = blobs
    assert isinstance(ToyNCEClassifier(max_epochs=1).fit(X, y).net_, NCENet)


def test_an_estimator_on_the_base_takes_sample_weight_as_scikit_learn_sees_it(blobs):
    """The base's fit declares sample_weight: a new estimator weighs without a wrapper."""
    from sklearn.utils.validation import has_fit_parameter

    X, y = blobs
    assert has_fit_parameter(ToyNCEClassifier(), "sample_weight")
    plain = ToyNCEClassifier(random_state=0, max_epochs=2).fit(X, y)
    weights = np.where(y == 0, 5.0, 1.0)
    weighted = ToyNCEClassifier(random_state=0, max_epochs=2).fit(X, y, sample_weight=weights)
    assert not _same_weights(plain, weighted)
    uniform = ToyNCEClassifier(random_state=0, max_epochs=2).fit(X, y, sample_weight=3 * y**0)
    assert _same_weights(plain, uniform)  # equal weights are the unweighted objective


def test_the_skeleton_decides_continuation_seeds_and_device_once_per_fit(blobs, monkeypatch):
    X, y = blobs
    calls = {"_continues": 0, "_new_seeds": 0, "_resolve_device": 0}
    for name in calls:
        original = getattr(BaseNCE, name)

        def counted(self, *args, _original=original, _name=name):
            calls[_name] += 1
            return _original(self, *args)

        monkeypatch.setattr(BaseNCE, name, counted)
    estimator = ToyNCEClassifier(random_state=0, max_epochs=1).fit(X, y)
    assert calls == {"_continues": 1, "_new_seeds": 1, "_resolve_device": 1}
    estimator.partial_fit(X, y)  # continues: the net's seeds and device
    assert calls == {"_continues": 2, "_new_seeds": 1, "_resolve_device": 1}


@pytest.mark.parametrize("param", ["max_epochs", "batch_size", "patience"])
def test_a_count_given_as_a_bool_is_a_clear_error(blobs, param):
    X, y = blobs
    estimator = ToyNCEClassifier(**{param: True})
    with pytest.raises(TypeError, match=f"{param} must be an int, got True"):
        estimator.fit(X, y)
    assert not hasattr(estimator, "net_")


def _stopped_epoch(callback, losses, start=None):
    """Run ``callback`` over epochs of held-out ``losses`` (from weights whose loss is
    ``start``, when given); the epoch it stopped training at, or None."""
    from types import SimpleNamespace

    from skorch.history import History

    net = SimpleNamespace(
        history=History(), verbose=0, mean_loss=lambda data, rng: start, epoch_rng=lambda s: None
    )
    callback.on_train_begin(net)
    for epoch, loss in enumerate(losses, 1):
        net.history.new_epoch()
        if start is not None:
            callback.on_epoch_begin(net, dataset_valid=object())
        net.history.record("epoch", epoch)
        net.history.record("valid_loss", loss)
        try:
            callback.on_epoch_end(net)
        except KeyboardInterrupt:
            return epoch
    return None


@pytest.mark.parametrize(
    ("chance", "stop_epoch", "best_epoch"),
    # Losses 0.70, 0.695, 0.69, 0.691, 0.692 sit at chance (log 2 = 0.693); 0.5 beats it.
    [(None, 5, 3), (np.log(2), 8, 6)],
)
def test_chance_aware_early_stopping_counts_from_the_first_epoch_below_chance(
    chance, stop_epoch, best_epoch
):
    callback = ChanceAwareEarlyStopping(patience=2, chance=chance)
    losses = [0.70, 0.695, 0.69, 0.691, 0.692, 0.5, 0.6, 0.6, 0.4]
    assert _stopped_epoch(callback, losses) == stop_epoch
    assert callback.best_epoch_ == best_epoch


@pytest.mark.parametrize(
    ("patient_start", "losses", "stop_epoch", "best_epoch"),
    [
        # from a start at 8.6 the held-out loss first rises, then falls below it
        (False, [9.7, 9.3, 8.72, 8.65, 8.62, 8.4, 8.3, 8.35, 8.36], 2, 0),
        (True, [9.7, 9.3, 8.72, 8.65, 8.62, 8.4, 8.3, 8.35, 8.36], 9, 7),
        # a fit whose loss stops falling before it beats the start is stopped as ever
        (True, [9.0, 8.9, 9.1, 9.2], 3, 0),
        (True, [9.0] * 6, 2, 0),
        # once an epoch has beaten the start, the misses count as ever
        (True, [8.0, 8.1, 8.2, 7.0], 3, 1),
    ],
)
def test_a_patient_start_counts_no_miss_before_the_first_epoch_that_beats_it(
    patient_start, losses, stop_epoch, best_epoch
):
    callback = ChanceAwareEarlyStopping(
        patience=2, threshold=1e-3, evaluate_initial=True, patient_start=patient_start
    )
    assert _stopped_epoch(callback, losses, start=8.6) == stop_epoch
    assert callback.initial_loss_ == 8.6
    assert callback.best_epoch_ == best_epoch


# --- failures ---------------------------------------------------------------------------
def test_a_diverging_fit_raises_and_keeps_the_previous_state(blobs):
    X, y = blobs
    est = ToyNCEClassifier(random_state=0, max_epochs=3).fit(X, y)
    weights, history, predictions = _weights(est), list(est.history_), est.predict(X)
    est.set_params(lr=1e12, warm_start=True)
    with pytest.raises(TrainingDivergedError, match=r"training diverged in epoch \d.*Lower lr"):
        est.fit(X, y)
    assert all(torch.equal(a, b) for a, b in zip(weights, _weights(est)))
    assert est.history_ == history and est.n_iter_ == 3
    np.testing.assert_array_equal(est.predict(X), predictions)
    fresh = ToyNCEClassifier(random_state=0, lr=1e12)
    with pytest.raises(TrainingDivergedError):
        fresh.fit(X, y)
    with pytest.raises(Exception, match="not fitted"):
        sklearn_check_is_fitted(fresh)


def test_a_refit_on_bad_input_keeps_the_previous_fit(blobs):
    X, y = blobs
    est = ToyNCEClassifier(random_state=0, max_epochs=2).fit(X, y)
    before = dict(vars(est))
    with pytest.raises(ValueError):
        est.fit(X[:, :3], y[:5])  # inconsistent lengths, after n_features_in_ would change
    assert vars(est).keys() == before.keys()
    assert all(vars(est)[k] is before[k] for k in before)


class _Interrupt(Callback):
    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == 2:
            raise KeyboardInterrupt


def test_an_interrupted_fit_keeps_the_network_trained_so_far(blobs):
    X, y = blobs
    est = ToyNCEClassifier(random_state=0, max_epochs=10, callbacks=[_Interrupt()]).fit(X, y)
    assert est.n_iter_ == len(est.history_) == 2
    assert (est.predict(X) == y).mean() > 0.5


class _BreakThenInterrupt(Callback):
    """After the first batch of epoch 3: a NaN weight, then an interrupt."""

    def on_batch_end(self, net, training=False, **kwargs):
        if training and len(net.history) == 3:
            with torch.no_grad():
                next(net.module_.parameters())[0] = float("nan")
            raise KeyboardInterrupt


def test_an_interrupted_fit_with_non_finite_weights_is_a_failed_fit(blobs):
    """The weights of an interrupted fit are checked as an epoch's are."""
    X, y = blobs
    est = ToyNCEClassifier(random_state=0, max_epochs=2).fit(X, y)
    est.set_params(warm_start=True)
    est.net_.callbacks_.append(("break", _BreakThenInterrupt()))
    state, weights = dict(vars(est)), _weights(est)
    with pytest.raises(TrainingDivergedError, match="'encoder.*' has non-finite values"):
        est.fit(X, y)
    assert vars(est).keys() == state.keys()
    assert all(vars(est)[k] is v for k, v in state.items())
    assert all(torch.equal(a, b) for a, b in zip(weights, _weights(est)))
    assert est.n_iter_ == len(est.net_.history) == 2


def test_prefetched_keeps_order_and_raises_the_producers_error():
    assert list(prefetched(iter(range(50)), depth=3)) == list(range(50))

    def broken():
        yield 1
        raise ValueError("boom")

    items = []
    with pytest.raises(ValueError, match="boom"):
        for item in prefetched(broken()):
            items.append(item)
    assert items == [1]
