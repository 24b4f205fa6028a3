"""Corpus handling for word embeddings: tokenising, the vocabulary, (centre, context) pairs.

A corpus is a restartable iterable of documents (token lists, or strings with
a tokenizer), read in one streaming pass per use, as gensim reads its
``sentences``: :meth:`Vocabulary.build` counts words in one pass and
:func:`pair_batches` turns one pass into batches of skip-gram pairs, with
frequent-word subsampling and a dynamic window, in memory bounded by the batch
and one chunk of documents, never by the corpus length; :func:`cbow_batches`
does the same for CBOW's examples (a centre word and all its context words).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat

import numpy as np

from sknce._warnings import warn_caller
from sknce.words._kernels import window_contexts

__all__ = [
    "RULE_DEFAULT",
    "RULE_DISCARD",
    "RULE_KEEP",
    "Vocabulary",
    "cbow_batches",
    "check_restartable",
    "default_tokenizer",
    "iter_documents",
    "pair_batches",
]

#: Values a ``trim_rule`` returns (gensim's ``gensim.utils.RULE_*``, same values): apply
#: ``min_count`` to the word, drop it, or keep it whatever its count.
RULE_DEFAULT = 0
RULE_DISCARD = 1
RULE_KEEP = 2

# scikit-learn's CountVectorizer default token_pattern, applied after lowercasing.
_TOKEN_PATTERN = re.compile(r"(?u)\b\w\w+\b")

# pair_batches encodes whole documents until a chunk holds at least this many
# tokens, then builds the chunk's pairs with a handful of numpy calls: large
# enough to amortise the per-call overhead, small enough (a few MiB of
# temporaries at window=5) to keep memory flat.
_CHUNK_TOKENS = 1 << 16

# The windows of a chunk are built for this many centre words at a time: their pairs
# (up to 2 * window per centre, int64, twice: centres and contexts) are a fit's largest
# buffers. Blocks carry no random draws (those are per chunk), so the pairs and the
# vectors do not depend on it. 8,192 centres hold about 1.3 MiB of pairs at window=5.
_BLOCK_TOKENS = 1 << 13


def default_tokenizer(text: str) -> list[str]:
    """Lowercase ``text`` and split it as ``CountVectorizer`` does by default.

    Tokens are runs of two or more word characters (``r"(?u)\\b\\w\\w+\\b"``),
    so punctuation and one-character words are dropped.

    Parameters
    ----------
    text : str
        A raw document.

    Returns
    -------
    list of str
        The lowercased tokens in order.

    Examples
    --------
    >>> from sknce.words._corpus import default_tokenizer
    >>> default_tokenizer("The cat sat on a mat, didn't it?")
    ['the', 'cat', 'sat', 'on', 'mat', 'didn', 'it']
    """
    return _TOKEN_PATTERN.findall(text.lower())


def check_restartable(X: object, what: str = "X") -> None:
    """Raise a ``TypeError`` unless ``X`` can be iterated over several times.

    Training reads the corpus once to build the vocabulary and once per epoch,
    so a generator or any other one-shot iterator (for which ``iter(X) is X``)
    would silently be empty from the second pass on.

    Parameters
    ----------
    X : object
        The corpus: a list of documents, or an object whose ``__iter__`` starts
        a fresh pass (a class such as gensim's ``LineSentence``).
    what : str, default="X"
        The name used for ``X`` in the error message.

    Raises
    ------
    TypeError
        If ``X`` is a string, not iterable, or a one-shot iterator.
    """
    if isinstance(X, (str, bytes)):
        raise TypeError(
            f"{what} must be an iterable of documents, got a single {type(X).__name__}; "
            f"wrap it in a list: [{what}]."
        )
    try:
        iterator = iter(X)
    except TypeError:
        raise TypeError(
            f"{what} must be an iterable of documents (token lists or strings), "
            f"got {type(X).__name__}."
        ) from None
    if iterator is X:
        raise TypeError(
            f"{what} is a one-shot iterator ({type(X).__name__}), but the corpus is read "
            "several times (once for the vocabulary, once per epoch). Pass a list, or an "
            "object whose __iter__ restarts the corpus, like gensim's LineSentence."
        )


def iter_documents(
    X: Iterable, tokenizer: Callable[[str], Sequence[str]] | None = None
) -> Iterator[list[str]]:
    """Yield each document of ``X`` as a list of tokens.

    Parameters
    ----------
    X : iterable
        Documents: lists or tuples of str tokens, which pass through, or strings,
        which are tokenised.
    tokenizer : callable or None, default=None
        Turns a string document into its tokens; ``None`` uses
        :func:`default_tokenizer`.

    Yields
    ------
    list of str
        The tokens of one document (a token list or tuple is yielded as given).

    Raises
    ------
    TypeError
        If a document is neither a string nor a list/tuple of strings, or the
        tokenizer returns something else than a list/tuple.
    """
    tokenize = default_tokenizer if tokenizer is None else tokenizer
    for i, doc in enumerate(X):
        if isinstance(doc, str):
            tokens = tokenize(doc)
            if not isinstance(tokens, (list, tuple)):
                raise TypeError(
                    f"the tokenizer must return a list of str tokens; for document {i} "
                    f"it returned {type(tokens).__name__}."
                )
        elif isinstance(doc, (list, tuple)):
            tokens = doc
        else:
            raise TypeError(
                f"document {i} of X is a {type(doc).__name__}; each document must be a "
                "list of str tokens, or a str when a tokenizer (or the default one) splits it."
            )
        # Checking the first token only keeps this O(1) per document while still
        # catching the usual mistake (integer ids or a nested list per document).
        if tokens and not isinstance(tokens[0], str):
            raise TypeError(
                f"document {i} of X contains a {type(tokens[0]).__name__} token; "
                "tokens must be str."
            )
        yield tokens


def _hashable(token) -> bool:
    try:
        hash(token)
    except TypeError:
        return False
    return True


def token_error(tokens: Sequence, document: int, what: str = "X") -> TypeError:
    """The error for a document whose token could not be looked up (an unhashable one).

    Looking tokens up raises ``TypeError: unhashable type: 'list'`` with no hint of
    where; this names the document, the position and the type.
    """
    position = next((i for i, token in enumerate(tokens) if not _hashable(token)), -1)
    token = tokens[position] if position >= 0 else None
    return TypeError(
        f"document {document} of {what} has a {type(token).__name__} token at position "
        f"{position} ({token!r:.40}); tokens must be str (a nested list usually means one "
        "list level too many)."
    )


def _keep(word: str, count: int, min_count: int, trim_rule) -> bool:
    """gensim's ``keep_vocab_item``: the count test, unless ``trim_rule`` decides."""
    if trim_rule is not None:
        rule = trim_rule(word, count, min_count)
        if rule == RULE_KEEP:
            return True
        if rule == RULE_DISCARD:
            return False
        if rule != RULE_DEFAULT:
            raise ValueError(
                f"trim_rule returned {rule!r} for {word!r}; it must return RULE_DISCARD, "
                "RULE_KEEP or RULE_DEFAULT (sknce.words or gensim.utils)."
            )
    return count >= min_count


def _check_token_types(words: Iterable, what: str = "X") -> None:
    """TypeError for a counted token that is not a string (e.g. an int deep in a document)."""
    for word in words:
        if not isinstance(word, str):
            raise TypeError(
                f"{what} contains a {type(word).__name__} token ({word!r:.40}); tokens "
                "must be str."
            )


def _count_words(X: Iterable, tokenizer, max_vocab_size, trim_rule) -> tuple[Counter, int, int]:
    """Token counts of ``X`` (pruned as gensim's ``max_vocab_size``), tokens, documents."""
    counter: Counter[str] = Counter()
    n_raw_tokens = n_documents = 0
    min_reduce = 1
    for tokens in iter_documents(X, tokenizer):
        try:
            counter.update(tokens)
        except TypeError:
            raise token_error(tokens, n_documents) from None
        n_raw_tokens += len(tokens)
        n_documents += 1
        if max_vocab_size is not None and len(counter) > max_vocab_size:
            for word in [w for w, c in counter.items() if not _keep(w, c, min_reduce, trim_rule)]:
                del counter[word]
            min_reduce += 1
    _check_token_types(counter)
    return counter, n_raw_tokens, n_documents


def _select_words(
    counter: Counter, min_count: int, max_final_vocab, trim_rule
) -> tuple[list[tuple[str, int]], int]:
    """The kept (word, count) pairs in counting order, and the count threshold applied."""
    effective = min_count
    if max_final_vocab is not None and max_final_vocab < len(counter):
        by_count = np.sort(np.fromiter(counter.values(), dtype=np.int64))[::-1]
        effective = max(min_count, int(by_count[max_final_vocab]) + 1)
    return [(w, c) for w, c in counter.items() if _keep(w, c, effective, trim_rule)], effective


class Vocabulary:
    """Words of a corpus with their counts, ordered as gensim orders them.

    Build it with :meth:`Vocabulary.build`, which reads the corpus once.

    Parameters
    ----------
    words : sequence of str
        The kept words, most frequent first.
    counts : array-like of int
        Corpus count of each word in ``words``.
    n_raw_tokens : int
        All tokens read, including those of words that were not kept.
    n_documents : int
        Documents read.

    Attributes
    ----------
    words : list of str
        The kept words, by descending count (ties as in gensim, see
        :meth:`build`).
    counts : ndarray of shape (n_words,), dtype int64
        Corpus count of each word.
    index : dict of str to int
        Position of each word in ``words``.
    n_raw_tokens : int
        All tokens read, including pruned ones (gensim's ``corpus_total_words``).
    n_documents : int
        Documents read (gensim's ``corpus_count``).
    """

    def __init__(
        self, words: Sequence[str], counts, *, n_raw_tokens: int, n_documents: int
    ) -> None:
        self.words = list(words)
        self.counts = np.asarray(counts, dtype=np.int64)
        if self.counts.shape != (len(self.words),):
            raise ValueError(
                f"counts must have one entry per word ({len(self.words)}), "
                f"got shape {self.counts.shape}."
            )
        self.index = {word: i for i, word in enumerate(self.words)}
        if len(self.index) != len(self.words):
            raise ValueError("words must not contain duplicates.")
        self.n_raw_tokens = int(n_raw_tokens)
        self.n_documents = int(n_documents)

    @classmethod
    def build(
        cls,
        X: Iterable,
        tokenizer: Callable[[str], Sequence[str]] | None = None,
        min_count: int = 5,
        max_vocab_size: int | None = None,
        max_final_vocab: int | None = None,
        trim_rule: Callable[[str, int, int], int] | None = None,
    ) -> Vocabulary:
        """Count the words of ``X`` in one streaming pass.

        As gensim's ``Word2Vec.build_vocab``: whenever more than
        ``max_vocab_size`` distinct words have been counted (checked after each
        document), words with a count below a threshold are dropped, the
        threshold starting at 1 and rising by one per pruning; at the end words
        below ``min_count`` are dropped (below a higher threshold when
        ``max_final_vocab`` asks for fewer words). ``trim_rule`` overrides the
        count test word by word, in both places. Words are sorted by descending
        count; ties keep gensim's order, the word counted most recently first.

        Parameters
        ----------
        X : iterable
            The corpus, as for :func:`iter_documents`.
        tokenizer : callable or None, default=None
            Splits string documents; ``None`` uses :func:`default_tokenizer`.
        min_count : int, default=5
            Words occurring fewer times are left out.
        max_vocab_size : int or None, default=None
            Bound on the number of distinct words held while counting (memory);
            ``None`` for no bound.
        max_final_vocab : int or None, default=None
            Keep at most this many words: the count threshold becomes
            ``max(min_count, c + 1)`` with ``c`` the count of the
            ``max_final_vocab + 1``-th most frequent word (gensim's rule, which
            drops all the words tied at ``c``).
        trim_rule : callable or None, default=None
            ``trim_rule(word, count, min_count)`` returns :data:`RULE_DISCARD`,
            :data:`RULE_KEEP` or :data:`RULE_DEFAULT` (apply the count test), as
            gensim's ``trim_rule``.

        Returns
        -------
        Vocabulary

        Raises
        ------
        ValueError
            If ``X`` has no tokens, or no word is kept.
        TypeError
            If a token is not a string (the error names the document of an
            unhashable one).
        """
        if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)):
            raise TypeError(f"min_count must be an int, got {min_count!r}.")
        if min_count < 0:
            raise ValueError(f"min_count must be >= 0, got {min_count}.")
        if max_vocab_size is not None and (
            isinstance(max_vocab_size, bool)
            or not isinstance(max_vocab_size, (int, np.integer))
            or max_vocab_size < 1
        ):
            raise ValueError(
                f"max_vocab_size must be None or an int >= 1, got {max_vocab_size!r}."
            )
        counter, n_raw_tokens, n_documents = _count_words(X, tokenizer, max_vocab_size, trim_rule)
        if n_raw_tokens == 0:
            raise ValueError(
                f"X contains no tokens ({n_documents} documents); pass a non-empty corpus "
                "of token lists, or of strings with a tokenizer that finds words in them."
            )
        kept, effective = _select_words(counter, min_count, max_final_vocab, trim_rule)
        if not kept:
            top_word, top_count = counter.most_common(1)[0] if counter else ("", 0)
            raise ValueError(
                f"no word occurs at least min_count={effective} times in X (the most "
                f"frequent word, {top_word!r}, occurs {top_count} times) or trim_rule drops "
                "them all; lower min_count, raise max_final_vocab, or pass a larger corpus."
            )
        if len(kept) == 1:
            others = len(counter) - 1
            why = (
                f"the {others} other words of X occur fewer than min_count={effective} "
                "times or trim_rule drops them"
                if others
                else "X has no other word"
            )
            warn_caller(
                f"the vocabulary holds a single word, {kept[0][0]!r} ({why}): every "
                "negative would be that word itself, so training learns nothing and "
                "similarities mean nothing. Lower min_count or pass a larger corpus."
            )
        counts = np.fromiter((c for _, c in kept), dtype=np.int64, count=len(kept))
        # gensim's sort_by_descending_frequency: lexsort((-indices, -counts)).
        order = np.lexsort((-np.arange(len(kept)), -counts))
        return cls(
            [kept[i][0] for i in order],
            counts[order],
            n_raw_tokens=n_raw_tokens,
            n_documents=n_documents,
        )

    def updated(
        self,
        X: Iterable,
        tokenizer: Callable[[str], Sequence[str]] | None = None,
        min_count: int = 5,
        max_vocab_size: int | None = None,
        max_final_vocab: int | None = None,
        trim_rule: Callable[[str, int, int], int] | None = None,
    ) -> Vocabulary:
        """This vocabulary grown by the words of ``X``, as gensim's ``build_vocab(update=True)``.

        The words of ``X`` are counted and selected as by :meth:`build` (on their
        counts in ``X`` alone); a selected new word is appended after the known
        words (in the order ``X`` first shows it), so the known words keep their
        rows; every known word's count grows by its count in ``X`` (selected or
        not, as in gensim 4.4).

        Returns
        -------
        Vocabulary
            With ``n_raw_tokens`` and ``n_documents`` of ``X``.
        """
        counter, n_raw_tokens, n_documents = _count_words(X, tokenizer, max_vocab_size, trim_rule)
        kept, _ = _select_words(counter, min_count, max_final_vocab, trim_rule)
        new = [(word, count) for word, count in kept if word not in self.index]
        counts = self.counts + np.fromiter(
            (counter.get(word, 0) for word in self.words), dtype=np.int64, count=len(self)
        )
        return Vocabulary(
            self.words + [word for word, _ in new],
            np.concatenate([counts, np.asarray([c for _, c in new], dtype=np.int64)]),
            n_raw_tokens=n_raw_tokens,
            n_documents=n_documents,
        )

    def __len__(self) -> int:
        return len(self.words)

    def __repr__(self) -> str:
        return (
            f"Vocabulary({len(self)} words, {self.n_raw_tokens} tokens, "
            f"{self.n_documents} documents)"
        )

    def keep_probs(self, sample: float) -> np.ndarray:
        """Probability of keeping each occurrence of each word when subsampling.

        gensim's variant of Mikolov et al.'s formula: with ``t = sample * N``
        (``N`` the total count of the kept words), a word seen ``c`` times is
        kept with probability ``min(1, (sqrt(c / t) + 1) * t / c)``. As in
        gensim, ``sample >= 1`` is read as the count threshold itself
        (``t = int(sample * (3 + sqrt(5)) / 2)``) and ``sample = 0`` keeps all.

        Parameters
        ----------
        sample : float
            Subsampling threshold (word2vec's ``-sample``, typically 1e-3 to 1e-5).

        Returns
        -------
        ndarray of shape (n_words,), dtype float64
        """
        if not np.isfinite(sample) or sample < 0:
            raise ValueError(f"sample must be a finite number >= 0, got {sample!r}.")
        if sample == 0:
            return np.ones(len(self), dtype=np.float64)
        if sample < 1.0:
            threshold = sample * float(self.counts.sum())
        else:
            threshold = float(int(sample * (3 + np.sqrt(5)) / 2))
        counts = self.counts.astype(np.float64)
        return np.minimum((np.sqrt(counts / threshold) + 1.0) * (threshold / counts), 1.0)

    def encode(self, tokens: Iterable[str]) -> np.ndarray:
        """Indices of the in-vocabulary tokens, in order (out-of-vocabulary ones dropped).

        Parameters
        ----------
        tokens : iterable of str

        Returns
        -------
        ndarray of dtype int32
        """
        get = self.index.get
        ids = np.fromiter((get(w, -1) for w in tokens), dtype=np.int32)
        return ids[ids >= 0]


