"""LandmarkNCEEmbedder and DirectNCEEmbedder: document embeddings by contrastive estimation.

Tosh, Krishnamurthy and Hsu (2021) train a classifier to tell whether two bags
of words are the two halves of one document or halves of two different
documents (Algorithm 1, Eq. 1). Its log-odds reveal the topic posterior:
the landmark embedding (Eq. 3) exponentiates them against fixed landmark
documents, the direct embedding (Eq. 6) reads them off the first of two
encoders.
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from skorch.callbacks import ProgressBar

from sknce._base import BaseNCE, seeded
from sknce._compat import Interval, StrOptions, _fit_context, check_is_fitted, validate_data
from sknce._data import BatchDataset, csr_to_tensor
from sknce.documents._split import BAGS, SPLITS, normalize_bags, split_documents
from sknce.nn import BilinearScorer, DocumentPairLoss, PairScorer

__all__ = ["DirectNCEEmbedder", "LandmarkNCEEmbedder"]

_COUNTS_FIX = (
    "Pass a matrix of word counts, such as sklearn.feature_extraction.text."
    "CountVectorizer returns (not TfidfVectorizer)."
)

#: exp overflows float32 above ~88.7; with ``clip=None`` the log-odds are capped here.
_MAX_LOG_ODDS = 80.0

#: Largest (documents x landmarks x hidden units) block built at once by the landmark
#: transform: 1 MiB of float32, cache-sized (6x faster than 32 MiB blocks for M=1000, H=512).
_PAIR_BLOCK = 1 << 18


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
    """Counts as a CSR matrix (a dense block is converted, never a whole dense X at once)."""
    return sp.csr_matrix(X, dtype=np.float64)


def _pair_seed() -> int:
    """A NumPy seed drawn from torch's generator (so fits and validation are reproducible)."""
    return int(torch.randint(0, 2**62, (1,)).item())


