"""Topic posteriors from a landmark embedding with single-word landmarks (Tosh et al., §6.1)."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

__all__ = ["project_simplex", "recover_topic_posterior"]


def project_simplex(V: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``V`` onto the probability simplex.

    The sort-based algorithm of Held, Wolfe and Crowder (1974), also in Duchi et
    al. (2008), Figure 1: ``O(K log K)`` per row.

    Parameters
    ----------
    V : array-like of shape (n_samples, K)
        Finite rows to project (a 1-d array is one row).

    Returns
    -------
    ndarray of shape (n_samples, K)
        Rows are non-negative and sum to one.
    """
    V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    if V.ndim != 2 or V.shape[1] == 0:
        raise ValueError(
            f"project_simplex projects the rows of a 2-d array with at least one column; "
            f"got shape {V.shape}."
        )
    if not np.all(np.isfinite(V)):
        raise ValueError(
            "V contains NaN or infinity, which have no projection onto the simplex; "
            "check the embedding or the inputs that produced it."
        )
    n, k = V.shape
    # The projection is unchanged by adding a constant to a row (the simplex lies in a
    # hyperplane of the all-ones direction): rows shifted to a maximum of 0 keep the
    # threshold's arithmetic exact for entries of any magnitude.
    V = V - V.max(axis=1, keepdims=True)
    U = -np.sort(-V, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    ind = np.arange(1, k + 1)
    rho = np.count_nonzero(U - css / ind > 0, axis=1)
    theta = css[np.arange(n), rho - 1] / rho
    return np.maximum(V - theta[:, None], 0.0)


def recover_topic_posterior(
    embedder, X, topics, word_probs, *, normalize: bool = True
) -> np.ndarray:
    r"""Estimate the topic posterior :math:`E[w \mid x]` of documents (Section 6.1).

    For a :class:`~sknce.LandmarkNCEEmbedder` fitted with single-word landmarks
    :math:`l_1, \dots, l_M` (``landmarks="words"``, best with ``split="word"``),
    the embedding :math:`\hat\varphi(x)_i = \exp \hat f(x, l_i)` (the embedder's
    ``output="exp"``, which this function requests whatever the embedder's
    ``output``) estimates
    :math:`g^\star(x, l_i) = \sum_k E[w_k \mid x]\, O(l_i \mid k) / P(l_i)`, i.e.
    :math:`\varphi = L\, E[w \mid x]` with :math:`L_{ik} = O(l_i \mid k)/P(l_i)`. This
    function computes :math:`\hat\eta(x) = L^\dagger \hat\varphi(x)`, rescales it so
    that its entries sum to one (``normalize=True``) and projects it in :math:`\ell_2`
    onto the probability simplex.

    The rescaling uses :math:`\mathbf 1^\top E[w \mid x] = 1` (equivalently
    :math:`\sum_l P(l)\, g^\star(x, l) = 1`): an error of :math:`\hat f` common to all
    landmarks of a document (an offset of its log-odds) is a factor on
    :math:`\hat\varphi(x)` and cancels, whereas the projection alone shifts every entry
    by the same amount, onto topics absent from the document too.

    With ``n_negatives = k`` negatives per positive the learned log-odds are
    :math:`\log g^\star - \log k`; the embedding is multiplied by ``k`` first.

    Parameters
    ----------
    embedder : LandmarkNCEEmbedder
        Fitted, with single-word landmarks (``landmarks="words"``). The inversion
        reads :math:`\exp \hat f` as an estimate of :math:`g^\star`: fit the paper's
        network of the pair (``scorer="pair"``, ``bag="tf"``, ``split="word"``, as in the
        example), which can represent the log of a posterior mixture. The default
        bilinear scorer, :math:`\hat f(x, l)` linear in the bag of :math:`x`, ranks the
        topics but its :math:`\exp \hat f` is not calibrated, which the
        :math:`\ell_2` error of the estimate shows: it gives a ``UserWarning`` naming
        the pair-network recipe.
    X : {array-like, sparse matrix} of shape (n_documents, n_words)
        Word counts of the documents.
    topics : array-like of shape (n_topics, n_words)
        The topics :math:`O(\cdot \mid k)`, rows summing to one (e.g. ``corpus.topics``
        of :func:`~sknce.datasets.make_topic_corpus`).
    word_probs : array-like of shape (n_words,)
        The marginal :math:`P(\text{word})` (e.g. ``corpus.word_probs``).
    normalize : bool, default=True
        Divide :math:`\hat\eta(x)` by the sum of its entries (when that sum is
        positive) before the projection. ``False`` gives the plain projection of
        Section 6.1. The effect of the rescaling on the block-model benchmark is in
        ``benchmarks/README.md`` (topic recovery).

    Returns
    -------
    ndarray of shape (n_documents, n_topics)
        Estimated topic vectors on the simplex.

    References
    ----------
    .. [1] C. Tosh, A. Krishnamurthy and D. Hsu, "Contrastive estimation reveals topic
       posterior information to linear models", JMLR 22(281), 2021. Section 6.1,
       Eq. (3) and Theorem 2.

    Examples
    --------
    >>> from sknce import LandmarkNCEEmbedder
    >>> from sknce.datasets import make_topic_corpus
    >>> from sknce.documents import recover_topic_posterior
    >>> corpus = make_topic_corpus(400, n_topics=3, n_words=30, topics="block",
    ...                            doc_topics="single", random_state=0)
    >>> emb = LandmarkNCEEmbedder(n_landmarks=30, landmarks="words", split="word",
    ...                           scorer="pair", bag="tf", hidden_layer_sizes=(32,),
    ...                           lr=1e-3, max_epochs=10, random_state=0).fit(corpus.X)
    >>> eta = recover_topic_posterior(emb, corpus.X, corpus.topics, corpus.word_probs)
    >>> eta.shape
    (400, 3)
    """
    check_is_fitted(embedder)
    if not hasattr(embedder, "landmarks_"):
        raise TypeError(
            f"recover_topic_posterior needs a LandmarkNCEEmbedder (its landmark embedding "
            f"is linear in the topic posterior); got a {type(embedder).__name__}. Fit "
            "LandmarkNCEEmbedder(landmarks='words') instead."
        )
    landmarks = sp.csr_matrix(embedder.landmarks_)
    lengths = np.asarray(landmarks.sum(axis=1)).ravel()
    if landmarks.nnz != landmarks.shape[0] or not np.allclose(lengths, 1.0):
        raise ValueError(
            "recover_topic_posterior needs single-word landmarks (each landmark one token "
            "of one word); fit the embedder with landmarks='words' (Section 6.1)."
        )
    if getattr(embedder, "scorer", "pair") != "pair":
        warnings.warn(
            f"recover_topic_posterior reads exp f(x, l) as the posterior ratio g*, but this "
            f"embedder's scorer={embedder.scorer!r} is linear in the bag of words and its "
            "exp f is not calibrated: the estimated posteriors can be far from the truth. "
            "Fit the paper's network of the pair for this: LandmarkNCEEmbedder("
            "landmarks='words', split='word', scorer='pair', bag='tf', lr=1e-3) (see the "
            "user guide, 'Topic posterior recovery').",
            UserWarning,
            stacklevel=2,
        )
    topics = np.asarray(topics, dtype=np.float64)
    word_probs = np.asarray(word_probs, dtype=np.float64).ravel()
    n_words = landmarks.shape[1]
    if topics.ndim != 2 or topics.shape[1] != n_words or word_probs.shape != (n_words,):
        raise ValueError(
            f"topics must have shape (n_topics, {n_words}) and word_probs shape ({n_words},) "
            f"to match the embedder's vocabulary; got {topics.shape} and {word_probs.shape}."
        )
    if not (np.all(np.isfinite(topics)) and np.all(np.isfinite(word_probs))):
        raise ValueError("topics and word_probs must be finite; they contain NaN or infinity.")
    if np.any(topics < 0):
        raise ValueError("topics must be non-negative: each row is a distribution over words.")
    words = landmarks.indices[landmarks.indptr[:-1]]  # one entry per row
    if np.any(word_probs[words] <= 0):
        raise ValueError("word_probs must be positive at every landmark word.")
    L = topics[:, words].T / word_probs[words, None]  # (M, K)
    if getattr(embedder, "output", "exp") != "exp":
        # The inversion needs Eq. (3)'s exp f: a shallow copy asks for it, sharing the fit.
        embedder = copy.copy(embedder)
        embedder.set_params(output="exp")
    phi = embedder.transform(X).astype(np.float64) * getattr(embedder, "n_negatives", 1)
    eta = phi @ np.linalg.pinv(L).T
    if normalize:
        # A non-positive total carries no usable scale; those rows are only projected.
        total = eta.sum(axis=1, keepdims=True)
        eta = np.divide(eta, total, out=eta, where=total > 0)
    return project_simplex(eta)
