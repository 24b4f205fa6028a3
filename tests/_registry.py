"""The one registry of the test suite: an entry per public estimator.

Each entry holds the settings every cross-estimator test reads (the common checks
and round trips, the property tests, the partial-fit-over-chunks test, the
2-process test), the kind of data the estimator takes, and how to fit it on that
data. ``tests/test_registry.py`` fails while an estimator of ``sknce._ESTIMATORS``
has no entry here or a consumer leaves one out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Kinds of data that carry no targets: ``fit(X)``.
UNSUPERVISED = ("counts", "tokens")


@dataclass(frozen=True)
class Mode:
    """Another way of fitting an estimator, for the tests that cover every mode (the
    export parity test, the continued-fit test).

    Parameters
    ----------
    params : dict
        Settings over the entry's ``params``.
    data : str or None, default=None
        The kind of data (``tests/test_common.py::_data``); ``None``: the entry's.
    """

    params: dict = field(default_factory=dict)
    data: str | None = None


@dataclass(frozen=True)
class Entry:
    """Test settings of one estimator and the data it takes.

    Parameters
    ----------
    params : dict
        Fast settings of the common checks, round trips and training-contract tests.
    data : str
        ``"counts"``, ``"tokens"``, ``"classification"``, ``"regression"`` or ``"groups"``.
    tiny : dict
        The smallest settings (property tests, with their common ``max_epochs=1`` ...).
    streaming : dict or None
        The estimator's own settings in the partial-fit-over-chunks test; ``None``:
        not part of it.
    distributed : dict
        The estimator's own settings in the 2-process test.
    grid : dict
        The grid of the grid-search round trip.
    modes : dict of str to Mode
        The estimator's other modes (regimes, outputs, kinds of input) that the tests of
        every mode fit besides ``params`` on ``data``.
    """

    params: dict
    data: str
    tiny: dict
    streaming: dict | None
    distributed: dict
    grid: dict = field(default_factory=lambda: {"max_epochs": [1, 2]})
    modes: dict = field(default_factory=dict)

    def all_modes(self) -> dict:
        """``{"default": Mode()}`` and :attr:`modes`."""
        return {"default": Mode(), **self.modes}

    @property
    def supervised(self) -> bool:
        """Whether ``fit`` takes targets."""
        return self.data not in UNSUPERVISED

    def fit(self, estimator, X, y=None, **kwargs):
        """``estimator.fit`` on ``X`` (and ``y`` when the estimator takes targets)."""
        return estimator.fit(X, y, **kwargs) if self.supervised else estimator.fit(X, **kwargs)

    def partial_fit(self, estimator, X, y=None, **kwargs):
        """``estimator.partial_fit`` on ``X`` (and ``y`` when it takes targets)."""
        if self.supervised:
            return estimator.partial_fit(X, y, **kwargs)
        return estimator.partial_fit(X, **kwargs)


REGISTRY: dict[str, Entry] = {
    # documents (Tosh et al.)
    "LandmarkNCEEmbedder": Entry(
        params=dict(n_landmarks=5, hidden_layer_sizes=(8,), max_epochs=2, random_state=0),
        data="counts",
        tiny=dict(n_landmarks=3, hidden_layer_sizes=(4,)),
        streaming=dict(n_landmarks=8),
        distributed=dict(n_landmarks=8, max_epochs=6),
        modes={
            "pair": Mode(dict(scorer="pair")),
            "exp": Mode(dict(output="exp", bag="counts")),
            "log-odds": Mode(dict(output="log-odds", hidden_layer_sizes=())),
            "standardized": Mode(dict(output="standardized", bag="tf")),
        },
    ),
    "DirectNCEEmbedder": Entry(
        params=dict(n_components=4, hidden_layer_sizes=(8,), max_epochs=2, random_state=0),
        data="counts",
        tiny=dict(n_components=2, hidden_layer_sizes=(4,)),
        streaming=dict(n_components=8),
        distributed=dict(n_components=8, max_epochs=6),
        modes={
            "raw": Mode(dict(output="raw", bag="tf")),
            "log1p": Mode(dict(bag="log1p", hidden_layer_sizes=(8, 6))),
        },
    ),
    # words (Bose & Cao)
    "ACEWord2Vec": Entry(
        params=dict(n_components=8, min_count=1, sample=0, max_epochs=1, n_jobs=1, random_state=0),
        data="tokens",
        tiny=dict(n_components=4, min_count=1, sample=0, window=2, n_jobs=1),
        streaming=None,  # partial_fit over a corpus: tests/words
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
        modes={
            "subwords": Mode(dict(subwords=True, min_n=2, max_n=3, bucket=50)),
            "tfidf": Mode(dict(weighting="tfidf")),
            "sif": Mode(dict(weighting="sif")),
            "nce": Mode(dict(adversarial=False, objective="nce")),
            "text": Mode(dict(early_stopping=True), "text"),
        },
    ),
    # conditional (Ma & Collins)
    "ConditionalNCEClassifier": Entry(
        params=dict(
            n_negatives=4,
            hidden_layer_sizes=(8,),
            max_epochs=10,
            batch_size=32,
            lr=0.05,
            random_state=0,
        ),
        data="classification",
        tiny=dict(n_negatives=2, hidden_layer_sizes=(4,)),
        streaming=dict(n_negatives=4, lr=0.02),
        distributed=dict(n_negatives=4, max_epochs=6, lr=0.02, early_stopping=True),
        modes={
            # fastText's regime: the bag encoder of a sparse X, trained by the compiled step
            "bag": Mode(dict(hidden_layer_sizes="auto", lr="auto", n_jobs=1), "sparse-counts"),
            "multilabel": Mode(data="multilabel"),
            "binary": Mode(dict(objective="binary", input_bias=True, self_normalization=0.1)),
        },
    ),
    "ConditionalNCERegressor": Entry(
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
        data="regression",
        tiny=dict(n_negatives=2, hidden_layer_sizes=(4,), embedding_dim=4, n_grid=16),
        streaming=dict(n_negatives=8, embedding_dim=8, n_grid=64, lr=0.02),
        # No early stopping: on the linear data of that test it would keep the starting
        # (ridge) density, and the test needs the network to train.
        distributed=dict(
            n_negatives=8, embedding_dim=8, n_grid=64, max_epochs=10, lr=0.02, early_stopping=False
        ),
        modes={
            "mode": Mode(dict(predict_method="mode")),
            "no-base": Mode(dict(base=None, predict_method="mean")),
        },
    ),
    # contrastive (Awasthi et al.)
    "LatentClassNCEEmbedder": Entry(
        params=dict(
            n_components=4, n_negatives=2, hidden_layer_sizes=(8,), max_epochs=2, random_state=0
        ),
        data="groups",
        tiny=dict(n_components=2, n_negatives=2, hidden_layer_sizes=(4,)),
        streaming=dict(n_components=8, n_negatives=4),
        distributed=dict(n_components=8, n_negatives=4, max_epochs=6),
        modes={
            "unscaled": Mode(dict(scaling="none")),
            "idf": Mode(dict(scaling="log1p-idf"), "sparse-counts"),
            "sparse-standard": Mode(dict(scaling="standard"), "sparse-counts"),
        },
    ),
}