class _BaseDocumentNCE(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseNCE):
    """Shared contrastive task, fitting, scoring and input validation of the embedders."""

    _parameter_constraints: dict = {
        **BaseNCE._parameter_constraints,
        "split": [StrOptions(set(SPLITS))],
        "bag": [StrOptions(set(BAGS))],
        "sparse_embeddings": ["boolean"],
        "n_negatives": [Interval(Integral, 1, None, closed="left")],
        "hidden_layer_sizes": [tuple, list],
    }

    # --- subclass hooks ---------------------------------------------------------
    def _make_scorer(self, n_features: int) -> torch.nn.Module:  # pragma: no cover
        raise NotImplementedError

    def _prepare(self, X: sp.csr_matrix, rng: np.random.RandomState) -> None:
        """Set fitted attributes that depend on the data (before training)."""

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
            warnings.warn(
                f"{n_short} document(s) with fewer than 2 tokens cannot be split into two "
                f"halves; {action} skips them.",
                UserWarning,
                stacklevel=3,
            )
            X = X[keep]
        return X

    def _make_batch(self, X: sp.csr_matrix, device: str):
        """``make_batch(indices)``: split the documents, pair each with ``n_negatives`` others."""
        split, bag, k = self.split, self.bag, self.n_negatives
        n_total = X.shape[0]

        def make_batch(idx):
            rng = np.random.default_rng(_pair_seed())
            block = X[idx]
            if block.shape[0] < 2:
                # A batch of one document: its negatives come from the rest of the data.
                extra = rng.integers(0, n_total, size=k)
                block = sp.vstack([block, X[extra]]).tocsr()
            first, second = split_documents(block, split, rng)
            b = block.shape[0]
            partners = (np.arange(b)[:, None] + rng.integers(1, b, size=(b, k))) % b
            n = len(idx)
            return {
                "x1": csr_to_tensor(normalize_bags(first[:n], bag), device),
                "x2": csr_to_tensor(normalize_bags(second, bag), device),
                "partners": torch.as_tensor(partners[:n], device=device),
            }, None

        return make_batch

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the contrastive model on unlabeled documents.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_documents, n_words)
            Non-negative integer word counts. Documents with fewer than 2 tokens
            are skipped with a warning.
        y : None
            Ignored.

        Returns
        -------
        self
            The fitted embedder.
        """
        X = self._validate_counts(X, reset=True, integer=True)
        X = self._usable(_as_csr(X), "fit")
        self._check_hidden()
        self._check_sparse_optimizer()
        seed, device = self._seed_and_device()
        self._prepare(X, check_random_state(seed))
        dataset = BatchDataset(X.shape[0], self._make_batch(X, device))
        with seeded(seed, device):
            module = DocumentPairLoss(self._make_scorer(X.shape[1]))
            if self.early_stopping and X.shape[0] * self.validation_fraction < 1:
                warnings.warn(
                    f"validation_fraction={self.validation_fraction} of {X.shape[0]} usable "
                    "documents leaves no validation document: early stopping is off for this "
                    "fit. Provide more documents or raise validation_fraction.",
                    UserWarning,
                    stacklevel=2,
                )
                self._fit_without_validation(module, dataset, seed, device)
            else:
                self._fit_module(module, dataset, seed, device)
        return self

    def _fit_without_validation(self, module, dataset, seed: int, device: str) -> None:
        """:meth:`BaseNCE._fit_module` with early stopping switched off for this fit only."""
        callbacks = [ProgressBar()] if self.verbose else []
        net = self._make_net(module, seed, device, train_split=None, callbacks=callbacks)
        net.fit(dataset, y=None)
        net.module_.eval()
        self.net_ = net
        self.history_ = [
            {k: row[k] for k in ("epoch", "train_loss", "dur") if k in row} for row in net.history
        ]
        self.n_iter_ = len(self.history_)

    @property
    def _scorer(self):
        return self.net_.module_.scorer

    def _encode(self, X: sp.csr_matrix, side: str) -> torch.Tensor:
        """Encode normalised bags of ``X`` with one side of the scorer, in batches."""
        encode = self._scorer.encode_left if side == "left" else self._scorer.encode_right
        device = self.net_.device
        parts = []
        with torch.no_grad():
            for rows in self._batches(X.shape[0]):
                parts.append(encode(csr_to_tensor(normalize_bags(X[rows], self.bag), device)))
        return torch.cat(parts) if parts else torch.zeros((0, 0))

    def score(self, X, y=None) -> float:
        """Minus the mean contrastive loss (Eq. 1) on freshly sampled pairs of ``X``.

        The pairs are drawn as in training (same ``split`` and ``n_negatives``, each
        document paired with other documents of its batch) from a generator seeded by
        ``random_state``, so repeated calls give the same value. Higher is better,
        which lets :class:`~sklearn.model_selection.GridSearchCV` choose
        hyperparameters without labels (Tosh et al., Section 7.4.2).

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
        device = self.net_.device
        module = self.net_.module_
        module.eval()
        make_batch = self._make_batch(X, device)
        total, count = 0.0, 0
        with seeded(self._fit_seed() + 2, device), torch.no_grad():
            for rows in self._batches(X.shape[0], self.batch_size):
                batch, _ = make_batch(np.arange(rows.start, rows.stop))
                n = rows.stop - rows.start
                total += float(module(**batch)) * n
                count += n
        return -total / count

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
        dtype = X.dtype
        out = self._embed(_as_csr(X))
        return out.cpu().numpy().astype(dtype, copy=False)


