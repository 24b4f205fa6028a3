"""Word vectors with character n-grams: a vector for any string (fastText, gensim).

:class:`SubwordVectors` is a :class:`~sknce.words.WordVectors` whose words are
also made of hashed character n-grams (fastText; Bojanowski et al., 2017). A
vocabulary word's vector is the mean of its own row and its n-grams' rows; any
other string's vector is the mean of its n-grams' rows (gensim's
``FastTextKeyedVectors.get_vector``, fastText's ``getWordVector``). Queries over
the vocabulary (neighbours, analogies) search the vocabulary's vectors, as
gensim does; a query word may be any string.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import numpy as np

from sknce.words._fasttext_format import load_facebook_model, write_facebook_model
from sknce.words._io import iter_word_pairs
from sknce.words._subwords import ngram_buckets, subword_table, word_means
from sknce.words._vectors import WordVectors, _ensure_list, _pearson_spearman, _unitvec

__all__ = ["SubwordVectors", "load_facebook_vectors", "save_facebook_model"]


class SubwordVectors(WordVectors):
    """Vectors of words and of character n-grams: a vector for any string.

    Parameters
    ----------
    words : sequence of str
        The vocabulary, one word per row of ``vectors_vocab``.
    vectors_vocab : array-like of shape (n_words, n_dims)
        Each word's own row (gensim's ``vectors_vocab``; fastText's first
        ``nwords`` input rows).
    vectors_ngrams : array-like of shape (bucket, n_dims)
        The rows of the hashed n-grams (gensim's ``vectors_ngrams``); ``bucket``
        is its number of rows, 0 for words alone.
    min_n : int, default=3
        Shortest n-gram, in characters.
    max_n : int, default=6
        Longest n-gram, in characters (below ``min_n``: no n-grams).
    counts : array-like of int of shape (n_words,), default=None
        Corpus count of each word.

    Attributes
    ----------
    vectors : ndarray of shape (n_words, n_dims)
        Each vocabulary word's vector: the mean of its row and its n-grams' rows
        (renewed by :meth:`adjust_vectors`).
    vectors_vocab, vectors_ngrams : ndarray
        The rows, as given (no copy when already float32 and C-ordered: a model
        training them in place updates these).
    min_n, max_n, bucket : int

    See Also
    --------
    sknce.words.WordVectors : the vocabulary-only vectors whose queries these extend.

    Examples
    --------
    >>> import numpy as np
    >>> from sknce.words import SubwordVectors
    >>> rng = np.random.default_rng(0)
    >>> wv = SubwordVectors(["walk", "talk"], rng.normal(size=(2, 4)), rng.normal(size=(50, 4)))
    >>> wv["walking"].shape  # not a vocabulary word: the mean of its n-grams' rows
    (4,)
    >>> "walking" in wv, wv.has_index_for("walking")
    (True, False)
    """

    def __init__(
        self,
        words: Sequence[str],
        vectors_vocab,
        vectors_ngrams,
        *,
        min_n: int = 3,
        max_n: int = 6,
        counts=None,
    ) -> None:
        vectors_vocab = np.require(vectors_vocab, np.float32, "C")
        vectors_ngrams = np.require(vectors_ngrams, np.float32, "C")
        if vectors_ngrams.ndim != 2 or vectors_ngrams.shape[1] != np.shape(vectors_vocab)[-1]:
            raise ValueError(
                f"vectors_ngrams has shape {vectors_ngrams.shape} but the word vectors have "
                f"{np.shape(vectors_vocab)[-1]} dimensions; pass a (bucket, n_dims) matrix."
            )
        if not (isinstance(min_n, int) and isinstance(max_n, int) and min_n >= 1):
            raise ValueError(f"min_n={min_n!r} and max_n={max_n!r} must be integers, min_n >= 1.")
        super().__init__(words, vectors_vocab.copy(), counts=counts)
        self.vectors_vocab = vectors_vocab
        self.vectors_ngrams = vectors_ngrams
        self.min_n, self.max_n = min_n, max_n
        self._table = subword_table(self.index_to_key, min_n, max_n, self.bucket)
        self.adjust_vectors()

    @property
    def bucket(self) -> int:
        """Number of n-gram rows."""
        return self.vectors_ngrams.shape[0]

    def __repr__(self) -> str:
        return (
            f"SubwordVectors({len(self)} words, {self.bucket} n-gram buckets, "
            f"{self.vector_size} dimensions)"
        )

    def adjust_vectors(self) -> None:
        """Renew ``vectors`` from ``vectors_vocab`` and ``vectors_ngrams`` (gensim's name)."""
        ptr, rows = self._table
        out = self._vectors
        if not out.flags.writeable:
            out = np.empty_like(self.vectors_vocab)
        word_means(self.vectors_vocab, self.vectors_ngrams, ptr, rows, out)
        self._vectors = out
        self._forget_norms()

    def ngram_rows(self, word: str) -> np.ndarray:
        """The rows of ``vectors_ngrams`` of a string's n-grams (repeats kept).

        Parameters
        ----------
        word : str
            Any string; its n-grams are those of ``<word>`` (fastText's boundary marks).

        Returns
        -------
        int64 array
        """
        if self.bucket == 0 or self.max_n < self.min_n:
            return np.empty(0, dtype=np.int64)
        return ngram_buckets([word], self.min_n, self.max_n, self.bucket)[1]

    def __contains__(self, key) -> bool:
        """True for any string when there are n-gram rows (gensim's rule), else the vocabulary."""
        if isinstance(key, str) and self.bucket > 0:
            return True
        return super().__contains__(key)

    def get_vector(self, key, norm: bool = False) -> np.ndarray:
        """The vector of a word, in the vocabulary or not.

        A vocabulary word (or row position) gets its row of ``vectors``; another
        string the mean of its n-grams' rows, or zeros if it has none (gensim).

        Parameters
        ----------
        key : str or int
            A word (any string), or the row position of a vocabulary word.
        norm : bool, default=False
            Scale it to unit length (a zero vector stays zero).

        Returns
        -------
        ndarray of shape (n_dims,)

        Raises
        ------
        KeyError
            For a string outside the vocabulary when there are no n-gram rows, or
            an integer that is not a row.
        """
        if self.has_index_for(key) or not isinstance(key, str) or self.bucket == 0:
            return super().get_vector(key, norm=norm)
        rows = self.ngram_rows(key)
        vector = np.zeros(self.vector_size, dtype=np.float32)
        if rows.shape[0]:
            vector = self.vectors_ngrams[rows].mean(axis=0, dtype=np.float64).astype(np.float32)
        if norm:
            vector = _unitvec(vector).astype(np.float32)
        vector.setflags(write=False)
        return vector

    def __getitem__(self, key_or_keys) -> np.ndarray:
        """The vector of one string (1-d), or of a list of strings (2-d)."""
        if isinstance(key_or_keys, (str, int, np.integer)):
            return self.get_vector(key_or_keys)
        return np.vstack([self.get_vector(key) for key in key_or_keys])

    def _vectorised(self, items) -> list:
        """Query items with each out-of-vocabulary string replaced by its unit vector."""
        out = []
        for item in _ensure_list(items):
            if isinstance(item, str) and not self.has_index_for(item):
                item = self.get_vector(item, norm=True)
            elif (
                isinstance(item, tuple)
                and len(item) == 2
                and isinstance(item[0], str)
                and not self.has_index_for(item[0])
            ):
                item = (self.get_vector(item[0], norm=True), item[1])
            out.append(item)
        return out

    def most_similar(
        self,
        positive=None,
        negative=None,
        topn: int | None = 10,
        restrict_vocab: int | None = None,
    ):
        """The vocabulary words most similar to a mean of words (any strings) and vectors.

        :meth:`WordVectors.most_similar`, where a query word outside the
        vocabulary enters with its unit n-gram vector (gensim's
        ``FastTextKeyedVectors``).

        Parameters
        ----------
        positive, negative, topn, restrict_vocab
            As :meth:`WordVectors.most_similar`.

        Returns
        -------
        list of (str, float), or ndarray of shape (n_words,) when ``topn`` is None
        """
        return super().most_similar(
            positive=self._vectorised(positive) if positive is not None else None,
            negative=self._vectorised(negative) if negative is not None else None,
            topn=topn,
            restrict_vocab=restrict_vocab,
        )

    def similarity(self, w1, w2) -> float:
        """Cosine similarity of the vectors of two strings (0 if one is zero).

        Parameters
        ----------
        w1, w2 : str or int
            Two words (any strings), or row positions of vocabulary words.

        Returns
        -------
        float
        """
        return float(np.dot(_unitvec(self.get_vector(w1)), _unitvec(self.get_vector(w2))))

    def evaluate_word_pairs(
        self,
        pairs: str | os.PathLike | Iterable[tuple[str, str, float]],
        *,
        delimiter: str = "\t",
        encoding: str = "utf8",
        restrict_vocab: int = 300000,
        case_insensitive: bool = True,
        dummy4unknown: bool = False,
        subwords: bool = True,
    ):
        """Correlate the cosine similarities of word pairs with human scores.

        With ``subwords=False`` exactly :meth:`WordVectors.evaluate_word_pairs`
        (gensim's ``FastTextKeyedVectors.evaluate_word_pairs``, which skips pairs
        with a word outside the vocabulary even though it has a vector). With
        ``subwords=True`` every pair is scored: a word outside the first
        ``restrict_vocab`` words by its n-gram vector (of the lower-cased word when
        ``case_insensitive``), and only a word with no n-gram row counts as
        unknown.

        Parameters
        ----------
        pairs, delimiter, encoding, restrict_vocab, case_insensitive, dummy4unknown
            As :meth:`WordVectors.evaluate_word_pairs`.
        subwords : bool, default=True
            Score the words outside the vocabulary by their n-grams.

        Returns
        -------
        pearson, spearman : 2-tuples
            Correlation and p-value.
        oov_ratio : float
            Percentage of pairs with a word outside the vocabulary (scored or not).
        """
        if not subwords or self.bucket == 0:
            return super().evaluate_word_pairs(
                pairs,
                delimiter=delimiter,
                encoding=encoding,
                restrict_vocab=restrict_vocab,
                case_insensitive=case_insensitive,
                dummy4unknown=dummy4unknown,
            )
        ok_vocab = self._ok_vocab(restrict_vocab, case_insensitive)
        gold, model = [], []
        n_pairs = oov = 0
        for a, b, score in iter_word_pairs(pairs, delimiter, False, encoding):
            n_pairs += 1
            keys = []
            for word in (a, b):
                row = ok_vocab.get(word.upper() if case_insensitive else word)
                keys.append(row if row is not None else word.lower() if case_insensitive else word)
            oov += any(isinstance(key, str) for key in keys)
            known = [not isinstance(k, str) or self.ngram_rows(k).shape[0] > 0 for k in keys]
            if not all(known):
                if dummy4unknown:
                    gold.append(score)
                    model.append(0.0)
                continue
            gold.append(score)
            model.append(self.similarity(*keys))
        if len(gold) < 2:
            raise ValueError(f"fewer than two scored word pairs in {pairs!r}.")
        oov_ratio = oov / max(n_pairs, 1) * 100
        return *_pearson_spearman(gold, model), oov_ratio

    def add_vectors(self, keys, weights, extras=None, replace: bool = False) -> None:
        """Not available: a word of SubwordVectors is its own row and its n-gram rows.

        Parameters
        ----------
        keys : list of str
            The words (refused).
        weights : array-like
            Their vectors (refused).
        extras : dict or None, default=None
            Per-word attributes (refused).
        replace : bool, default=False
            Whether existing words would be replaced (refused).

        Raises
        ------
        TypeError
            Always; ``WordVectors(wv.index_to_key, wv.vectors)`` gives word vectors
            that take new words.
        """
        raise TypeError(
            "SubwordVectors cannot add words: a word's vector is made of its own row and its "
            "n-gram rows. Add them to WordVectors(wv.index_to_key, wv.vectors) instead."
        )

    def save(self, path) -> None:
        """Save as a fastText ``.bin`` file (:func:`~sknce.words.save_facebook_model`).

        The output vectors are written as zeros; :meth:`load` reads the file back.

        Parameters
        ----------
        path : str or path-like
            The file.
        """
        save_facebook_model(path, self)

    @classmethod
    def load(cls, path, mmap: str | None = None) -> SubwordVectors:
        """Load a fastText ``.bin`` file (:func:`~sknce.words.load_facebook_vectors`).

        Parameters
        ----------
        path : str or path-like
            The file.
        mmap : None, default=None
            Only ``None``: the file is read into memory.

        Returns
        -------
        SubwordVectors
        """
        if mmap is not None:
            raise ValueError(
                f"mmap={mmap!r}: a fastText .bin file is read into memory; pass mmap=None."
            )
        return load_facebook_vectors(path)

    @classmethod
    def load_word2vec_format(cls, *args, **kwargs) -> WordVectors:
        """Read a word2vec-format file, which holds no n-grams, as :class:`WordVectors`.

        Parameters
        ----------
        *args, **kwargs
            Those of :meth:`WordVectors.load_word2vec_format`.

        Returns
        -------
        WordVectors
        """
        return WordVectors.load_word2vec_format(*args, **kwargs)

    def save_facebook_vec(self, path) -> None:
        """Write the vocabulary's vectors in fastText's ``.vec`` text format.

        The word2vec text format (fastText writes the same): a ``"<n_words> <dim>"``
        header and one word per line. The n-gram rows are not in a ``.vec`` file;
        :func:`~sknce.words.save_facebook_model` writes them (``.bin``).

        Parameters
        ----------
        path : str or path-like
            The file.
        """
        self.save_word2vec_format(path, binary=False)


def load_facebook_vectors(path: str | os.PathLike, encoding: str = "utf-8") -> SubwordVectors:
    """The vectors of a fastText ``.bin`` file: a vector for any string.

    gensim's ``load_facebook_vectors``: equal vectors for the vocabulary's words and
    for any other string (see the private module ``sknce.words._fasttext_format`` for the layouts
    read).

    Parameters
    ----------
    path : str or path-like
        The ``.bin`` file.
    encoding : str, default="utf-8"
        Encoding of the words in the file.

    Returns
    -------
    SubwordVectors
    """
    model = load_facebook_model(path, encoding=encoding, full_model=False)
    n = len(model.words)
    return SubwordVectors(
        model.words,
        model.input[:n],
        model.input[n:],
        min_n=model.args["minn"],
        max_n=model.args["maxn"],
        counts=model.counts,
    )


def save_facebook_model(
    path: str | os.PathLike,
    wv: SubwordVectors,
    output: np.ndarray | None = None,
    *,
    args: dict | None = None,
    ntokens: int | None = None,
    encoding: str = "utf-8",
) -> None:
    """Write vectors (and output vectors) as a fastText ``.bin`` file (version 12).

    As gensim's ``save_facebook_model``; fastText and gensim read the file.

    Parameters
    ----------
    path : str or path-like
        The ``.bin`` file.
    wv : SubwordVectors
        The vectors written: the vocabulary's rows and the n-gram rows.
    output : array-like of shape (n_words, dim) or None, default=None
        The output vectors; zeros when ``None``.
    args : dict or None, default=None
        Header fields under fastText's names
        (``sknce.words._fasttext_format.write_facebook_model``).
    ntokens : int or None, default=None
        Tokens of the corpus; default the sum of the word counts.
    encoding : str, default="utf-8"
        Encoding of the words in the file.
    """
    counts = wv.expandos.get("count")
    if counts is None:
        counts = np.ones(len(wv), dtype=np.int64)
    write_facebook_model(
        path,
        wv.index_to_key,
        counts,
        wv.vectors_vocab,
        wv.vectors_ngrams,
        wv.min_n,
        wv.max_n,
        output,
        args=args,
        ntokens=ntokens,
        encoding=encoding,
    )