def _encoded_chunks(
    X: Iterable, tokenizer, index: dict, min_tokens: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield (word ids, document number of each id) over whole documents.

    Each chunk gathers consecutive documents until they hold ``min_tokens``
    tokens; out-of-vocabulary tokens are then dropped, as gensim drops them
    before subsampling and windowing.
    """
    get = index.get
    unknown = repeat(-1)
    ids: list[int] = []
    lengths: list[int] = []
    for i, tokens in enumerate(iter_documents(X, tokenizer)):
        try:
            ids.extend(map(get, tokens, unknown))  # C-level loop: get(word, -1) per token
        except TypeError:
            raise token_error(tokens, i) from None
        lengths.append(len(tokens))
        if len(ids) >= min_tokens:
            yield _drop_oov(ids, lengths)
            ids, lengths = [], []
    if ids:
        yield _drop_oov(ids, lengths)


def _drop_oov(ids: list[int], lengths: list[int]) -> tuple[np.ndarray, np.ndarray]:
    ids_array = np.array(ids, dtype=np.int64)
    docs = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    known = ids_array >= 0
    return ids_array[known], docs[known]


def _chunk_windows(
    ids: np.ndarray,
    docs: np.ndarray,
    keep_probs: np.ndarray | None,
    window: int,
    rng: np.random.Generator,
    shrink_windows: bool,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The windows of one chunk's centre words, in blocks of at most ``_BLOCK_TOKENS``.

    Yields ``(centres, contexts, counts)``: the kept centre words of a block, the
    context words of all of them (centre by centre, each left to right: gensim's
    order) and each centre word's number of contexts (compiled:
    :func:`~sknce.words._kernels.window_contexts`). Blocks keep the output small
    even when one document is much longer than a chunk.
    """
    if keep_probs is not None:
        kept = rng.random(len(ids)) < keep_probs[ids]
        ids, docs = ids[kept], docs[kept]
    n = len(ids)
    if shrink_windows:
        reach = rng.integers(1, window + 1, size=n)
    else:
        reach = np.full(n, window, dtype=np.int64)
    for start in range(0, n, _BLOCK_TOKENS):
        stop = min(start + _BLOCK_TOKENS, n)
        contexts, counts = window_contexts(ids, docs, reach, window, start, stop)
        yield ids[start:stop], contexts, counts


def _windows(
    X: Iterable,
    tokenizer,
    vocab: Vocabulary,
    window: int,
    sample: float,
    batch_size: int,
    rng: np.random.Generator,
    shrink_windows: bool,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The window blocks of one pass over ``X`` (see :func:`_chunk_windows`)."""
    for name, value in (("window", window), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}.")
    keep_probs = vocab.keep_probs(sample)
    if np.all(keep_probs >= 1.0):
        keep_probs = None  # skip the draws when nothing would be dropped
    for ids, docs in _encoded_chunks(X, tokenizer, vocab.index, _CHUNK_TOKENS):
        yield from _chunk_windows(ids, docs, keep_probs, window, rng, shrink_windows)


def pair_batches(
    X: Iterable,
    tokenizer: Callable[[str], Sequence[str]] | None,
    vocab: Vocabulary,
    *,
    window: int,
    sample: float,
    batch_size: int,
    rng: np.random.Generator,
    shrink_windows: bool = True,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Stream skip-gram (centre, context) pairs over one pass of ``X``.

    Each document is encoded with ``vocab`` (out-of-vocabulary tokens dropped),
    each remaining token is kept with probability ``vocab.keep_probs(sample)``
    (frequent-word subsampling), and each kept token, as centre word, draws a
    window ``b`` uniformly from ``1..window`` (always ``window`` when
    ``shrink_windows=False``) and is paired with every kept token at most ``b``
    positions away in the same document: word2vec's and gensim's skip-gram
    sampling. Pairs come centre by centre in corpus order.

    The work is vectorised over chunks of whole documents (about 65k tokens),
    so memory is bounded by one chunk plus one batch, whatever the corpus
    length. A single document longer than a chunk forms its own chunk, whose
    word ids (8 bytes a token) are held at once; its pairs are still built and
    batched block by block.

    Parameters
    ----------
    X : iterable
        The corpus, as for :func:`iter_documents`.
    tokenizer : callable or None
        Splits string documents; ``None`` uses :func:`default_tokenizer`.
    vocab : Vocabulary
        The vocabulary that encodes words as indices.
    window : int
        Largest distance between a centre word and its context.
    sample : float
        Subsampling threshold, as for :meth:`Vocabulary.keep_probs` (0: none).
    batch_size : int
        Pairs per batch.
    rng : numpy.random.Generator
        Source of the subsampling and window draws (advanced in place).
    shrink_windows : bool, default=True
        Draw each centre word's window in ``1..window`` (word2vec's dynamic
        window, gensim's ``shrink_windows``); ``False`` always uses ``window``.

    Yields
    ------
    centres : ndarray of shape (batch_size,), dtype int64
        Indices of the centre words.
    contexts : ndarray of shape (batch_size,), dtype int64
        Indices of their context words. Every batch has ``batch_size`` pairs
        except the last, which holds the remaining ones (no empty batch).
    """
    blocks = _windows(X, tokenizer, vocab, window, sample, batch_size, rng, shrink_windows)
    # Pairs left over from the previous block (fewer than batch_size); they are
    # copied out so that no block outlives its turn (memory stays flat).
    rest_centres = rest_contexts = np.empty(0, dtype=np.int64)
    for block_centres, contexts, counts in blocks:
        centres = np.repeat(block_centres, counts)
        start = 0
        if len(rest_centres):
            start = batch_size - len(rest_centres)
            if len(centres) < start:
                rest_centres = np.concatenate([rest_centres, centres])
                rest_contexts = np.concatenate([rest_contexts, contexts])
                continue
            yield (
                np.concatenate([rest_centres, centres[:start]]),
                np.concatenate([rest_contexts, contexts[:start]]),
            )
        stop = start + (len(centres) - start) // batch_size * batch_size
        for i in range(start, stop, batch_size):
            yield centres[i : i + batch_size], contexts[i : i + batch_size]
        rest_centres, rest_contexts = centres[stop:].copy(), contexts[stop:].copy()
        del centres, contexts
    if len(rest_centres):
        yield rest_centres, rest_contexts


def cbow_batches(
    X: Iterable,
    tokenizer: Callable[[str], Sequence[str]] | None,
    vocab: Vocabulary,
    *,
    window: int,
    sample: float,
    batch_size: int,
    rng: np.random.Generator,
    shrink_windows: bool = True,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Stream CBOW examples (a centre word and its context words) over one pass of ``X``.

    The windows are those of :func:`pair_batches` (same subsampling, same window
    draws from the same ``rng``: a centre word's contexts are the context words of
    its skip-gram pairs); a centre word with no context word in its window makes
    no example, as it trains nothing in gensim.

    Parameters
    ----------
    X, tokenizer, vocab, window, sample, rng, shrink_windows
        As for :func:`pair_batches`.
    batch_size : int
        Examples (centre words) per batch.

    Yields
    ------
    ptr : ndarray of shape (n + 1,), dtype int64
        Example ``i``'s context words are ``contexts[ptr[i]:ptr[i + 1]]``.
    contexts : ndarray of shape (ptr[-1],), dtype int64
    centres : ndarray of shape (n,), dtype int64
        ``n`` is ``batch_size`` except in the last batch.
    """
    blocks = _windows(X, tokenizer, vocab, window, sample, batch_size, rng, shrink_windows)
    pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    n_pending = 0

    def split(final: bool):
        centres = np.concatenate([p[0] for p in pending])
        counts = np.concatenate([p[1] for p in pending])
        contexts = np.concatenate([p[2] for p in pending])
        ptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        stop = len(centres) if final else len(centres) // batch_size * batch_size
        for i in range(0, stop, batch_size):
            j = min(i + batch_size, stop)
            yield ptr[i : j + 1] - ptr[i], contexts[ptr[i] : ptr[j]], centres[i:j]
        return centres[stop:].copy(), counts[stop:].copy(), contexts[ptr[stop] :].copy()

    for centres, contexts, counts in blocks:
        has = counts > 0
        pending.append((centres[has], counts[has], contexts))
        n_pending += int(has.sum())
        if n_pending >= batch_size:
            rest = yield from split(final=False)
            pending, n_pending = [rest], len(rest[0])
    if n_pending:
        yield from split(final=True)