class LandmarkNCEEmbedder(_BaseDocumentNCE):
    r"""Landmark embedding of documents learned by contrastive estimation.

    A network :math:`f(x, x')` of a pair of bags of words (its first layer acts on
    the concatenation of both) is trained to tell whether the bags are two halves
    of one document (Tosh et al., 2021, Algorithm 1 and Eq. 1). A document is then
    embedded by its predictions against ``M`` fixed landmark documents,

    .. math::

        \hat\varphi(x) = \bigl(\exp \hat f(x, l_1), \dots, \exp \hat f(x, l_M)\bigr)
        \qquad \text{(Eq. 3)},

    which is, up to the estimation error, a linear function of the topic posterior
    :math:`E[w \mid x]` under a topic model (Theorem 2), so a linear model on top
    of it can predict any label that depends linearly on that posterior.

    ``transform`` evaluates ``n_documents x n_landmarks`` pairs. The landmark side of
    the first layer is computed once for all landmarks and combined with each
    document's side in batched tensor operations, so the cost per pair is that of the
    hidden layers only (see ``benchmarks/bench_documents_speed.py``).

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
    split : {"both", "partition", "resample", "word"}, default="both"
        How a document is split into two halves: a random partition of its tokens,
        two bags drawn with replacement from its words, each with probability 1/2
        (``"both"``, the best in Section 7.2), or a single random word against the
        rest (``"word"``, Section 6.2, with single-word landmarks).
        See :func:`sknce.documents.split_documents`.
    bag : {"tf", "log1p", "counts"}, default="tf"
        Representation of each half fed to the network: term frequencies, log(1 +
        count), or raw counts. In a side run of the synthetic semi-supervised benchmark
        (4000 documents, 10 labels per class) ``"tf"`` and ``"log1p"`` were within
        noise of each other (0.707 and 0.715 accuracy); ``"tf"`` is the default because
        it makes a half's scale independent of its length (halves of one document can
        differ in length, e.g. with ``split="word"``).
    n_negatives : int, default=1
        Negative pairs per positive pair (1:1 as in Algorithm 1). Each negative pairs
        a document's first half with the second half of another document of the batch;
        splits and pairings are drawn afresh at every epoch.
    clip : float or None, default=None
        Bound :math:`g_{\max}` on :math:`\exp \hat f` in the embedding (Assumption 2):
        :math:`\hat f` is clipped at :math:`\log g_{\max}`. ``None``: no bound
        (:math:`\hat f` is still capped at 80 so that the embedding stays finite).
    hidden_layer_sizes : tuple of int, default=(512, 512)
        Hidden layers of :math:`f` (at least one); the default is the three fully
        connected layers of Sections 6.2 and 7.2, with LayerNorm and ReLU.
    max_epochs : int, default=100
        Passes over the training documents.
    batch_size : int, default=256
        Documents per gradient step (each gives ``1 + n_negatives`` pairs).
    lr : float, default=1e-3
        Learning rate (Adam, as in the paper).
    optimizer : torch optimizer class, default=torch.optim.Adam
    sparse_embeddings : bool, default=False
        Give the first layer's word weights sparse gradients (the rows of the words
        in the batch only), so that a step costs O(words in the batch) instead of
        O(vocabulary): at V = 50000 one epoch is 3-4x faster. Needs an
        optimizer that accepts sparse gradients: :class:`sknce.nn.LazyAdam` (Adam on
        the rows present), ``torch.optim.SGD`` or ``torch.optim.Adagrad``.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
    random_state : int, RandomState instance or None, default=None
        Seeds weights, splits, pairings and landmarks.
    verbose : int, default=0
        1 prints a progress bar and per-epoch losses.
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the documents and stop when the
        contrastive loss on them (with fixed splits and pairings) stops improving,
        restoring the best weights (Section 7.2). Epochs count towards ``patience``
        only once that loss is 1% below the loss of a constant guess: with
        ``split="word"`` it can stay there for 10-30 epochs before it drops. A fit
        whose loss never gets there warns with a ``ConvergenceWarning``.
    validation_fraction : float, default=0.1
    patience : int, default=10

    Attributes
    ----------
    landmarks_ : csr_matrix of shape (n_landmarks, n_words)
        The landmark documents (counts).
    n_features_in_ : int
        Vocabulary size seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.
    net_ : NCENet
        The fitted skorch net; ``net_.module_.scorer`` is the
        :class:`~sknce.nn.PairScorer`.
    history_ : list of dict
        Per-epoch ``train_loss`` (and ``valid_loss`` with early stopping).
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
    integer-valued data; all of them pass and none is expected to fail.

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
    >>> emb = LandmarkNCEEmbedder(n_landmarks=20, hidden_layer_sizes=(32,),
    ...                           max_epochs=5, random_state=0)
    >>> emb.fit_transform(corpus.X).shape
    (300, 20)
    """

    _parameter_constraints: dict = {
        **_BaseDocumentNCE._parameter_constraints,
        "n_landmarks": [Interval(Integral, 1, None, closed="left")],
        "landmarks": [StrOptions({"documents", "words"}), "array-like", "sparse matrix"],
        "clip": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(
        self,
        *,
        n_landmarks: int = 1000,
        landmarks="documents",
        split: str = "both",
        bag: str = "tf",
        n_negatives: int = 1,
        clip: float | None = None,
        hidden_layer_sizes: tuple[int, ...] = (512, 512),
        max_epochs: int = 100,
        batch_size: int = 256,
        lr: float = 1e-3,
        optimizer=torch.optim.Adam,
        sparse_embeddings: bool = False,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 10,
    ) -> None:
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.split = split
        self.bag = bag
        self.n_negatives = n_negatives
        self.clip = clip
        self.hidden_layer_sizes = hidden_layer_sizes
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.optimizer = optimizer
        self.sparse_embeddings = sparse_embeddings
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience

    def _check_hidden(self) -> tuple[int, ...]:
        sizes = super()._check_hidden()
        if not sizes:
            raise ValueError(
                "LandmarkNCEEmbedder needs at least one hidden layer: with "
                "hidden_layer_sizes=() f(x, x') would be additive in x and x' and carry "
                "no information about the pair. Use e.g. hidden_layer_sizes=(512, 512)."
            )
        return sizes

    def _make_scorer(self, n_features: int) -> torch.nn.Module:
        return PairScorer(
            n_features, tuple(self.hidden_layer_sizes), sparse_grad=self.sparse_embeddings
        )

    def _prepare(self, X: sp.csr_matrix, rng: np.random.RandomState) -> None:
        if isinstance(self.landmarks, str) and self.landmarks == "documents":
            rows = rng.randint(0, X.shape[0], size=self.n_landmarks)
            _, second = split_documents(X[rows], self.split, rng.randint(2**31))
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

    @property
    def _n_features_out(self) -> int:
        return self.landmarks_.shape[0]

    def _embed(self, X: sp.csr_matrix) -> torch.Tensor:
        scorer = self._scorer
        cap = _MAX_LOG_ODDS if self.clip is None else math.log(self.clip)
        right = self._encode(self.landmarks_, "right")  # (M, H): computed once
        n_landmarks, width = right.shape
        # Pairs are evaluated in (documents x landmarks x hidden) blocks small enough to stay
        # in cache: the hidden layers are memory-bound elementwise work plus small GEMMs.
        doc_chunk = max(1, _PAIR_BLOCK // (n_landmarks * width))
        lm_chunk = min(n_landmarks, max(1, _PAIR_BLOCK // (doc_chunk * width)))
        device = self.net_.device
        out = torch.empty((X.shape[0], n_landmarks))
        with torch.no_grad():
            for rows in self._batches(X.shape[0], 256):
                left = scorer.encode_left(
                    csr_to_tensor(normalize_bags(X[rows], self.bag), device)
                ).unsqueeze(1)
                for i in range(0, left.shape[0], doc_chunk):
                    for j in range(0, n_landmarks, lm_chunk):
                        logits = scorer.combine(
                            left[i : i + doc_chunk], right[None, j : j + lm_chunk]
                        )
                        block = torch.exp(torch.clamp(logits, max=cap)).cpu()
                        start = rows.start + i
                        out[start : start + block.shape[0], j : j + lm_chunk] = block
        return out


class DirectNCEEmbedder(_BaseDocumentNCE):
    r"""Direct embedding of documents learned by contrastive estimation.

    Two MLP encoders :math:`f_1, f_2` are trained so that
    :math:`f(x, x') = f_1(x)^\top f_2(x')` tells whether two bags of words are the
    two halves of one document (Tosh et al., 2021, Eq. 6, with the logistic loss of
    Eq. 1). A document is embedded by :math:`f_1(x)`. This is the practical variant
    of the landmark embedding (Section 7.1): one network evaluation per document.

    Read more in the :ref:`User Guide <documents>`.

    Parameters
    ----------
    n_components : int, default=100
        Output dimension ``d`` of :math:`f_1` and :math:`f_2`.
    split : {"both", "partition", "resample", "word"}, default="both"
        How a document is split into two halves; see :class:`LandmarkNCEEmbedder`
        and :func:`sknce.documents.split_documents`.
    bag : {"tf", "log1p", "counts"}, default="tf"
        Representation of each half fed to the encoders (term frequencies by
        default; see :class:`LandmarkNCEEmbedder`: ``"log1p"`` was within noise of it,
        0.708 and 0.710 accuracy in the side run).
    n_negatives : int, default=1
        Negative pairs per positive pair (1:1 as in Algorithm 1).
    hidden_layer_sizes : tuple of int, default=(512, 512)
        Hidden layers of each encoder (Sections 6.2 and 7.2: LayerNorm and ReLU);
        ``()`` makes the encoders linear.
    max_epochs : int, default=100
    batch_size : int, default=256
    lr : float, default=1e-3
    optimizer : torch optimizer class, default=torch.optim.Adam
    sparse_embeddings : bool, default=False
        Sparse gradients for the encoders' first-layer word weights, with an
        optimizer such as :class:`sknce.nn.LazyAdam`; see :class:`LandmarkNCEEmbedder`.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        1 prints a progress bar and per-epoch losses.
    early_stopping : bool, default=True
        Early stopping on the held-out contrastive loss (Section 7.2), counted from
        the first epoch that beats a constant guess; see :class:`LandmarkNCEEmbedder`.
    validation_fraction : float, default=0.1
    patience : int, default=10

    Attributes
    ----------
    n_features_in_ : int
        Vocabulary size seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.
    net_ : NCENet
        The fitted skorch net; ``net_.module_.scorer`` is the
        :class:`~sknce.nn.BilinearScorer`.
    history_ : list of dict
        Per-epoch ``train_loss`` (and ``valid_loss`` with early stopping).
    n_iter_ : int
        Number of epochs run.

    See Also
    --------
    LandmarkNCEEmbedder : The landmark embedding of Eq. (3).
    sklearn.decomposition.TruncatedSVD : A linear baseline on the same counts.

    Notes
    -----
    Input handling and the common checks are as for :class:`LandmarkNCEEmbedder`:
    integer counts in ``fit`` and ``score``; all common checks pass.

    References
    ----------
    .. [1] C. Tosh, A. Krishnamurthy and D. Hsu, "Contrastive estimation reveals topic
       posterior information to linear models", JMLR 22(281), 2021. Eq. (1) and
       Eq. (6), Sections 7.1 and 7.2.

    Examples
    --------
    >>> from sknce import DirectNCEEmbedder
    >>> from sknce.datasets import make_topic_corpus
    >>> corpus = make_topic_corpus(300, n_topics=3, n_words=60, random_state=0)
    >>> emb = DirectNCEEmbedder(n_components=8, hidden_layer_sizes=(32,),
    ...                         max_epochs=5, random_state=0)
    >>> emb.fit_transform(corpus.X).shape
    (300, 8)
    """

    _parameter_constraints: dict = {
        **_BaseDocumentNCE._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        n_components: int = 100,
        split: str = "both",
        bag: str = "tf",
        n_negatives: int = 1,
        hidden_layer_sizes: tuple[int, ...] = (512, 512),
        max_epochs: int = 100,
        batch_size: int = 256,
        lr: float = 1e-3,
        optimizer=torch.optim.Adam,
        sparse_embeddings: bool = False,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 10,
    ) -> None:
        self.n_components = n_components
        self.split = split
        self.bag = bag
        self.n_negatives = n_negatives
        self.hidden_layer_sizes = hidden_layer_sizes
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.optimizer = optimizer
        self.sparse_embeddings = sparse_embeddings
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience

    def _make_scorer(self, n_features: int) -> torch.nn.Module:
        return BilinearScorer(
            n_features,
            tuple(self.hidden_layer_sizes),
            self.n_components,
            sparse_grad=self.sparse_embeddings,
        )

    @property
    def _n_features_out(self) -> int:
        return self.n_components

    def _embed(self, X: sp.csr_matrix) -> torch.Tensor:
        if X.shape[0] == 0:
            return torch.zeros((0, self.n_components))
        return self._encode(X, "left").cpu()
