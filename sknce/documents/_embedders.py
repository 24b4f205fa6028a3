"""LandmarkNCEEmbedder and DirectNCEEmbedder: document embeddings by contrastive estimation.

Tosh, Krishnamurthy and Hsu (2021) train a classifier to tell whether two bags
of words are the two halves of one document or halves of two different
documents (Algorithm 1, Eq. 1). Its log-odds reveal the topic posterior:
the landmark embedding (Eq. 3) evaluates them against fixed landmark
documents, the direct embedding (Eq. 6) reads them off an encoder.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin

from sknce._bags import BAGS, normalize_bags, smooth_idf
from sknce._base import APPLIED, ENCODER_CONSTRAINT, FIXED, BaseNCE, Fixed, common_params
from sknce._callbacks import ChanceAwareEarlyStopping
from sknce._compat import Interval, StrOptions, check_is_fitted, validate_data
from sknce._data import SampledDataset, csr_to_tensor, first_chunk
from sknce._random import Seeds
from sknce._warnings import warn_caller
from sknce.documents._sampler import DocumentPairSampler
from sknce.documents._spectral import spectral_projection
from sknce.documents._split import SPLITS, split_documents
from sknce.losses import PairLogisticLoss
from sknce.nn import MLP, BilinearScorer, LinearSkipEncoder, PairScorer, output_dim
from sknce.nn._inference import (
    BagInput,
    Encoded,
    InferenceModule,
    LandmarkLogOdds,
    LeftEncoder,
    landmark_output_,
)

__all__ = ["DirectNCEEmbedder", "LandmarkNCEEmbedder"]

_COUNTS_FIX = (
    "Pass a matrix of word counts, such as sklearn.feature_extraction.text."
    "CountVectorizer returns (not TfidfVectorizer)."
)

#: exp overflows float32 above ~88.7; with ``clip=None`` the log-odds are capped here.
_MAX_LOG_ODDS = 80.0

#: Largest (documents x landmarks x hidden units) block built at once by the landmark
#: transform: 1 MiB of float32, cache-sized (see benchmarks/README.md, "Figures moved out
#: of the code").
_PAIR_BLOCK = 1 << 18

#: Gradient steps that ``max_epochs="auto"`` aims at.
_TARGET_STEPS = 400

#: Documents per matrix product of the bilinear landmark transform (a fixed shape).
_DOCUMENT_BLOCK = 256

#: Euclidean norm of LandmarkNCE's rows with ``output="normalized"``.
_LANDMARK_NORM = 10.0

#: Training documents (at most) whose log-odds give LandmarkNCE's column statistics.
_REFERENCE_DOCUMENTS = 1000

#: Euclidean norm of DirectNCE's rows with ``output="normalized"``.
_OUTPUT_NORM = 3.0

#: Early stopping from the spectral start: an epoch improves only if it lowers
#: the validation loss by more than this fraction (the slow drift of a plateau is not
#: progress). From a random start, skorch's default: long slow descents are.
_PLATEAU = {"spectral": 1e-3, "random": 1e-4}


def _check_counts(X, *, integer: bool, what: str = "X") -> None:
    """Raise a ValueError naming the fix for negative or non-integer counts."""
    data = X.data if sp.issparse(X) else X
    if data.size and np.min(data) < 0:
        raise ValueError(
            f"Negative values in data passed to {what}: word counts cannot be negative. "
            + _COUNTS_FIX
        )
    if integer and data.size and not np.all(np.equal(np.mod(data, 1), 0)):
        raise ValueError(
            f"{what} contains non-integer values; the contrastive task splits each document "
            "into its tokens, so it needs integer word counts. " + _COUNTS_FIX
        )


def _as_csr(X) -> sp.csr_matrix:
    """Counts as a canonical CSR matrix: a word's stored parts summed, as in a dense X."""
    X = sp.csr_matrix(X, dtype=np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


class _BaseDocumentNCE(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseNCE):
    """Shared contrastive task, fitting, scoring and input validation of the embedders."""

    _parameter_constraints: dict = {
        **BaseNCE._parameter_constraints,
        "max_epochs": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "split": [StrOptions(set(SPLITS))],
        "bag": [StrOptions(set(BAGS))],
        "sparse_embeddings": ["boolean"],
        "n_negatives": [Interval(Integral, 1, None, closed="left")],
        "hidden_layer_sizes": [tuple, list],
    }

    #: Roles of the parameters in a continued fit (see ``BaseNCE._param_roles``).
    _param_roles: dict = {
        **BaseNCE._param_roles,
        "split": APPLIED,
        "bag": APPLIED,
        "n_negatives": APPLIED,
        "output": APPLIED,
        "hidden_layer_sizes": FIXED,
        "n_components": FIXED,
        "sparse_embeddings": FIXED,
        "init": Fixed("set where the network started"),
    }

    #: A batch's negatives come from its other documents: training needs two of them.
    _min_train_examples = 2

    # --- subclass hooks ---------------------------------------------------------
    def _prepare(self, X: sp.csr_matrix, rng: np.random.Generator) -> None:
        """Set fitted attributes that depend on the data (before training)."""

    def _spectral_start(self) -> bool:
        """Whether training starts from the spectral solution (see ``_builtin_encoder``)."""
        return False

    #: Whether ``transform`` standardises with statistics of training documents.
    _output_statistics = False

    @contextlib.contextmanager
    def _output_fit(self, X: sp.csr_matrix | None) -> Iterator[None]:
        """Around training: fit what ``transform`` needs besides the network, from ``X``."""
        yield

    # --- sklearn plumbing -------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        # Counts are integer-valued: the common checks then feed rounded data (fit rejects
        # non-integer counts, which it must split into tokens).
        tags.input_tags.categorical = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _early_stopping(self) -> ChanceAwareEarlyStopping:
        start = "spectral" if self._spectral_start() else "random"
        return ChanceAwareEarlyStopping(
            patience=self.patience,
            load_best=True,
            chance=self._chance_loss(),
            threshold=_PLATEAU[start],
            evaluate_initial=True,
        )

    def _builtin_encoder(self, n_features: int, X: sp.csr_matrix, seeds: Seeds):
        """A constructor of the built-in encoder of a bilinear scorer (called once, or twice).

        Built from ``n_components``, ``init`` and ``hidden_layer_sizes``; twice when the
        scorer is not tied.
        """
        hidden = tuple(self.hidden_layer_sizes)
        sparse_grad = self.sparse_embeddings
        if self.init == "random":
            d = self.n_components
            return lambda: MLP(n_features, hidden, d, sparse_grad=sparse_grad)
        d = max(1, min(self.n_components, X.shape[0] - 1, n_features))
        # A child of the init stream: the stream itself seeds torch's layers.
        rng = seeds.numpy("init").spawn(1)[0]
        P = spectral_projection(X, d, self.split, self._bags, rng)
        return lambda: LinearSkipEncoder(n_features, d, hidden, weight=P, sparse_grad=sparse_grad)

    def _chance_loss(self) -> float:
        # Each document gives one positive and n_negatives negative pairs, so the best
        # constant guess is P(positive) = 1 / (1 + k) and its loss that binary entropy.
        p = 1.0 / (1 + self.n_negatives)
        return float(-(p * np.log(p) + (1 - p) * np.log1p(-p)))

    def _validate_counts(self, X, *, reset: bool, integer: bool):
        if not reset:
            check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=reset
        )
        _check_counts(X, integer=integer)
        return X

    def _usable(self, X: sp.csr_matrix, action: str) -> sp.csr_matrix:
        """Rows with at least two tokens; warn about the others."""
        lengths = np.asarray(X.sum(axis=1)).ravel()
        keep = lengths >= 2
        n_short = int((~keep).sum())
        if int(keep.sum()) < 2:
            raise ValueError(
                f"{action} needs at least 2 documents with 2 or more tokens to build pairs of "
                f"halves; got {int(keep.sum())} sample(s) usable out of {X.shape[0]}. "
                "Provide more (or longer) documents."
            )
        if n_short:
            warn_caller(
                f"{n_short} document(s) with fewer than 2 tokens cannot be split into two "
                f"halves; {action} skips them.",
                UserWarning,
            )
            X = X[keep]
        return X

    def _sampler(self, X: sp.csr_matrix, device: str) -> DocumentPairSampler:
        return DocumentPairSampler(X, self.split, self.bag, self.n_negatives, device, self.idf_)

    def _bags(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """The network's input for count rows (``bag``, with the fitted ``idf_``)."""
        return normalize_bags(X, self.bag, self.idf_)

    # --- the hooks of the fit skeleton --------------------------------------------
    _fits_streams = True
    _target_steps = _TARGET_STEPS

    def _check_params(self) -> None:
        self._check_hidden()

    def _validate_fit_data(self, X, y, *, reset: bool, partial: bool) -> sp.csr_matrix:
        X = self._validate_counts(X, reset=reset, integer=True)
        return self._usable(_as_csr(X), "partial_fit" if partial else "fit")

    def _start_fit(self, data: sp.csr_matrix, seeds: Seeds) -> sp.csr_matrix:
        self.idf_ = smooth_idf(data)
        self._prepare(data, seeds.numpy("prepare"))
        return data

    def _make_dataset(self, data: sp.csr_matrix, device: str) -> SampledDataset:
        return SampledDataset(self._sampler(data, device))

    def _example_weights(self, X, weights: np.ndarray) -> np.ndarray:
        # the documents _validate_fit_data keeps: 2 tokens or more
        counts = validate_data(self, X, accept_sparse="csr", reset=False)
        return weights[np.asarray(counts.sum(axis=1)).ravel() >= 2]

    def _make_objective(self) -> PairLogisticLoss:
        return PairLogisticLoss()

    def _training(self, data: sp.csr_matrix, device: str):
        return self._output_fit(data if self._output_statistics else None)

    def _scan_chunk(self, chunk, index: int, summary: dict, reset: bool) -> int:
        X = self._validate_counts(chunk, reset=reset, integer=True)
        usable = np.asarray(X.sum(axis=1)).ravel() >= 2
        n_usable = int(usable.sum())
        if n_usable < 2:
            raise ValueError(
                f"it has {n_usable} document(s) with 2 or more tokens; every chunk "
                "needs at least 2 to draw negative pairs from. Merge small chunks."
            )
        summary["n_short"] = summary.get("n_short", 0) + X.shape[0] - n_usable
        summary["n_documents"] = summary.get("n_documents", 0) + n_usable
        if reset or "document_frequency" in summary:  # a new fit counts the words' documents
            counts = _as_csr(X)[usable]
            df = np.bincount(counts.indices[counts.data > 0], minlength=X.shape[1])
            summary["document_frequency"] = summary.get("document_frequency", 0) + df
        return n_usable

    def _first_chunk(self, chunks) -> sp.csr_matrix:
        """The usable documents of the stream's first chunk."""
        return self._chunk_documents(first_chunk(chunks))

    def _start_stream(self, chunks, summary: dict, seeds: Seeds) -> sp.csr_matrix:
        """``idf_`` of every chunk; the landmarks, the start and the output statistics
        of the first."""
        self._warn_short(summary)
        n_documents, df = summary["n_documents"], summary["document_frequency"]
        self.idf_ = np.log((1.0 + n_documents) / (1.0 + df)) + 1.0
        first = self._first_chunk(chunks)
        self._prepare(first, seeds.numpy("prepare"))
        return first

    def _continue_stream(self, chunks, summary: dict) -> sp.csr_matrix | None:
        self._warn_short(summary)
        return self._first_chunk(chunks) if self._output_statistics else None

    def _warn_short(self, summary: dict) -> None:
        if summary.get("n_short"):
            warn_caller(
                f"{summary['n_short']} document(s) of the stream with fewer than 2 tokens "
                "cannot be split into two halves; fit skips them.",
                UserWarning,
            )

    def _chunk_documents(self, chunk) -> sp.csr_matrix:
        X = _as_csr(self._validate_counts(chunk, reset=False, integer=True))
        return X[np.asarray(X.sum(axis=1)).ravel() >= 2]

    def _chunk_dataset(self, chunk, device: str) -> SampledDataset:
        return SampledDataset(self._sampler(self._chunk_documents(chunk), device))

    def fit(self, X, y=None, sample_weight=None):
        """Fit the contrastive model on unlabeled documents, in memory or streamed in chunks.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_documents, n_words), or iterable of them
            Non-negative integer word counts. Documents with fewer than 2 tokens
            are skipped with a warning. A restartable iterable of blocks of rows
            (CSR or dense, the same words in every block; e.g.
            :class:`~sknce.datasets.NpzChunks`) fits on a corpus larger than memory:
            each epoch reads one chunk at a time (in a shuffled order when the
            iterable is a sequence) and draws its batches and negatives within it;
            early stopping holds out the last chunk; ``idf_`` counts every chunk;
            the landmarks, the spectral initialisation and the output statistics
            come from the first chunk. See :ref:`scaling`.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_documents,) or None, default=None
            Weight of each document: its positive pair and its negative pairs count
            that much in the loss (:mod:`sknce.losses`), after scaling the weights to
            mean 1. ``None``: 1. Not for a stream of chunks.

        Returns
        -------
        self
            The fitted embedder.
        """
        return super().fit(X, y, sample_weight=sample_weight)

    def partial_fit(self, X, y=None, sample_weight=None):
        """One pass of training over a chunk of documents, continuing the fitted network.

        The first call initialises the model (``idf_``, the landmarks, the spectral
        initialisation, an ``"auto"`` batch size) from ``X``; later calls keep the
        network and the optimizer's state. No validation split is held out and
        ``max_epochs`` is ignored: each call is one epoch over ``X``. LandmarkNCE's
        output statistics are refitted on each call's ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_documents, n_words)
            Non-negative integer word counts over the vocabulary of the first call.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_documents,) or None, default=None
            Weight of each document: its positive pair and its negative pairs count
            that much in the loss (:mod:`sknce.losses`), after scaling the weights to
            mean 1. ``None``: 1.

        Returns
        -------
        self
        """
        return super().partial_fit(X, y, sample_weight=sample_weight)

    @property
    def _scorer(self):
        return self.net_.module_

    _exported_methods = ("transform",)

    def _encode(self, X: sp.csr_matrix, side: str) -> torch.Tensor:
        """Encode normalised bags of ``X`` with one side of the scorer, in batches."""
        encode = self._scorer.encode_left if side == "left" else self._scorer.encode_right
        device = self.net_.device
        parts = []
        with torch.no_grad():
            for rows in self._batches(X.shape[0]):
                parts.append(encode(csr_to_tensor(self._bags(X[rows]), device)))
        return torch.cat(parts) if parts else torch.zeros((0, 0))

    def score(self, X, y=None) -> float:
        """Minus the mean contrastive loss (Eq. 1) on freshly sampled pairs of ``X``.

        The pairs are drawn as in training (same ``split`` and ``n_negatives``, each
        document paired with other documents of its batch) from the fit's own random
        stream, so repeated calls give the same value. Higher is better,
        which lets :class:`~sklearn.model_selection.GridSearchCV` choose
        hyperparameters without labels (Tosh et al., Section 7.4.2). Chance, the
        score of a constant guess, is minus ``history_[-1]["chance_loss"]``: the binary
        entropy of :math:`1 / (1 + k)` for ``k = n_negatives``, :math:`-\\ln 2 \\approx
        -0.6931` at ``n_negatives=1``; a score near it means nothing was learned.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_documents, n_words)
            Integer word counts; documents with fewer than 2 tokens are skipped.
        y : None
            Ignored.

        Returns
        -------
        float
        """
        X = self._validate_counts(X, reset=False, integer=True)
        X = self._usable(_as_csr(X), "score")
        dataset = SampledDataset(self._sampler(X, self.net_.device))
        return -self.net_.mean_loss(dataset, self._score_rng())

    def transform(self, X):
        """Embed documents.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_documents, n_words)
            Non-negative word counts (any document, including an empty one).

        Returns
        -------
        ndarray of shape (n_documents, n_features_out)
            In the dtype of ``X`` (float64 or float32).
        """
        X = self._validate_counts(X, reset=False, integer=False)
        dtype = torch.float64 if X.dtype == np.float64 else torch.float32
        out = self._embed(_as_csr(X), dtype)
        if not torch.isfinite(out.sum()):  # one cheap pass; the exact check names the rows
            out = self._finite_output(out, "transform")
        return out.numpy()


class LandmarkNCEEmbedder(_BaseDocumentNCE):
    r"""Landmark embedding of documents learned by contrastive estimation.

    A scorer :math:`f(x, x')` of a pair of bags of words is trained to tell whether the
    bags are two halves of one document (Tosh et al., 2021, Algorithm 1 and Eq. 1). A
    document is then embedded by its predictions against ``M`` fixed landmark
    documents. The paper's embedding exponentiates them,

    .. math::

        \hat\varphi(x) = \bigl(\exp \hat f(x, l_1), \dots, \exp \hat f(x, l_M)\bigr)
        \qquad \text{(Eq. 3)},

    which is, up to the estimation error, a linear function of the topic posterior
    :math:`E[w \mid x]` under a topic model (Theorem 2) (``output="exp"``). By default
    ``transform`` returns the log-odds :math:`\hat f(x, l_i)` themselves, each landmark's
    column standardised over training documents and each row scaled to a fixed norm
    (``output="normalized"``): the exponential makes a few large values dominate each
    column, which a regularised linear model on few labels uses poorly.

    By default the scorer is bilinear, :math:`f(x, x') = f_1(x)^\top f_1(x')`, with the
    encoder of :class:`DirectNCEEmbedder`'s defaults: a linear map of the sublinear
    tf-idf of the bag (``bag="log1p-idf"``) started at the spectral solution of the task
    (``init="spectral"``), trained with a small learning rate for about 400 gradient
    steps. The log-odds against the landmarks are then a matrix product. The paper's
    setting, a fully connected network of the pair (its first layer acts on the
    concatenation of both bags) on term frequencies, trained from PyTorch's
    initialisation, is ``LandmarkNCEEmbedder(scorer="pair", bag="tf",
    hidden_layer_sizes=(512, 512), lr=1e-3, batch_size=256, max_epochs=100,
    output="exp")``. Its ``transform`` computes the landmark side of the first layer
    once and runs the rest of the network on every (document, landmark) pair, in
    blocks of landmarks (see ``benchmarks/bench_documents_speed.py``).

    Read more in the :ref:`User Guide <documents>`.

    Parameters
    ----------
    n_landmarks : int, default=1000
        Number ``M`` of landmarks (ignored when ``landmarks`` is a matrix).
    landmarks : {"documents", "words"} or {array-like, sparse matrix}, default="documents"
        ``"documents"``: second halves (drawn with ``split``) of ``n_landmarks``
        training documents chosen at random; ``"words"``: ``n_landmarks``
        single-word documents drawn by corpus frequency (Section 6.2, needed by
        :func:`~sknce.documents.recover_topic_posterior`); or an explicit count
        matrix of shape ``(n_landmarks, n_words)``.
    scorer : {"bilinear", "pair"}, default="bilinear"
        The network :math:`f(x, x')`. ``"bilinear"``: :math:`f_1(x)^\top f_1(x')` with
        one encoder :math:`f_1` (``n_components``, ``init``, ``hidden_layer_sizes``), as
        :class:`DirectNCEEmbedder`'s tied encoder. ``"pair"``: the paper's fully
        connected network of the pair, ``hidden_layer_sizes`` wide (at least one hidden
        layer), from PyTorch's initialisation (``init`` and ``n_components`` unused).
    n_components : int, default=100
        Output width ``d`` of the bilinear scorer's encoder (``scorer="bilinear"``). With
        ``init="spectral"`` it is at most ``n_documents - 1`` and ``n_words``:
        ``n_components_ = min(n_components, n_documents - 1, n_words)``.
    init : {"spectral", "random"}, default="spectral"
        Start of the bilinear scorer's encoder, as in :class:`DirectNCEEmbedder`:
        ``"spectral"``: a :class:`~sknce.nn.LinearSkipEncoder` whose linear map starts
        at the top eigenvectors of the centred cross-covariance of the two halves of
        the training documents; ``"random"``: an :class:`~sknce.nn.MLP` with PyTorch's
        initialisation.
    split : {"both", "partition", "resample", "word"}, default="both"
        How a document is split into two halves: a random partition of its tokens,
        two bags drawn with replacement from its words, each with probability 1/2
        (``"both"``, the best in Section 7.2), or a single random word against the
        rest (``"word"``, Section 6.2, with single-word landmarks).
        See :func:`sknce.documents.split_documents`.
    bag : {"log1p-idf", "tf", "log1p", "counts"}, default="log1p-idf"
        Representation of each half (in training), of each document and of each
        landmark (in ``transform``) fed to the scorer: ``log(1 + count)`` times the
        smooth inverse document frequency of the training documents (``idf_``), each
        row scaled to unit Euclidean norm; ``"tf"``: term frequencies (the paper's,
        which make a half's scale independent of its length); ``"log1p"``;
        ``"counts"``.
    n_negatives : int, default=1
        Negative pairs per positive pair (1:1 as in Algorithm 1). Each negative pairs
        a document's first half with the second half of another document of the batch;
        splits and pairings are drawn afresh at every epoch.
    clip : float or None, default=None
        Bound :math:`g_{\max}` on :math:`\exp \hat f` (Assumption 2):
        :math:`\hat f` is clipped at :math:`\log g_{\max}`, whatever ``output``.
        ``None``: no bound (:math:`\hat f` is still capped at 80 so that
        :math:`\exp \hat f` stays finite).
    output : {"normalized", "standardized", "log-odds", "exp"}, default="normalized"
        What ``transform`` returns for each (document, landmark) pair:
        ``"standardized"``: :math:`(\hat f(x, l_i) - \mu_i) / \sigma_i`, with
        :math:`\mu_i, \sigma_i` (``output_mean_``, ``output_scale_``) the mean and
        standard deviation of landmark ``i``'s log-odds over (up to 1000, evenly
        spaced) training documents; ``"normalized"``: each row of the standardised
        log-odds scaled to Euclidean norm 10 (a scale at which ``LogisticRegression``'s
        default regularisation fits a few labels well); ``"log-odds"``:
        :math:`\hat f(x, l_i)`; ``"exp"``: :math:`\exp \hat f(x, l_i)`, Eq. (3), the
        embedding that :func:`~sknce.documents.recover_topic_posterior` inverts (it
        asks for it whatever this parameter says).
    hidden_layer_sizes : tuple of int, default=()
        Hidden layers (LayerNorm and ReLU). With ``scorer="bilinear"``: those of the
        encoder, a residual branch added to the linear map from the spectral start
        (``()``: a linear encoder); with ``scorer="pair"``: those of the network of
        the pair, at least one (the paper's ``(512, 512)``: the three fully connected
        layers of Sections 6.2 and 7.2).
    sparse_embeddings : bool, default=False
        Give the first layer's word weights sparse gradients (the rows of the words
        in the batch only), so that a step costs O(words in the batch) instead of
        O(vocabulary). Needs an optimizer that accepts sparse gradients:
        :class:`sknce.optim.LazyAdam` (Adam on the rows present), ``torch.optim.SGD``
        or ``torch.optim.Adagrad``.
    max_epochs : int or "auto", default="auto"
        Passes over the training data. ``"auto"``: about 400 gradient steps,
        ``clip(round(400 / steps_per_epoch), 5, 200)`` with ``steps_per_epoch`` the
        batches of training documents (after the validation ones are held out).
    batch_size : int or "auto", default="auto"
        Documents per gradient step (each gives ``1 + n_negatives`` pairs);
        ``"auto"``: ``clip(n_documents // 8, 16, 256)``, fixed at the first fit.
    lr : float, default=1e-4
        Learning rate of the optimizer (Adam). The spectral start is close to a good
        solution; the paper's :math:`10^{-3}` suits a random start.
    optimizer : torch optimizer class, default=torch.optim.Adam
        Any :class:`torch.optim.Optimizer` subclass, built on the network's parameters.
    optimizer_kwargs : dict or None, default=None
        Further options of the optimizer, e.g. ``{"weight_decay": 1e-4}`` (not ``lr``);
        a keyword the optimizer does not take is a ``ValueError``.
    callbacks : list of skorch callbacks or None, default=None
        :mod:`skorch.callbacks` (or ``(name, callback)`` pairs) run after sknce's own
        (divergence guard, early stopping, progress bar): e.g. ``Checkpoint`` with
        ``LoadInitState`` to resume a fit, ``LRScheduler``, ``EpochScoring``. A
        callback receives the skorch net; ``net.estimator`` is this estimator, whose
        outputs reflect the current epoch. See :ref:`customising`.
    warm_start : bool, default=False
        When already fitted, ``fit`` continues training the fitted network, with its
        optimizer state, for ``max_epochs`` more epochs instead of starting over.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
        Where the network trains; ``"auto"`` takes a GPU when one is present.
    random_state : int, RandomState instance or None, default=None
        Seeds the weights, splits, pairings, the validation split and the landmarks. An
        int makes a CPU fit reproducible, in any thread.
    verbose : int, default=0
        1 prints a progress bar and per-epoch losses.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the documents and stop when the
        contrastive loss on them (with fixed splits and pairings) has not improved
        for ``patience`` epochs, restoring the best weights (Section 7.2). The
        starting weights count as epoch 0. An epoch improves only if it lowers the
        best loss by more than 0.1% of it from the spectral start
        (``scorer="bilinear"``, ``init="spectral"``) and by more than 0.01% from a
        random start. Epochs count towards ``patience`` only once that loss is 1%
        below the loss of a constant guess (from a random start it can stay there for
        many epochs before it drops); a fit whose loss never gets there warns with a
        ``ConvergenceWarning``.
    validation_fraction : float, default=0.1
        Share of the training examples held out for early stopping.
    patience : int, default=10
        Epochs without improvement of the validation loss before training stops.
    accelerator : accelerate.Accelerator or None, default=None
        Train data-parallel over the processes of ``accelerate launch`` (or
        ``torchrun``), on the accelerator's device and in its mixed precision: every
        process runs the same fit on the same data, takes its share of each epoch's
        examples (``batch_size`` per process and step) and ends with the same model.
        ``device`` is then unused. Needs the ``distributed`` extra; see
        :ref:`scaling`.

    Attributes
    ----------
    landmarks_ : csr_matrix of shape (n_landmarks, n_words)
        The landmark documents (counts).
    idf_ : ndarray of shape (n_words,)
        Smooth inverse document frequencies of the words in the training documents,
        ``log((1 + n) / (1 + df)) + 1`` as in
        :class:`~sklearn.feature_extraction.text.TfidfTransformer` (used by
        ``bag="log1p-idf"``).
    output_mean_ : ndarray of shape (n_landmarks,)
        Mean log-odds of each landmark over the reference training documents.
    output_scale_ : ndarray of shape (n_landmarks,)
        Their standard deviation (1 where it is zero).
    n_features_in_ : int
        Vocabulary size seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.
    n_components_ : int
        Width of the bilinear scorer's encoder (see ``n_components``); absent with
        ``scorer="pair"``.
    net_ : NCENet
        The fitted skorch net; ``net_.module_`` is the :class:`~sknce.nn.BilinearScorer`
        (``scorer="bilinear"``) or the :class:`~sknce.nn.PairScorer` (``"pair"``).
    history_ : list of dict
        Per-epoch records of the skorch history: ``train_loss``, ``valid_loss`` with
        early stopping, ``dur``, and what callbacks record.
    n_iter_ : int
        Number of epochs run.

    See Also
    --------
    DirectNCEEmbedder : The direct embedding :math:`f_1(x)` (Eq. 6), cheaper to evaluate.
    sknce.documents.recover_topic_posterior : Topic posteriors from single-word landmarks.
    sklearn.decomposition.LatentDirichletAllocation : The topic model itself.

    Notes
    -----
    ``fit`` and ``score`` require integer counts (documents are split into their
    tokens) and raise a ``ValueError`` naming the fix on non-integer input;
    ``transform`` accepts any non-negative bag. The estimator declares the
    ``categorical`` input tag, so scikit-learn's common checks feed it rounded,
    integer-valued data. Two of
    scikit-learn's common checks are expected to fail,
    ``check_sample_weight_equivalence_on_dense_data`` and ``..._on_sparse_data``: a
    weight scales an example's loss in each stochastic batch, while repeating the
    example changes the batches and the negatives drawn, so the two fits differ.

    References
    ----------
    .. [1] C. Tosh, A. Krishnamurthy and D. Hsu, "Contrastive estimation reveals topic
       posterior information to linear models", JMLR 22(281), 2021. Algorithm 1,
       Eq. (1) (the loss), Eq. (3) (the landmark embedding), Assumption 2 (the
       bound :math:`g_{\max}`), Sections 6.2 and 7.2 (architecture and splits).

    Examples
    --------
    >>> from sknce import LandmarkNCEEmbedder
    >>> from sknce.datasets import make_topic_corpus
    >>> corpus = make_topic_corpus(300, n_topics=3, n_words=60, random_state=0)
    >>> emb = LandmarkNCEEmbedder(n_landmarks=20, n_components=8, random_state=0)
    >>> emb.fit_transform(corpus.X).shape
    (300, 20)
    """

    _parameter_constraints: dict = {
        **_BaseDocumentNCE._parameter_constraints,
        "n_landmarks": [Interval(Integral, 1, None, closed="left")],
        "landmarks": [StrOptions({"documents", "words"}), "array-like", "sparse matrix"],
        "scorer": [StrOptions({"bilinear", "pair"})],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"spectral", "random"})],
        "clip": [Interval(Real, 0, None, closed="neither"), None],
        "output": [StrOptions({"normalized", "standardized", "log-odds", "exp"})],
    }

    _param_roles: dict = {
        **_BaseDocumentNCE._param_roles,
        "clip": APPLIED,
        "n_landmarks": Fixed("chose the landmarks"),
        "landmarks": Fixed("chose the landmarks"),
        "scorer": FIXED,
    }

    _output_statistics = True

    def __init__(
        self,
        *,
        n_landmarks: int = 1000,
        landmarks="documents",
        scorer: str = "bilinear",
        n_components: int = 100,
        init: str = "spectral",
        split: str = "both",
        bag: str = "log1p-idf",
        n_negatives: int = 1,
        clip: float | None = None,
        output: str = "normalized",
        hidden_layer_sizes: tuple[int, ...] = (),
        sparse_embeddings: bool = False,
        max_epochs: int | str = "auto",
        batch_size: int | str = "auto",
        lr: float = 1e-4,
        optimizer=torch.optim.Adam,
        optimizer_kwargs: dict | None = None,
        callbacks: list | None = None,
        warm_start: bool = False,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 10,
        accelerator=None,
    ) -> None:
        super().__init__(**common_params(locals()))
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.scorer = scorer
        self.n_components = n_components
        self.init = init
        self.split = split
        self.bag = bag
        self.n_negatives = n_negatives
        self.clip = clip
        self.output = output
        self.hidden_layer_sizes = hidden_layer_sizes
        self.sparse_embeddings = sparse_embeddings

    def _check_hidden(self) -> tuple[int, ...]:
        sizes = super()._check_hidden()
        if not sizes and self.scorer == "pair":
            raise ValueError(
                "LandmarkNCEEmbedder(scorer='pair') needs at least one hidden layer: with "
                "hidden_layer_sizes=() f(x, x') would be additive in x and x' and carry "
                "no information about the pair. Use e.g. hidden_layer_sizes=(512, 512), "
                "or scorer='bilinear'."
            )
        return sizes

    def _spectral_start(self) -> bool:
        return self.scorer == "bilinear" and self.init == "spectral"

    def _make_module(self, X: sp.csr_matrix, seeds: Seeds) -> torch.nn.Module:
        """The scorer of a new fit; ``X`` are training documents (all, or the first chunk)."""
        n_features = self.n_features_in_
        if self.scorer == "pair":
            return PairScorer(
                n_features, tuple(self.hidden_layer_sizes), sparse_grad=self.sparse_embeddings
            )
        f1 = self._builtin_encoder(n_features, X, seeds)()
        scorer = BilinearScorer(f1)
        scorer.n_components = output_dim(f1, n_features)
        return scorer

    def _prepare(self, X: sp.csr_matrix, rng: np.random.Generator) -> None:
        if isinstance(self.landmarks, str) and self.landmarks == "documents":
            rows = rng.integers(0, X.shape[0], size=self.n_landmarks)
            _, second = split_documents(X[rows], self.split, rng)
            self.landmarks_ = sp.csr_matrix(second, dtype=np.float64)
        elif isinstance(self.landmarks, str) and self.landmarks == "words":
            freq = np.asarray(X.sum(axis=0)).ravel()
            words = rng.choice(X.shape[1], size=self.n_landmarks, p=freq / freq.sum())
            ones = np.ones(self.n_landmarks)
            self.landmarks_ = sp.csr_matrix(
                (ones, (np.arange(self.n_landmarks), words)), shape=(self.n_landmarks, X.shape[1])
            )
        else:
            L = self.landmarks
            L = _as_csr(L)
            if L.ndim != 2 or L.shape[1] != X.shape[1] or L.shape[0] < 1:
                raise ValueError(
                    f"landmarks given as a matrix must have shape (n_landmarks, {X.shape[1]}) "
                    f"(one row per landmark document, the vocabulary of X); got {L.shape}."
                )
            if not np.all(np.isfinite(L.data)):
                raise ValueError("landmarks contains NaN or infinity. " + _COUNTS_FIX)
            _check_counts(L, integer=False, what="landmarks")
            self.landmarks_ = L

    @contextlib.contextmanager
    def _output_fit(self, X: sp.csr_matrix | None) -> Iterator[None]:
        """Fit the column statistics on up to 1000 evenly spaced rows of ``X`` after training.

        While the network trains (a callback may call ``transform``), the statistics
        are computed from those documents with the network of the moment.
        """
        for name in ("output_mean_", "output_scale_"):
            if hasattr(self, name):
                delattr(self, name)
        n = X.shape[0]
        rows = np.unique(np.linspace(0, n - 1, min(n, _REFERENCE_DOCUMENTS)).round().astype(int))
        self._reference = X[rows]
        del X
        try:
            yield
            self.output_mean_, self.output_scale_ = self._reference_statistics()
        finally:
            del self._reference

    def _reference_statistics(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation (1 where zero) of each landmark's log-odds."""
        F = self._log_odds(self._reference).double()
        mean = F.mean(dim=0).numpy()
        std = F.std(dim=0, unbiased=False).numpy()
        negligible = std <= 1e-6 * np.maximum(1.0, np.abs(mean))
        return mean, np.where(negligible, 1.0, std)

    @property
    def _n_features_out(self) -> int:
        return self.landmarks_.shape[0]

    def _log_odds(self, X: sp.csr_matrix) -> torch.Tensor:
        """:math:`\\hat f(x, l_i)` of every document and landmark, capped (``clip``)."""
        out = torch.empty((X.shape[0], self.landmarks_.shape[0]))
        with torch.no_grad():
            for rows, block in self._log_odds_blocks(X):
                out[rows].copy_(block)
        return out

    def _log_odds_blocks(self, X: sp.csr_matrix) -> Iterator[tuple[slice, torch.Tensor]]:
        """Capped log-odds of consecutive blocks of documents against every landmark.

        Yields ``(rows, block)``; ``block`` (``rows`` by landmarks) is overwritten by the
        next block, so that the work on one stays in cache. Iterate under ``no_grad``.
        """
        cap = _MAX_LOG_ODDS if self.clip is None else math.log(self.clip)
        right = self._encode(self.landmarks_, "right")  # (M, H): computed once
        if isinstance(self._scorer, BilinearScorer):
            blocks = self._bilinear_blocks(X, right)
        else:
            blocks = self._pair_blocks(X, right)
        for rows, block in blocks:
            yield rows, block.clamp_(max=cap)

    def _bilinear_blocks(
        self, X: sp.csr_matrix, right: torch.Tensor
    ) -> Iterator[tuple[slice, torch.Tensor]]:
        """:math:`f_1(x)^\\top f_1(l_i)`: one matrix product per block of documents.

        Every product has the same shape (the last block is padded with zero rows), so
        its blocking and rounding, hence a document's output, do not depend on the
        other documents transformed with it, to the bit.
        """
        device = self.net_.device
        right_t = right.T.contiguous()  # (d, M)
        left = right.new_zeros((_DOCUMENT_BLOCK, right.shape[1]))
        out = right.new_empty((_DOCUMENT_BLOCK, right.shape[0]))
        for rows in self._batches(X.shape[0], _DOCUMENT_BLOCK):
            n = rows.stop - rows.start
            left[:n] = self._scorer.encode_left(csr_to_tensor(self._bags(X[rows]), device))
            left[n:] = 0.0
            yield rows, torch.mm(left, right_t, out=out)[:n]

    def _pair_blocks(
        self, X: sp.csr_matrix, right: torch.Tensor
    ) -> Iterator[tuple[slice, torch.Tensor]]:
        """The pair network's log-odds, landmark side cached, 256 documents per block."""
        scorer = self._scorer
        n_landmarks, width = right.shape
        # Pairs are evaluated one document at a time against blocks of landmarks small
        # enough to stay in cache (the hidden layers are memory-bound elementwise work plus
        # small GEMMs). Every block has the same shape whatever the batch, so a document's
        # output does not depend on the other documents transformed with it, to the bit.
        lm_chunk = min(n_landmarks, max(1, _PAIR_BLOCK // width))
        buffer = right.new_empty((lm_chunk, width))  # reused by every block
        out = right.new_empty((256, n_landmarks))
        device = self.net_.device
        for rows in self._batches(X.shape[0], 256):
            left = scorer.encode_left(csr_to_tensor(self._bags(X[rows]), device))
            for i in range(left.shape[0]):
                for j in range(0, n_landmarks, lm_chunk):
                    block = right[j : j + lm_chunk]
                    out[i, j : j + lm_chunk] = scorer.combine_block(
                        left[i], block, buffer[: block.shape[0]]
                    )
            yield rows, out[: left.shape[0]]

    def _embed(self, X: sp.csr_matrix, dtype: torch.dtype) -> torch.Tensor:
        out = torch.empty((X.shape[0], self.landmarks_.shape[0]), dtype=dtype)
        if self.output in ("standardized", "normalized"):
            if hasattr(self, "output_mean_"):
                mean, scale = self.output_mean_, self.output_scale_
            else:  # during training: statistics of the network of the moment
                mean, scale = self._reference_statistics()
            mean, scale = (torch.from_numpy(v).float().to(self.net_.device) for v in (mean, scale))
        else:
            mean = scale = None
        with torch.no_grad():  # each block's output computed in place, while it is in cache
            for rows, F in self._log_odds_blocks(X):
                out[rows].copy_(landmark_output_(F, self.output, mean, scale, _LANDMARK_NORM))
        return out

    def _inference_module(self, method: str) -> InferenceModule:
        """``transform``: the bags in torch, the log-odds against the landmarks' cached
        encodings, capped, in the form of ``output``."""
        with torch.no_grad():
            right = self._encode(self.landmarks_, "right").cpu()
        standardized = self.output in ("standardized", "normalized")
        body = LandmarkLogOdds(
            self._scorer,
            isinstance(self._scorer, BilinearScorer),
            right,
            _MAX_LOG_ODDS if self.clip is None else math.log(self.clip),
            self.output,
            self.output_mean_ if standardized else None,
            self.output_scale_ if standardized else None,
            _LANDMARK_NORM,
        )
        return InferenceModule(
            torch.nn.Sequential(BagInput(self.bag, self.idf_), body), self.n_features_in_
        )


class DirectNCEEmbedder(_BaseDocumentNCE):
    r"""Direct embedding of documents learned by contrastive estimation.

    An encoder :math:`f_1` is trained so that :math:`f(x, x') = f_1(x)^\top f_2(x')`
    tells whether two bags of words are the two halves of one document (Tosh et al.,
    2021, Eq. 6, with the logistic loss of Eq. 1, one negative pair per positive
    pair); a document is embedded by :math:`f_1(x)`. This is the practical variant of
    the landmark embedding (Section 7.1): one encoder evaluation per document.

    By default the encoder is linear and tied, :math:`f_1 = f_2`,
    :math:`f_1(x) = \mathrm{bag}(x)\, P`, with ``bag`` the sublinear tf-idf of the
    document (``bag="log1p-idf"``), and :math:`P` starts at the spectral solution of
    the task: the top eigenvectors of the cross-covariance of the two halves of a
    document, centred by halves of two documents (``init="spectral"``), which is where
    the logistic loss's gradient vanishes at small scores (the spectral contrastive
    loss of HaoChen et al., 2021). Training then runs the logistic loss from there,
    with a small learning rate, for about 400 gradient steps, and keeps the epoch
    (possibly the start) with the lowest held-out loss. Rows of the output are scaled
    to a fixed norm. The paper's setting, two MLPs on term frequencies trained from
    PyTorch's initialisation, is
    ``DirectNCEEmbedder(bag="tf", init="random", tied=False, output="raw",
    hidden_layer_sizes=(512, 512), lr=1e-3, batch_size=256, max_epochs=100)``.

    Read more in the :ref:`User Guide <documents>`.

    Parameters
    ----------
    n_components : int, default=100
        Output dimension ``d`` of the encoders. With ``init="spectral"`` it is at most
        ``n_documents - 1`` and ``n_words`` (the rank the data can determine):
        ``n_components_ = min(n_components, n_documents - 1, n_words)``.
    split : {"both", "partition", "resample", "word"}, default="both"
        How a document is split into two halves; see :class:`LandmarkNCEEmbedder`
        and :func:`sknce.documents.split_documents`.
    bag : {"log1p-idf", "tf", "log1p", "counts"}, default="log1p-idf"
        Representation of each half (in training) and of each document (in
        ``transform``) fed to the encoders: ``log(1 + count)`` times the smooth
        inverse document frequency of the training documents (``idf_``), each row
        scaled to unit Euclidean norm (``TfidfTransformer(sublinear_tf=True)`` up to
        ``log(1 + c)`` for ``1 + log(c)``); ``"tf"``: term frequencies (the paper's);
        ``"log1p"``; ``"counts"``.
    n_negatives : int, default=1
        Negative pairs per positive pair (1:1 as in Algorithm 1).
    init : {"spectral", "random"}, default="spectral"
        ``"spectral"``: the encoder is :class:`~sknce.nn.LinearSkipEncoder`, whose
        linear map :math:`P` starts at the top ``n_components_`` eigenvectors of the
        symmetrised, centred cross-covariance
        :math:`C = (A^\top B + B^\top A)/n - (a b^\top + b a^\top)` of the bags
        :math:`A, B` of the two halves of the training documents (one ``split`` draw;
        :math:`a, b` their column means; at most 50,000 documents drawn at random),
        column :math:`j` scaled by :math:`(w_j / w_1)^{1/2}` (eigenvalues
        :math:`w`), found by randomized subspace iteration; hidden layers add a
        residual branch whose output layer starts at zero. ``"random"``: an
        :class:`~sknce.nn.MLP` with PyTorch's initialisation (Sections 6.2 and 7.2).
        Unused with ``encoder``.
    tied : bool or "auto", default="auto"
        Use one encoder for both halves (:math:`f_2 = f_1`). ``"auto"``: tied for the
        built-in encoder, two encoders with ``encoder``.
    output : {"normalized", "raw"}, default="normalized"
        ``"normalized"``: each row of :math:`f_1(x)` scaled to Euclidean norm 3 (a
        scale at which ``LogisticRegression``'s default regularisation fits a few
        labels well; an empty document stays zero); ``"raw"``: :math:`f_1(x)`.
    hidden_layer_sizes : tuple of int, default=()
        Hidden layers (LayerNorm and ReLU) of the encoder: with ``init="spectral"``
        those of a residual branch added to the linear map; with ``init="random"``
        those of the MLP (the paper's ``(512, 512)``). ``()``: a linear encoder.
    encoder : torch.nn.Module instance or class, or None, default=None
        Your own encoder for :math:`f_1` and :math:`f_2`, replacing the built-in one:
        it maps a dense float32 batch of bags (``bag``), shape (batch, n_words), to
        (batch, d); sparse input is densified one batch at a time. A class is built
        with ``n_words`` (twice when not tied); an instance is copied (twice when not
        tied, the copy serving as :math:`f_2` re-initialised with ``reset_parameters``
        of its layers). ``n_components``, ``init`` and ``hidden_layer_sizes`` are then
        unused, ``n_components_`` is ``d``.
    sparse_embeddings : bool, default=False
        Sparse gradients for the encoders' word weights, with an optimizer such as
        :class:`sknce.optim.LazyAdam`; see :class:`LandmarkNCEEmbedder`.
    max_epochs : int or "auto", default="auto"
        Passes over the training data. ``"auto"``: about 400 gradient steps,
        ``clip(round(400 / steps_per_epoch), 5, 200)`` with ``steps_per_epoch`` the
        batches of training documents (after the validation ones are held out).
    batch_size : int or "auto", default="auto"
        Documents per gradient step (each gives ``1 + n_negatives`` pairs).
        ``"auto"``: ``clip(n_documents // 8, 16, 256)``, fixed at the first fit.
    lr : float, default=1e-4
        Learning rate of the optimizer (Adam). The spectral start is close to a good
        solution; the paper's :math:`10^{-3}` suits a random start.
    optimizer : torch optimizer class, default=torch.optim.Adam
        Any :class:`torch.optim.Optimizer` subclass, built on the network's parameters.
    optimizer_kwargs : dict or None, default=None
        Further options of the optimizer, e.g. ``{"weight_decay": 1e-4}`` (not ``lr``);
        a keyword the optimizer does not take is a ``ValueError``.
    callbacks : list of skorch callbacks or None, default=None
        :mod:`skorch.callbacks` (or ``(name, callback)`` pairs) run after sknce's own
        (divergence guard, early stopping, progress bar): e.g. ``Checkpoint`` with
        ``LoadInitState`` to resume a fit, ``LRScheduler``, ``EpochScoring``. A
        callback receives the skorch net; ``net.estimator`` is this estimator, whose
        outputs reflect the current epoch. See :ref:`customising`.
    warm_start : bool, default=False
        When already fitted, ``fit`` continues training the fitted network, with its
        optimizer state, for ``max_epochs`` more epochs instead of starting over.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
        Where the network trains; ``"auto"`` takes a GPU when one is present.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation, splits, pairings and the validation split. An int
        makes a CPU fit reproducible, in any thread.
    verbose : int, default=0
        1 prints a progress bar and per-epoch losses.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the documents and stop when the
        contrastive loss on them (with fixed splits and pairings) has not improved
        for ``patience`` epochs, restoring the best weights (Section 7.2). The
        starting weights count as epoch 0 (they are kept if no epoch improves on
        them). An epoch improves only if it lowers the best loss by more than 0.1% of
        it from the spectral start (``init="spectral"``), where the small steps from a
        good start would otherwise creep along a plateau, and by more than 0.01% from a
        random start. Epochs count towards ``patience`` only once that loss is 1% below
        the loss of a constant guess; a fit whose loss never gets there warns with a
        ``ConvergenceWarning``.
    validation_fraction : float, default=0.1
        Share of the training examples held out for early stopping.
    patience : int, default=10
        Epochs without improvement of the validation loss before training stops.
    accelerator : accelerate.Accelerator or None, default=None
        Train data-parallel over the processes of ``accelerate launch`` (or
        ``torchrun``), on the accelerator's device and in its mixed precision: every
        process runs the same fit on the same data, takes its share of each epoch's
        examples (``batch_size`` per process and step) and ends with the same model.
        ``device`` is then unused. Needs the ``distributed`` extra; see
        :ref:`scaling`.

    Attributes
    ----------
    n_components_ : int
        Width of the embedding (see ``n_components``, or the output of ``encoder``).
    idf_ : ndarray of shape (n_words,)
        Smooth inverse document frequencies of the words in the training documents,
        ``log((1 + n) / (1 + df)) + 1`` as in
        :class:`~sklearn.feature_extraction.text.TfidfTransformer` (used by
        ``bag="log1p-idf"``).
    n_features_in_ : int
        Vocabulary size seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.
    net_ : NCENet
        The fitted skorch net; ``net_.module_`` is the
        :class:`~sknce.nn.BilinearScorer` (``net_.module_.f1`` the encoder).
    history_ : list of dict
        Per-epoch records of the skorch history: ``train_loss``, ``valid_loss`` with
        early stopping, ``dur``, and what callbacks record.
    n_iter_ : int
        Number of epochs run.

    See Also
    --------
    LandmarkNCEEmbedder : The landmark embedding of Eq. (3).
    sklearn.decomposition.TruncatedSVD : A linear baseline on the same counts.

    Notes
    -----
    Input handling and the common checks are as for :class:`LandmarkNCEEmbedder`:
    integer counts in ``fit`` and ``score``; the same two sample-weight checks are
    expected to fail.

    References
    ----------
    .. [1] C. Tosh, A. Krishnamurthy and D. Hsu, "Contrastive estimation reveals topic
       posterior information to linear models", JMLR 22(281), 2021. Eq. (1) and
       Eq. (6), Sections 7.1 and 7.2.
    .. [2] J. Z. HaoChen, C. Wei, A. Gaidon and T. Ma, "Provable guarantees for
       self-supervised deep learning with spectral contrastive loss", NeurIPS 2021.
    .. [3] N. Halko, P.-G. Martinsson and J. A. Tropp, "Finding structure with
       randomness", SIAM Review 53(2), 2011 (randomized subspace iteration).

    Examples
    --------
    >>> from sknce import DirectNCEEmbedder
    >>> from sknce.datasets import make_topic_corpus
    >>> corpus = make_topic_corpus(300, n_topics=3, n_words=60, random_state=0)
    >>> emb = DirectNCEEmbedder(n_components=8, random_state=0)
    >>> emb.fit_transform(corpus.X).shape
    (300, 8)
    """

    _parameter_constraints: dict = {
        **_BaseDocumentNCE._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"spectral", "random"})],
        "tied": ["boolean", StrOptions({"auto"})],
        "output": [StrOptions({"normalized", "raw"})],
        "encoder": ENCODER_CONSTRAINT,
    }

    _param_roles: dict = {**_BaseDocumentNCE._param_roles, "tied": FIXED, "encoder": FIXED}

    def __init__(
        self,
        *,
        n_components: int = 100,
        split: str = "both",
        bag: str = "log1p-idf",
        n_negatives: int = 1,
        init: str = "spectral",
        tied: bool | str = "auto",
        output: str = "normalized",
        hidden_layer_sizes: tuple[int, ...] = (),
        encoder=None,
        sparse_embeddings: bool = False,
        max_epochs: int | str = "auto",
        batch_size: int | str = "auto",
        lr: float = 1e-4,
        optimizer=torch.optim.Adam,
        optimizer_kwargs: dict | None = None,
        callbacks: list | None = None,
        warm_start: bool = False,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 10,
        accelerator=None,
    ) -> None:
        super().__init__(**common_params(locals()))
        self.n_components = n_components
        self.split = split
        self.bag = bag
        self.n_negatives = n_negatives
        self.init = init
        self.tied = tied
        self.output = output
        self.hidden_layer_sizes = hidden_layer_sizes
        self.encoder = encoder
        self.sparse_embeddings = sparse_embeddings

    def _spectral_start(self) -> bool:
        return self.encoder is None and self.init == "spectral"

    def _make_module(self, X: sp.csr_matrix, seeds: Seeds) -> torch.nn.Module:
        """The scorer of a new fit; ``X`` are training documents (all, or the first chunk)."""
        n_features = self.n_features_in_
        default = None if self.encoder is not None else self._builtin_encoder(n_features, X, seeds)
        f1, width = self._make_encoder(n_features, default)
        tied = self.encoder is None if self.tied == "auto" else bool(self.tied)
        f2 = None
        if not tied:
            f2, _ = self._make_encoder(n_features, default)
            if self.encoder is not None and not isinstance(self.encoder, type):
                # Two copies of one instance: start f2 elsewhere than f1.
                for layer in f2.modules():
                    if hasattr(layer, "reset_parameters"):
                        layer.reset_parameters()
        scorer = BilinearScorer(f1, f2)
        scorer.n_components = width
        return scorer

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    def _inference_module(self, method: str) -> InferenceModule:
        """``transform``: the bags in torch, the encoder, the output's row norm."""
        norm = _OUTPUT_NORM if self.output == "normalized" else None
        body = Encoded(BagInput(self.bag, self.idf_), LeftEncoder(self._scorer), norm)
        return InferenceModule(body, self.n_features_in_)

    def _embed(self, X: sp.csr_matrix, dtype: torch.dtype) -> torch.Tensor:
        if X.shape[0] == 0:
            return torch.zeros((0, self.n_components_), dtype=dtype)
        Z = self._encode(X, "left").cpu()
        if self.output == "normalized":
            Z = torch.nn.functional.normalize(Z, dim=1) * _OUTPUT_NORM
        return Z.to(dtype)
