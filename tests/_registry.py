"""The one registry of the test suite: an entry per public estimator.

An entry holds everything the cross-estimator tests need to know about an
estimator: the kind of data it takes (and how to make a small sample of it),
whether ``fit`` takes ``y``, the method whose output the round trips compare,
its task for a grid search, fast settings per test, a parameter that fixes its
network, how to judge a fit's quality, and the common checks it cannot pass.
The tests read these entries and nothing else: a new estimator, even with a new
kind of data, needs its entry here and no edit of a test.
``tests/test_registry.py`` fails while an estimator of ``sknce._ESTIMATORS`` has
no entry, or an entry disagrees with its estimator.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score

from sknce.datasets import make_topic_corpus


# --- kinds of data ----------------------------------------------------------------------
@dataclass(frozen=True)
class DataKind:
    """A kind of training data and how to make a sample of it.

    Parameters
    ----------
    name : str
    make : callable
        ``make(n_samples, seed) -> (X, y)``: ``n_samples`` examples in the form users
        pass (a sparse matrix of counts, token lists, an array), and their targets, or
        the labels an embedding of them is judged by (a document's topic).
    refused : callable
        ``refused(X, y) -> (X, y)``: data of this kind that a fit must refuse once it
        has reset what it learned from the previous data.
    array : bool, default=True
        Whether ``X`` is a 2-D array (the bad-input tests change its entries and shape).
    """

    name: str
    make: Callable[[int, int], tuple]
    refused: Callable[[object, object], tuple]
    array: bool = True


def _topic_counts(n_samples: int, seed: int) -> tuple:
    corpus = make_topic_corpus(
        n_samples, n_topics=3, n_words=60, mean_length=40, random_state=seed
    )
    return corpus.X, corpus.target


def _blobs(n_samples: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=2.5, size=(6, 5))
    y = rng.integers(0, 6, size=n_samples)
    return centers[y] + rng.normal(size=(n_samples, 5)), y


def _line(n_samples: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, 3))
    return X, X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=n_samples)


def _planted_words(n_samples: int, seed: int) -> tuple:
    """Two groups of words that never share a document: a planted similarity structure."""
    rng = np.random.default_rng(seed)
    groups = [[f"a{i}" for i in range(8)], [f"b{i}" for i in range(8)]]
    y = np.arange(n_samples) % 2
    return [list(rng.choice(groups[k], size=15)) for k in y], y


def _misshapen(X, y) -> tuple:
    return X[:, :2], y[:4]  # too few features, and fewer targets than rows


COUNTS = DataKind(
    "counts",
    _topic_counts,
    # negative counts, refused after n_features_in_ resets
    refused=lambda X, y: (-abs(X), y),
)
TOKENS = DataKind(
    "tokens",
    _planted_words,
    refused=lambda X, y: ([["a", "b"], 3], y),  # the second document is not a token list
    array=False,
)
CLASSIFICATION = DataKind("classification", _blobs, refused=_misshapen)
#: Points of latent classes (the classes are the groups, not targets to predict).
GROUPS = DataKind("groups", _blobs, refused=_misshapen)
REGRESSION = DataKind("regression", _line, refused=_misshapen)


def _label_sets(n_samples: int, seed: int) -> tuple:
    """Blobs and a label indicator: each row's class, and other labels at random."""
    X, y = _blobs(n_samples, seed)
    rng = np.random.default_rng(seed + 1)
    Y = (rng.random((n_samples, 6)) < 0.3).astype(np.int64)
    Y[np.arange(n_samples), y] = 1
    return X, Y


def _sentences(n_samples: int, seed: int) -> tuple:
    docs, y = _planted_words(n_samples, seed)
    return [" ".join(doc) for doc in docs], y


#: Multi-label targets: a 0/1 indicator of six labels, every row with one at least.
MULTILABEL = DataKind("multilabel", _label_sets, refused=_misshapen)


def _tagged_counts(n_samples: int, seed: int) -> tuple:
    """Topic counts and a label indicator: each row's topic, and labels each brought by
    a word of its own (the co-occurrence term's case)."""
    X, topic = _topic_counts(n_samples, seed)
    rng = np.random.default_rng(seed + 1)
    Y = (X[:, :4] > 0).toarray().astype(np.int64) | (rng.random((n_samples, 4)) < 0.1)
    return X, np.column_stack([np.eye(3, dtype=np.int64)[topic], Y])


#: Multi-label targets of counts (the bag encoder, the co-occurrence term).
TAGGED_COUNTS = DataKind("tagged-counts", _tagged_counts, refused=lambda X, y: (-abs(X), y))
#: Documents as strings (split by the estimator's tokenizer).
TEXT = DataKind("text", _sentences, refused=lambda X, y: (["a b", 3], y), array=False)


# --- how a fit is judged ----------------------------------------------------------------
def own_score(entry: Entry, estimator, X, y) -> float:
    """The estimator's ``score`` (accuracy, R², minus a contrastive loss)."""
    return estimator.score(X, y) if entry.takes_y else estimator.score(X)


def probe_accuracy(entry: Entry, estimator, X, y) -> float:
    """Cross-validated accuracy of a linear probe of ``y`` on the embedding of ``X``."""
    probe = LogisticRegression(max_iter=500)
    return float(cross_val_score(probe, estimator.transform(X), y, cv=3).mean())


@dataclass(frozen=True)
class Quality:
    """A measure of a fit, higher is better, and the level a trained fit passes.

    Parameters
    ----------
    measure : callable
        ``measure(entry, estimator, X, y) -> float``.
    floor : float
        Far from what an untrained model reaches (chance).
    """

    measure: Callable[..., float]
    floor: float


# --- checks of scikit-learn's that cannot pass -------------------------------------------
WEIGHTS_NOT_REPEATS = {
    check: "a weight scales an example's loss in each stochastic batch; repeating the "
    "example changes the batches and the negatives drawn, so the two fits differ (the "
    "weighted objectives are tested against brute force in tests/test_losses_sample_weight.py)"
    for check in (
        "check_sample_weight_equivalence_on_dense_data",
        "check_sample_weight_equivalence_on_sparse_data",
    )
}


# --- the entries -------------------------------------------------------------------------
#: The tasks of a grid search: a classifier or a regressor is searched by its own score,
#: a transformer through a linear probe of the labels, a density estimator by its score.
TASKS = ("classifier", "regressor", "transformer", "density")


@dataclass(frozen=True)
class Mode:
    """Another way of fitting an estimator, for the tests that cover every mode (the
    export parity test, the continued-fit test).

    Parameters
    ----------
    params : dict, default={}
        Settings over the entry's ``params``.
    data : DataKind or None, default=None
        The kind of data; ``None``: the entry's.
    first_call : callable or None, default=None
        What the first ``partial_fit`` call needs besides the data; ``None``: the entry's.
    """

    params: dict = field(default_factory=dict)
    data: DataKind | None = None
    first_call: Callable[[object], dict] | None = None


@dataclass(frozen=True)
class Entry:
    """What the cross-estimator tests know of one estimator.

    Parameters
    ----------
    data : DataKind
        The kind of data it fits.
    takes_y : bool
        Whether ``fit`` takes the data's ``y`` (else ``fit(X)``).
    output : str
        The method whose output the round trips compare (``"transform"``, ``"predict"``...).
    task : str
        One of :data:`TASKS`: how a grid search scores it.
    params : dict
        Fast settings of the common checks, round trips and training-contract tests.
    tiny : dict
        The smallest settings (property tests, with their common ``max_epochs=1`` ...).
    distributed : dict
        The estimator's own settings in the 2-process test.
    network_change : dict
        One parameter that fixes the network, with a value other than in ``params``: a
        continued fit must refuse the change.
    quality : tuple of Quality, default=()
        How a fit is judged where a test compares two fits (streamed or distributed
        against a whole one); every measure must hold.
    streaming : dict or None, default=None
        The estimator's own settings in the partial-fit-over-chunks test; ``None``:
        not part of it.
    passes : int, default=6
        Passes of that test over the chunks (and epochs of the whole fit).
    first_call : callable, default=no keywords
        ``first_call(y) -> dict``: what the first ``partial_fit`` call needs besides the
        data (a classifier's ``classes``).
    exact : dict, default={}
        Settings under which two ways of reaching the same epoch (a checkpoint resumed,
        a warm start) must give the same weights.
    expected_failed_checks : dict, default={}
        scikit-learn's common checks that cannot pass, each with the reason (also stated
        in the estimator's docstring).
    grid : dict, default={"max_epochs": [1, 2]}
        The grid of the grid-search round trip.
    modes : dict of str to Mode, default={}
        The estimator's other modes (regimes, outputs, kinds of input) that the tests of
        every mode fit besides ``params`` on ``data``.
    """

    data: DataKind
    takes_y: bool
    output: str
    task: str
    params: dict
    tiny: dict
    distributed: dict
    network_change: dict
    quality: tuple[Quality, ...] = ()
    streaming: dict | None = None
    passes: int = 6
    first_call: Callable[[object], dict] = lambda y: {}
    exact: dict = field(default_factory=dict)
    expected_failed_checks: dict = field(default_factory=dict)
    grid: dict = field(default_factory=lambda: {"max_epochs": [1, 2]})
    modes: dict = field(default_factory=dict)

    def all_modes(self) -> dict:
        """``{"default": Mode()}`` and :attr:`modes`."""
        return {"default": Mode(), **self.modes}

    def args(self, X, y) -> tuple:
        """The data arguments of ``fit``: ``(X, y)``, or ``(X,)`` when it takes no ``y``."""
        return (X, y) if self.takes_y else (X,)

    def fit(self, estimator, X, y=None, **kwargs):
        """``estimator.fit`` on ``X`` (and ``y`` when the estimator takes it)."""
        return estimator.fit(*self.args(X, y), **kwargs)

    def partial_fit(self, estimator, X, y=None, **kwargs):
        """``estimator.partial_fit`` on ``X`` (and ``y``); the first call of an unfitted
        estimator also passes :attr:`first_call`'s keywords."""
        if not hasattr(estimator, "net_"):
            kwargs = {**self.first_call(y), **kwargs}
        return estimator.partial_fit(*self.args(X, y), **kwargs)

    def output_of(self, estimator, X):
        """The output the round trips compare: ``estimator.<output>(X)``."""
        return getattr(estimator, self.output)(X)

    def assert_as_good(self, fit, reference, X, y, tolerance: float = 0.03) -> None:
        """Every :attr:`quality` measure on ``(X, y)``: ``fit`` within ``tolerance`` of
        ``reference`` or better, and both above the measure's floor."""
        for quality in self.quality:
            name = quality.measure.__name__
            reached = quality.measure(self, fit, X, y)
            expected = quality.measure(self, reference, X, y)
            assert reached >= expected - tolerance, (name, reached, expected)
            assert min(reached, expected) > quality.floor, (name, reached, expected)


def _classes(y) -> dict:
    return {"classes": np.unique(y)}


REGISTRY: dict[str, Entry] = {
    # documents (Tosh et al.)
    "LandmarkNCEEmbedder": Entry(
        data=COUNTS,
        takes_y=False,
        output="transform",
        task="transformer",
        params=dict(n_landmarks=5, hidden_layer_sizes=(8,), max_epochs=2, random_state=0),
        tiny=dict(n_landmarks=3, hidden_layer_sizes=(4,)),
        distributed=dict(n_landmarks=8, max_epochs=6),
        network_change={"n_landmarks": 7},
        # minus the contrastive loss on fixed fresh pairs (chance: -log 2 = -0.693)
        quality=(Quality(own_score, -0.66), Quality(probe_accuracy, 0.9)),
        streaming=dict(n_landmarks=8),
        exact={"early_stopping": False},
        expected_failed_checks=WEIGHTS_NOT_REPEATS,
        modes={
            "pair": Mode(dict(scorer="pair")),
            "exp": Mode(dict(output="exp", bag="counts")),
            "log-odds": Mode(dict(output="log-odds", hidden_layer_sizes=())),
            "standardized": Mode(dict(output="standardized", bag="tf")),
        },
    ),
    "DirectNCEEmbedder": Entry(
        data=COUNTS,
        takes_y=False,
        output="transform",
        task="transformer",
        params=dict(n_components=4, hidden_layer_sizes=(8,), max_epochs=2, random_state=0),
        tiny=dict(n_components=2, hidden_layer_sizes=(4,)),
        distributed=dict(n_components=8, max_epochs=6),
        network_change={"n_components": 3},
        quality=(Quality(own_score, -0.66), Quality(probe_accuracy, 0.9)),
        streaming=dict(n_components=8),
        exact={"early_stopping": False},
        expected_failed_checks=WEIGHTS_NOT_REPEATS,
        modes={
            "raw": Mode(dict(output="raw", bag="tf")),
            "log1p": Mode(dict(bag="log1p", hidden_layer_sizes=(8, 6))),
        },
    ),
    # words (Bose & Cao)
    "ACEWord2Vec": Entry(
        data=TOKENS,
        takes_y=False,
        output="transform",
        task="transformer",
        params=dict(n_components=8, min_count=1, sample=0, max_epochs=1, n_jobs=1, random_state=0),
        tiny=dict(n_components=4, min_count=1, sample=0, window=2, n_jobs=1),
        distributed=dict(
            n_components=8,
            min_count=1,
            sample=0,
            window=3,
            max_epochs=4,
            batch_size=200,
            adversarial=False,
            n_jobs=1,
            random_state=0,
        ),
        network_change={"n_components": 5},
        # partial_fit over a corpus: tests/words; the planted word groups: test_distributed
        exact={"min_lr_ratio": 1.0, "adversarial_warmup": 0.0, "n_jobs": 1},
        modes={
            "subwords": Mode(dict(subwords=True, min_n=2, max_n=3, bucket=50)),
            "tfidf": Mode(dict(weighting="tfidf")),
            "sif": Mode(dict(weighting="sif")),
            "nce": Mode(dict(adversarial=False, objective="nce")),
            "text": Mode(dict(early_stopping=True), TEXT),
        },
    ),
    # conditional (Ma & Collins)
    "ConditionalNCEClassifier": Entry(
        data=CLASSIFICATION,
        takes_y=True,
        output="predict",
        task="classifier",
        params=dict(
            n_negatives=4,
            hidden_layer_sizes=(8,),
            max_epochs=10,
            batch_size=32,
            lr=0.05,
            random_state=0,
        ),
        tiny=dict(n_negatives=2, hidden_layer_sizes=(4,)),
        distributed=dict(n_negatives=4, max_epochs=6, lr=0.02, early_stopping=True),
        network_change={"embedding_dim": 3},
        quality=(Quality(own_score, 0.9),),  # accuracy (chance 1/6)
        streaming=dict(n_negatives=4, lr=0.02),
        passes=10,
        first_call=_classes,
        # Early stopping restores the best epoch when a fit ends: a warm start continues
        # from there, not from the last epoch, once a validation loss has risen.
        exact={"early_stopping": False},
        expected_failed_checks=WEIGHTS_NOT_REPEATS,
        modes={
            # fastText's regime: the bag encoder of sparse counts, trained by the kernel
            "bag": Mode(dict(hidden_layer_sizes="auto", lr="auto", n_jobs=1), COUNTS),
            "multilabel": Mode(data=MULTILABEL, first_call=lambda y: {}),
            # the compiled one-vs-all bag of counts, with the co-occurrence term
            "multilabel-bag": Mode(
                dict(hidden_layer_sizes="auto", lr="auto", n_jobs=1, cooccurrence_weight=1.0),
                TAGGED_COUNTS,
                first_call=lambda y: {},
            ),
            "binary": Mode(dict(objective="binary", input_bias=True, self_normalization=0.1)),
        },
    ),
    "ConditionalNCERegressor": Entry(
        data=REGRESSION,
        takes_y=True,
        output="predict",
        task="regressor",
        params=dict(
            n_negatives=8,
            hidden_layer_sizes=(8,),
            embedding_dim=8,
            n_grid=64,
            max_epochs=20,
            batch_size=32,
            lr=0.02,
            random_state=0,
        ),
        tiny=dict(n_negatives=2, hidden_layer_sizes=(4,), embedding_dim=4, n_grid=16),
        # No early stopping: on the linear data of that test it would keep the starting
        # (ridge) density, and the test needs the network to train.
        distributed=dict(
            n_negatives=8, embedding_dim=8, n_grid=64, max_epochs=10, lr=0.02, early_stopping=False
        ),
        network_change={"embedding_dim": 3},
        quality=(Quality(own_score, 0.9),),  # R² (chance 0)
        streaming=dict(n_negatives=8, embedding_dim=8, n_grid=64, lr=0.02),
        # Its early stopping weighs the start (the linear base) too, and restores it after
        # the few epochs of the training-contract tests.
        exact={"early_stopping": False},
        expected_failed_checks={
            **{
                check: "score_samples(X, y) is the log-density of y given X; the check calls "
                "score_samples(X) (predict passes it; batch invariance is tested in "
                "tests/conditional)"
                for check in (
                    "check_methods_sample_order_invariance",
                    "check_methods_subset_invariance",
                    # run by scikit-learn with SCIPY_ARRAY_API=1 (.ci/test sets it)
                    "check_array_api_input",
                )
            },
            **{
                check: reason + "; and the base density's leave-one-out choice of the ridge "
                "penalty leaves an example out with its whole weight, not one repeat "
                "(tests/conditional/test_regressor_weights.py checks the weighted base by "
                "brute force)"
                for check, reason in WEIGHTS_NOT_REPEATS.items()
            },
        },
        modes={
            "mode": Mode(dict(predict_method="mode")),
            "no-base": Mode(dict(base=None, predict_method="mean")),
        },
    ),
    # contrastive (Awasthi et al.)
    "LatentClassNCEEmbedder": Entry(
        data=GROUPS,
        takes_y=True,
        output="transform",
        task="transformer",
        params=dict(
            n_components=4, n_negatives=2, hidden_layer_sizes=(8,), max_epochs=2, random_state=0
        ),
        tiny=dict(n_components=2, n_negatives=2, hidden_layer_sizes=(4,)),
        distributed=dict(n_components=8, n_negatives=4, max_epochs=6),
        network_change={"n_components": 3},
        quality=(Quality(probe_accuracy, 0.9),),  # chance 1/6
        streaming=dict(n_components=8, n_negatives=4),
        expected_failed_checks=WEIGHTS_NOT_REPEATS,
        modes={
            "unscaled": Mode(dict(scaling="none")),
            "idf": Mode(dict(scaling="log1p-idf"), COUNTS),
            "sparse-standard": Mode(dict(scaling="standard"), COUNTS),
        },
    ),
}


# --- the device of the registry's fits --------------------------------------------------
#: Where every fit of the registry's settings trains: ``pytest --device`` (tests/conftest.py
#: checks it and sets this variable; ``cpu`` without it).
DEVICE = os.environ.get("SKNCE_TEST_DEVICE", "cpu")


def _on_device(entry: Entry) -> Entry:
    """``entry`` with ``device=DEVICE`` in its single-process settings.

    The 2-process test's settings stay as they are: its processes take their device
    from the accelerator.
    """
    return replace(
        entry,
        params={**entry.params, "device": DEVICE},
        tiny={**entry.tiny, "device": DEVICE},
        streaming=None if entry.streaming is None else {**entry.streaming, "device": DEVICE},
    )


REGISTRY = {name: _on_device(entry) for name, entry in REGISTRY.items()}
