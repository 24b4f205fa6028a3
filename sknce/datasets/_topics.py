"""Synthetic topic-model corpora of Tosh et al. (2021), Section 6."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch, check_random_state

from sknce._compat import Interval, StrOptions

__all__ = ["make_topic_corpus"]

#: Entries of the dense (documents, n_words) block of word probabilities built at once.
_BLOCK = 4_000_000


def _check(name, value, constraint) -> None:
    if not constraint.is_satisfied_by(value):
        raise ValueError(
            f"The {name!r} parameter of make_topic_corpus must be {constraint}; got {value!r}."
        )


def make_topic_corpus(
    n_documents: int,
    n_topics: int = 20,
    n_words: int = 5000,
    *,
    topics: str = "dirichlet",
    alpha: float = 0.1,
    doc_topics: str = "dirichlet",
    beta: float = 0.1,
    mean_length: float = 100,
    random_state=None,
) -> Bunch:
    r"""Generate documents from a topic model (Tosh et al., 2021, Sections 2 and 6).

    Each document draws a topic vector :math:`w` on the simplex and a length
    :math:`m \sim \text{Poisson}(\text{mean\_length})`, then each of its words draws
    a topic :math:`z_i \sim w` and a word :math:`x_i \sim O(\cdot \mid z_i)`.

    Parameters
    ----------
    n_documents : int
        Number of documents.
    n_topics : int, default=20
        Number of topics ``K``.
    n_words : int, default=5000
        Vocabulary size ``V`` (at least ``n_topics`` for the block model).
    topics : {"dirichlet", "block"}, default="dirichlet"
        ``"dirichlet"``: each topic drawn from a symmetric Dirichlet(``alpha``) over
        the vocabulary (the fully synthetic setting); ``"block"``: each word is
        assigned at random to one topic (blocks of equal size up to one word) and
        each topic is uniform over its words (the block model, where the posterior
        mean has a closed form).
    alpha : float, default=0.1
        Concentration of the topic-word Dirichlet (``topics="dirichlet"`` only).
    doc_topics : {"dirichlet", "single"}, default="dirichlet"
        ``"dirichlet"``: :math:`w \sim \text{Dirichlet}(\beta)`; ``"single"``: one
        topic per document, uniformly at random (:math:`w` one-hot).
    beta : float, default=0.1
        Concentration of the document-topic Dirichlet (``doc_topics="dirichlet"``).
    mean_length : float, default=100
        Mean of the Poisson document lengths.
    random_state : int, RandomState instance or None, default=None
        Seeds the sample; an int makes it reproducible.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With fields

        X : csr_matrix of shape (n_documents, n_words), float64
            Word counts.
        doc_topics : ndarray of shape (n_documents, n_topics)
            The true topic vectors :math:`w`.
        target : ndarray of shape (n_documents,)
            The top topic of each document, ``doc_topics.argmax(1)`` (a label for
            semi-supervised experiments, Section 7).
        topics : ndarray of shape (n_topics, n_words)
            :math:`O(\text{word} \mid k)`, rows summing to one.
        word_probs : ndarray of shape (n_words,)
            The marginal :math:`P(\text{word}) = \frac1K \sum_k O(\text{word} \mid k)`.
        posterior_mean : ndarray of shape (n_documents, n_topics) or None
            The exact :math:`E[w \mid x]` where it has a closed form: the block model
            with a Dirichlet prior, :math:`(\beta + n_k) / (K\beta + m)` with
            :math:`n_k` the document's words in block ``k``; and any topics with the
            single-topic prior, the posterior over topics. ``None`` otherwise.

    References
    ----------
    .. [1] C. Tosh, A. Krishnamurthy and D. Hsu, "Contrastive estimation reveals topic
       posterior information to linear models", JMLR 22(281), 2021. Section 2 (the
       model) and Section 6.2 (the simulation settings).

    Examples
    --------
    >>> from sknce.datasets import make_topic_corpus
    >>> corpus = make_topic_corpus(100, n_topics=4, n_words=40, topics="block",
    ...                            random_state=0)
    >>> corpus.X.shape, corpus.posterior_mean.shape
    ((100, 40), (100, 4))
    """
    _check("n_documents", n_documents, Interval(Integral, 1, None, closed="left"))
    _check("n_topics", n_topics, Interval(Integral, 1, None, closed="left"))
    _check("n_words", n_words, Interval(Integral, 1, None, closed="left"))
    _check("topics", topics, StrOptions({"dirichlet", "block"}))
    _check("doc_topics", doc_topics, StrOptions({"dirichlet", "single"}))
    _check("alpha", alpha, Interval(Real, 0, None, closed="neither"))
    _check("beta", beta, Interval(Real, 0, None, closed="neither"))
    _check("mean_length", mean_length, Interval(Real, 0, None, closed="neither"))
    if topics == "block" and n_words < n_topics:
        raise ValueError(
            f"The block model gives each topic its own words: n_words={n_words} must be at "
            f"least n_topics={n_topics}."
        )
    rng = check_random_state(random_state)
    K, V = n_topics, n_words

    block = None
    if topics == "block":
        block = rng.permutation(np.arange(V) % K)
        O = np.zeros((K, V))
        O[block, np.arange(V)] = 1.0
        O /= O.sum(axis=1, keepdims=True)
    else:
        O = rng.dirichlet(np.full(V, alpha), size=K)
        # Dirichlet draws with tiny alpha can underflow to exact zeros; keep the rows valid.
        O = np.maximum(O, 1e-300)
        O /= O.sum(axis=1, keepdims=True)

    if doc_topics == "single":
        W = np.eye(K)[rng.randint(0, K, size=n_documents)]
    else:
        W = rng.dirichlet(np.full(K, beta), size=n_documents)
    lengths = rng.poisson(mean_length, size=n_documents)

    gen = np.random.default_rng(rng.randint(2**31))
    blocks = []
    chunk = max(1, _BLOCK // V)
    for start in range(0, n_documents, chunk):
        stop = min(start + chunk, n_documents)
        probs = W[start:stop] @ O
        probs /= probs.sum(axis=1, keepdims=True)
        blocks.append(sp.csr_matrix(gen.multinomial(lengths[start:stop], probs)))
    X = sp.vstack(blocks).tocsr().astype(np.float64)

    posterior = None
    if doc_topics == "single":
        with np.errstate(divide="ignore"):
            log_o = np.log(O)
        log_post = np.asarray(X @ log_o.T)
        log_post -= log_post.max(axis=1, keepdims=True)
        posterior = np.exp(log_post)
        posterior /= posterior.sum(axis=1, keepdims=True)
    elif topics == "block":
        member = sp.csr_matrix((np.ones(V), (np.arange(V), block)), shape=(V, K))
        n_k = np.asarray((X @ member).todense())
        posterior = (beta + n_k) / (K * beta + n_k.sum(axis=1, keepdims=True))

    return Bunch(
        X=X,
        doc_topics=W,
        target=W.argmax(axis=1),
        topics=O,
        word_probs=O.mean(axis=0),
        posterior_mean=posterior,
    )
