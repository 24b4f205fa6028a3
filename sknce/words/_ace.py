"""ACEWord2Vec: word2vec's vectors by NCE, optionally with adversarial negatives.

Bose, Ling and Cao (2018) replace word2vec's fixed noise by a mixture of the
noise and a generator that learns, by REINFORCE, to propose the negatives the
discriminator finds hardest. ``adversarial=False`` is plain negative sampling
(or NCE): the baseline every ACE figure is compared with, through the same
code. Both of word2vec's architectures are available (skip-gram and CBOW).
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Callable, Iterator
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import torch
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from skorch.callbacks import Callback, LRScheduler, ProgressBar

from sknce._base import APPLIED, FIXED, BaseNCE, Fixed, common_params
from sknce._callbacks import LinearDecay
from sknce._checkpoints import stamp_fingerprint
from sknce._checks import check_n_jobs
from sknce._compat import Interval, StrOptions, check_is_fitted
from sknce._warnings import warn_caller
from sknce.losses import BinaryNCELoss, NegativeSamplingLoss
from sknce.nn import ACESkipGram
from sknce.nn._inference import InferenceModule, WordMean
from sknce.noise import UnigramNoise
from sknce.words._corpus import Vocabulary, check_restartable
from sknce.words._growth import grow_network
from sknce.words._net import (
    ACEConfig,
    ACEKernelStep,
    ACEMiner,
    ACENet,
    DiscriminatorOptimizer,
    GeneratorSettings,
)
from sknce.words._sampler import CorpusDataset, WordSampler
from sknce.words._subword_model import (
    SubwordKernelStep,
    check_subword_memory,
    renew_subword_noise,
    subword_discriminator,
    subword_vectors,
    sync_subword_vectors,
)
from sknce.words._subword_vectors import SubwordVectors
from sknce.words._subwords import auto_bucket
from sknce.words._vectors import WordVectors, resolve_init_vectors
from sknce.words._weighting import encoded, fit_weighting, weighted_mean, word_weights

__all__ = ["ACEWord2Vec"]


class _Pretrained(NamedTuple):
    """Vocabulary rows found in ``init_vectors``, and their vectors."""

    rows: np.ndarray
    vectors: np.ndarray


class _Corpus(NamedTuple):
    """A fit's corpus, and what the fit's hooks derive from it."""

    X: object
    partial: bool
    update_vocabulary: bool
    vocab: Vocabulary | None = None
    noise: UnigramNoise | None = None
    n_documents: int | None = None
    new: bool = False
    pretrained: _Pretrained | None = None
    undo: Callable[[], None] | None = None


#: The role of the vocabulary's parameters in a continued fit.
_VOCABULARY = Fixed("built the vocabulary (partial_fit(update_vocabulary=True) adds words)")


class ACEWord2Vec(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseNCE):
    r"""word2vec's word vectors by adversarial contrastive estimation (ACE) or NCE.

    The discriminator is word2vec's network, :math:`D(c \mid t) = \sigma(u_t^\top v_c)`,
    trained to tell true examples of a corpus from negatives (Bose et al., 2018,
    Eq. 5–6): a (centre, context) pair with skip-gram (:math:`t` the context word,
    :math:`c` the centre word, as word2vec.c and gensim train it), the mean
    :math:`u_t` of a centre word's context vectors and the centre word :math:`c` with
    CBOW. With
    ``adversarial=True`` each negative comes from the mixture
    :math:`\lambda p_N + (1 - \lambda) G(\cdot \mid t)` of the unigram noise
    :math:`p_N \propto \text{count}^{0.75}` and a generator :math:`G` of the same
    architecture, which REINFORCE (Eq. 7) pushes towards the negatives the
    discriminator mistakes for true ones. With ``adversarial=False`` it is
    word2vec's negative sampling. The word vectors are the discriminator's input
    embeddings.

    On the CPU with ``optimizer=torch.optim.SGD`` and no ``optimizer_kwargs`` (the
    defaults) the discriminator is trained by a compiled kernel doing word2vec's
    per-example SGD update in place on the torch parameters, over ``n_jobs``
    threads, and the generator by a compiled REINFORCE step; any other optimizer,
    optimizer options, or ``device="cuda"`` train both by torch autograd on the core
    losses, one step per batch. There, plain SGD without options becomes
    ``torch.optim.Adam`` at ``lr / 2.5`` (1e-2 at the default ``lr``): one SGD step on
    a batch's mean loss is the kernel's per-example steps divided by ``batch_size``
    and leaves the vectors at chance.

    Read more in the :ref:`User Guide <words>`.

    Parameters
    ----------
    n_components : int, default=100
        Dimension of the word vectors (gensim's ``vector_size``).
    architecture : {"skipgram", "cbow"}, default="skipgram"
        ``"skipgram"``: each (centre, context) pair is an example, the context
        word's input vector predicting the centre word, the orientation in which
        word2vec.c and gensim (``sg=1``) train it (the pairs of one centre word come
        one after another). ``"cbow"``: each centre
        word is an example, predicted from the mean of its context words' vectors
        (gensim's ``sg=0, cbow_mean=1``; every context word receives the whole
        gradient of the mean, as in word2vec). The word vectors start uniform in
        ``[-1/d, 1/d)`` for CBOW (gensim 4's range), in ``[-0.5/d, 0.5/d]`` for
        skip-gram (word2vec's).
    window : int, default=5
        Largest distance between a centre word and its context.
    subwords : bool, default=False
        fastText's subword model (Bojanowski et al., 2017; gensim's ``FastText``):
        the input vector of a word is the mean of its own row and the rows of its
        character n-grams (``min_n`` to ``max_n`` characters of ``<word>``, hashed
        into ``bucket`` rows by fastText's FNV-1a), each row receiving the whole
        gradient of the mean. Then ``wv_`` is a :class:`~sknce.words.SubwordVectors`,
        which gives a vector to any string (the mean of its n-grams' rows), and
        ``vectors_`` holds each vocabulary word's mean. Trained by the same kernels
        and objectives, ACE included; ``generator_centre="discriminator"`` and
        ``partial_fit(update_vocabulary=True)`` adding words are not available with
        it. ``init_vectors`` then set the words' own rows. See :ref:`subwords`.
    min_n : int, default=3
        Shortest character n-gram with ``subwords`` (fastText's ``minn``).
    max_n : int, default=6
        Longest character n-gram with ``subwords`` (fastText's ``maxn``; below
        ``min_n``: words alone).
    bucket : int or "auto", default="auto"
        Rows of the hashed n-grams with ``subwords``: ``4 * bucket * n_components``
        bytes in the fit and in a saved ``.bin`` file (763 MiB for the 2,000,000 rows
        of fastText and gensim at 100 dimensions, 38 MiB per 100,000). Fewer rows
        share more n-grams. ``"auto"``: 8 rows per distinct n-gram of the
        vocabulary, at most 2,000,000; the fitted number is ``wv_.bucket``. See
        :ref:`subwords`.
    shrink_windows : bool, default=True
        Draw each centre word's window uniformly in ``1..window`` (word2vec's
        dynamic window, gensim's ``shrink_windows``); ``False`` always uses
        ``window``.
    min_count : int, default=5
        Words seen fewer times are dropped from the vocabulary.
    max_vocab_size : int or None, default=None
        Prune the rarest words while counting when the vocabulary grows beyond
        this size (gensim's ``max_vocab_size``); ``None``: no limit.
    max_final_vocab : int or None, default=None
        Keep at most this many words, by raising the count threshold above
        ``min_count`` when needed (gensim's ``max_final_vocab``, which drops all
        the words tied at the threshold); ``None``: no limit.
    trim_rule : callable or None, default=None
        ``trim_rule(word, count, min_count)`` returns ``RULE_DISCARD``, ``RULE_KEEP``
        or ``RULE_DEFAULT`` (of :mod:`sknce.words`, the values of gensim's) to drop a
        word, keep it, or apply the count threshold (gensim's ``trim_rule``; used
        while pruning and at the end of counting).
    sample : float, default=1e-3
        Frequent-word subsampling threshold (Mikolov et al., 2013, as gensim); 0
        disables it.
    n_negatives : int, default=5
        Negatives K per example.
    ns_exponent : float, default=0.75
        Exponent of the unigram noise :math:`p_N \propto \text{count}^{\alpha}`.
    objective : {"negative_sampling", "nce"}, default="negative_sampling"
        ``"negative_sampling"``: word2vec's loss
        (:func:`sknce.losses.negative_sampling`). ``"nce"``: binary NCE, the scores
        corrected by :math:`\log(K p_N(w))` (:func:`sknce.losses.binary_nce`).
    adversarial : bool, default=True
        Draw negatives from the noise/generator mixture (ACE); ``False``: from the
        noise alone.
    noise_mixture : float, default=0.75
        Weight :math:`\lambda` of the fixed noise in the mixture: each negative comes
        from :math:`p_N` with this probability, from the generator otherwise.
    n_candidates : int, default=128
        Size of the candidate set that approximates the generator's softmax per
        batch: the batch's queries (distinct centre words, or CBOW's context bags)
        are scored against ``n_candidates`` words drawn from :math:`p_N` in one matrix
        product, and the generator samples by importance resampling (see the User
        Guide). The cost of a batch grows linearly with it.
    reward_temperature : float, default=0.5
        Temperature of the sigmoid applied to the standardised rewards (Bose et
        al., 2018, Section 3).
    reward_baseline : bool, default=False
        Subtract the batch mean from the squashed rewards (a REINFORCE baseline),
        which are all positive otherwise.
    entropy_weight : float, default=0.0
        Weight of the entropy of the generator's distribution in its objective
        (a bonus: larger values keep the generator spread out).
    mask_false_negatives : bool, default=True
        Drop generator samples that are a true output word of their query in the
        batch (skip-gram: a word paired with the input word; CBOW: the centre
        word) from both the discriminator's loss and the generator's update.
    importance_weighting : bool, default=False
        Weight each generator sample in the discriminator's loss by
        :math:`p_N(\tilde w) / G(\tilde w \mid t)` (normalised to mean 1 per batch),
        truncated at ``max_importance_weight``.
    max_importance_weight : float, default=10.0
        Truncation of those weights (truncated importance sampling, Ionides 2008):
        no negative's SGD step exceeds this multiple of a plain one, at the price
        of a bias towards the generator's distribution.
    generator_lr : float, default=0.01
        Learning rate of the generator (SGD on the REINFORCE objective, summed over
        a batch's samples).
    generator_centre : {"own", "discriminator"}, default="own"
        Input vectors of the generator. ``"own"``: a generator
        :math:`G(\cdot \mid t) = \operatorname{softmax}(g_t^\top h)` with input vectors
        of its own (the paper's). ``"discriminator"``: :math:`g_t` is the
        discriminator's input vector :math:`u_t`, read without gradient
        (:class:`~sknce.nn.SharedCentreGenerator`); only the generator's output
        vectors are learned.
    adversarial_warmup : float, default=0.25
        Fraction of the training's epochs (rounded down to whole epochs) trained
        first with negatives from the noise alone, the generator neither used nor
        trained: early on the discriminator's scores, the generator's rewards, carry
        no signal. ACE then fine-tunes NCE vectors, as in the paper's rare-word
        experiment. The epochs counted are those of the learning-rate schedule
        (see ``min_lr_ratio``).
    tokenizer : callable or None, default=None
        Splits string documents into tokens; ``None``: ``CountVectorizer``'s default
        (words of 2+ word characters, lowercased). Token lists are used as given.
    init_vectors : dict, (words, matrix) pair, WordVectors, path or None, default=None
        Pretrained vectors to start from (fine-tuning): the input embedding of every
        vocabulary word found in them is initialised with its pretrained vector
        (their dimension must equal ``n_components``). A path is read in word2vec
        text or binary format. A ``UserWarning`` says when no vocabulary word is
        found in them.
    weighting : {"mean", "tfidf", "sif"}, default="mean"
        How :meth:`transform` averages a document's word vectors: plain mean;
        weighted by tf-idf (idf of the training documents, smoothed as
        :class:`~sklearn.feature_extraction.text.TfidfTransformer`); or SIF (Arora,
        Liang and Ma, 2017): each word weighted by :math:`a / (a + p(w))` with
        :math:`p(w)` its corpus frequency and :math:`a` = ``sif_a``, then the first
        principal component of the training documents' vectors removed.
    sif_a : float, default=1e-3
        The :math:`a` of SIF's weights (the paper's default).
    min_lr_ratio : float, default=1e-4
        The learning rate decays linearly, batch by batch, from ``lr`` to
        ``lr * min_lr_ratio`` over the whole training (word2vec's
        ``min_alpha / alpha``): the epochs already trained plus ``max_epochs``
        (``fit``, a warm start, a fit resumed from a checkpoint), or ``max_epochs``
        passes (:meth:`partial_fit`). A :class:`skorch.callbacks.LRScheduler` in
        ``callbacks`` replaces this decay: the rate then starts at ``lr`` and follows
        the user's schedule alone.
    n_jobs : int or None, default=None
        Threads of the fit: of the compiled kernel, and of torch and the BLAS
        libraries on the autograd path and in inference. ``None`` means one kernel
        thread (unless in a :func:`joblib.parallel_config` context) and one torch
        thread while a step is small; ``-1``: every core (``n_jobs=-1`` is the fast
        setting on a machine of your own). With more than one, the kernel's threads
        update shared rows without locks, as word2vec and gensim do, and a batch's
        generator step overlaps the previous batch's kernel: faster, but a fit is
        bit-reproducible with ``random_state`` only with one thread (or on the
        autograd path). See :ref:`threads`.
    max_epochs : int, default=20
        Passes over the corpus.
    batch_size : int, default=10000
        Examples per batch ((centre, context) pairs, or CBOW's centre words): one
        generator step, one torch step on the autograd path.
    lr : float, default=0.025
        Initial learning rate of the discriminator (word2vec's ``alpha``).
    optimizer : torch optimizer class, default=torch.optim.SGD
        ``torch.optim.SGD`` (without ``optimizer_kwargs``) uses the compiled kernel on
        the CPU, and becomes ``torch.optim.Adam`` at ``lr / 2.5`` where the kernel does
        not run (a GPU); any other :class:`torch.optim.Optimizer` subclass (e.g.
        ``torch.optim.Adam``), or SGD with options, trains the discriminator by autograd
        with it, at ``lr``.
    optimizer_kwargs : dict or None, default=None
        Further options of the optimizer, e.g. ``{"weight_decay": 1e-4}`` (not ``lr``);
        a keyword the optimizer does not take is a ``ValueError``. Any option
        selects the autograd path.
    callbacks : list of skorch callbacks or None, default=None
        :mod:`skorch.callbacks` (or ``(name, callback)`` pairs) run after sknce's own
        (divergence guard, learning-rate decay, early stopping, progress bar): e.g.
        ``Checkpoint`` with ``LoadInitState`` to resume a fit, ``LRScheduler`` (which
        replaces the decay of ``min_lr_ratio``), ``EpochScoring``. A callback
        receives the skorch net; ``net.estimator`` is this estimator, whose
        ``vectors_`` and ``wv_`` are those of the epoch when it ends
        (``on_epoch_end``), on any device. A fit interrupted after ``k`` of its
        ``max_epochs=T`` epochs and resumed from its checkpoint by
        ``LoadInitState`` with ``max_epochs=T - k`` gives the weights of the
        uninterrupted fit with one kernel thread (the decay and the warm-up count
        the checkpoint's epochs). See :ref:`customising`.
    warm_start : bool, default=False
        When already fitted, ``fit`` continues training the fitted network for
        ``max_epochs`` more epochs, keeping the vocabulary (new words are ignored;
        see :meth:`partial_fit` to add them). The continued epochs take the rates
        and warm-up of the last ``max_epochs`` epochs of a longer fit, but the
        first fit's rate had already decayed over its own epochs: ``k`` epochs then
        ``m`` more equal ``k + m`` epochs in one fit (with one kernel thread) only
        with ``min_lr_ratio=1`` and, for ACE,
        ``int(adversarial_warmup * k) == int(adversarial_warmup * (k + m))`` (e.g.
        ``adversarial_warmup=0``).
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
        Where the networks train; ``"auto"`` takes a GPU when one is present. The
        compiled kernel runs on the CPU only: on a GPU (``"cuda"``, or ``"auto"``
        with a GPU present) both networks train by autograd, one step per batch, the
        path the CPU takes for any other optimizer, where the default plain SGD
        becomes Adam at ``lr / 2.5`` (see ``optimizer``; :ref:`gpu-check`).
    random_state : int, RandomState instance or None, default=None
        Seeds the initial vectors, subsampling, windows and negatives.
    verbose : int, default=0
        1 prints a progress bar and the loss of each epoch.
    early_stopping : bool, default=False
        Hold out the documents of ``validation_fraction`` of the corpus; after each
        epoch, compute the discriminator's loss on their examples against fixed
        noise negatives (the same examples and negatives every epoch); stop when it
        has not improved for ``patience`` epochs and restore the best vectors. The
        learning rate still decays over ``max_epochs``.
    validation_fraction : float, default=0.1
        Share of the documents held out with ``early_stopping``.
    patience : int, default=5
        Epochs without improvement before early stopping.
    accelerator : accelerate.Accelerator or None, default=None
        Train data-parallel over the processes of ``accelerate launch`` (or
        ``torchrun``), on the accelerator's device: every process runs the same fit
        on the same corpus, trains on its share of the documents, and the processes
        average their parameters every 8 batches and at the end of each epoch (local
        SGD: the kernel's in-place updates leave no gradients to average); all end
        with the same vectors. Mixed precision is not used. ``device`` is then
        unused. Needs the ``distributed`` extra; see :ref:`scaling`.

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Row of each word in ``vectors_``, most frequent first (words added by
        ``partial_fit(..., update_vocabulary=True)`` follow, in order of addition).
    vectors_ : ndarray of shape (n_words, n_components), float32
        The word vectors (the discriminator's input embeddings).
    wv_ : WordVectors or SubwordVectors
        The vectors with their queries and I/O (gensim's ``model.wv``); a
        :class:`~sknce.words.SubwordVectors` with ``subwords=True``.
    counts_ : ndarray of shape (n_words,)
        Corpus count of each word.
    noise_ : UnigramNoise
        The fixed noise distribution :math:`p_N`.
    n_init_vectors_ : int
        Vocabulary words initialised from ``init_vectors`` (0 without).
    idf_ : ndarray of shape (n_words,)
        Inverse document frequency of each word (``weighting="tfidf"`` only).
    sif_component_ : ndarray of shape (n_components,)
        The unit first principal component removed by SIF (``weighting="sif"``).
    net_ : NCENet
        The skorch net holding the networks (``net_.module_.discriminator``,
        ``net_.module_.generator``).
    history_ : list of dict
        Per-epoch ``train_loss`` (mean per example), ``valid_loss`` with early
        stopping, ``dur`` (seconds).
    n_iter_ : int
        Epochs (passes) run.

    See Also
    --------
    sknce.words.WordVectors : Queries and I/O of trained vectors.

    Notes
    -----
    Input is a corpus, not a 2-D array: like ``CountVectorizer``, the estimator sets
    the tags ``input_tags.two_d_array=False`` and ``input_tags.string=True``, so
    scikit-learn's common checks (which all feed numeric 2-D arrays) are skipped;
    the API checks that do not need data, cloning, pickling, grid search in a
    pipeline and reproducibility are tested on token lists instead.

    References
    ----------
    .. [1] A. J. Bose, H. Ling and Y. Cao, "Adversarial Contrastive Estimation",
       ACL 2018 (workshop version: Section 3, Eq. 5–7, Appendix B).
    .. [2] T. Mikolov, I. Sutskever, K. Chen, G. Corrado and J. Dean, "Distributed
       Representations of Words and Phrases and their Compositionality", NIPS 2013.
    .. [3] S. Arora, Y. Liang and T. Ma, "A Simple but Tough-to-Beat Baseline for
       Sentence Embeddings", ICLR 2017.

    Examples
    --------
    >>> from sknce import ACEWord2Vec
    >>> docs = [["cat", "purrs", "cat", "meows"], ["dog", "barks", "dog", "growls"]] * 50
    >>> model = ACEWord2Vec(n_components=8, min_count=1, sample=0, max_epochs=20,
    ...                     adversarial=False, random_state=0).fit(docs)
    >>> model.transform([["cat", "unknown"], ["dog"]]).shape
    (2, 8)
    >>> model.wv_.most_similar("purrs", topn=1)[0][0] in {"cat", "meows"}
    True
    """

    _parameter_constraints: dict = {
        **BaseNCE._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "architecture": [StrOptions({"skipgram", "cbow"})],
        "window": [Interval(Integral, 1, None, closed="left")],
        "subwords": ["boolean"],
        "min_n": [Interval(Integral, 1, None, closed="left")],
        "max_n": [Interval(Integral, 0, None, closed="left")],
        "bucket": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "shrink_windows": ["boolean"],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "max_vocab_size": [Interval(Integral, 1, None, closed="left"), None],
        "max_final_vocab": [Interval(Integral, 1, None, closed="left"), None],
        "trim_rule": [callable, None],
        "sample": [Interval(Real, 0, None, closed="left")],
        "n_negatives": [Interval(Integral, 1, None, closed="left")],
        "ns_exponent": [Interval(Real, 0, None, closed="left")],
        "objective": [StrOptions({"negative_sampling", "nce"})],
        "adversarial": ["boolean"],
        "noise_mixture": [Interval(Real, 0, 1, closed="both")],
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "reward_temperature": [Interval(Real, 0, None, closed="neither")],
        "entropy_weight": [Interval(Real, 0, None, closed="left")],
        "reward_baseline": ["boolean"],
        "mask_false_negatives": ["boolean"],
        "importance_weighting": ["boolean"],
        "max_importance_weight": [Interval(Real, 1, None, closed="left")],
        "generator_lr": [Interval(Real, 0, None, closed="neither")],
        "generator_centre": [StrOptions({"own", "discriminator"})],
        "adversarial_warmup": [Interval(Real, 0, 1, closed="left")],
        "tokenizer": [callable, None],
        "init_vectors": "no_validation",
        "weighting": [StrOptions({"mean", "tfidf", "sif"})],
        "sif_a": [Interval(Real, 0, None, closed="neither")],
        "min_lr_ratio": [Interval(Real, 0, 1, closed="both")],
    }

    _param_roles: dict = {
        **BaseNCE._param_roles,
        "window": APPLIED,
        "shrink_windows": APPLIED,
        "sample": APPLIED,
        "n_negatives": APPLIED,
        "noise_mixture": APPLIED,
        "n_candidates": APPLIED,
        "reward_temperature": APPLIED,
        "reward_baseline": APPLIED,
        "entropy_weight": APPLIED,
        "mask_false_negatives": APPLIED,
        "importance_weighting": APPLIED,
        "max_importance_weight": APPLIED,
        "generator_lr": APPLIED,
        "adversarial_warmup": APPLIED,
        "min_lr_ratio": APPLIED,
        "tokenizer": APPLIED,
        "weighting": APPLIED,
        "sif_a": APPLIED,
        "n_jobs": APPLIED,
        "n_components": FIXED,
        "architecture": FIXED,
        "subwords": FIXED,
        "min_n": Fixed("fixed the n-grams of each word and their rows"),
        "max_n": Fixed("fixed the n-grams of each word and their rows"),
        "bucket": Fixed("fixed the n-grams' rows"),
        "generator_centre": FIXED,
        "adversarial": Fixed("fixed the objective"),
        "objective": Fixed("fixed the objective"),
        "min_count": _VOCABULARY,
        "max_vocab_size": _VOCABULARY,
        "max_final_vocab": _VOCABULARY,
        "trim_rule": _VOCABULARY,
        "ns_exponent": Fixed("fixed the noise distribution"),
        "init_vectors": Fixed("set where the vectors started"),
    }

    def __init__(
        self,
        *,
        n_components: int = 100,
        architecture: str = "skipgram",
        window: int = 5,
        subwords: bool = False,
        min_n: int = 3,
        max_n: int = 6,
        bucket: int | str = "auto",
        shrink_windows: bool = True,
        min_count: int = 5,
        max_vocab_size: int | None = None,
        max_final_vocab: int | None = None,
        trim_rule=None,
        sample: float = 1e-3,
        n_negatives: int = 5,
        ns_exponent: float = 0.75,
        objective: str = "negative_sampling",
        adversarial: bool = True,
        noise_mixture: float = 0.75,
        n_candidates: int = 128,
        reward_temperature: float = 0.5,
        reward_baseline: bool = False,
        entropy_weight: float = 0.0,
        mask_false_negatives: bool = True,
        importance_weighting: bool = False,
        max_importance_weight: float = 10.0,
        generator_lr: float = 0.01,
        generator_centre: str = "own",
        adversarial_warmup: float = 0.25,
        tokenizer=None,
        init_vectors=None,
        weighting: str = "mean",
        sif_a: float = 1e-3,
        min_lr_ratio: float = 1e-4,
        n_jobs: int | None = None,
        max_epochs: int = 20,
        batch_size: int = 10000,
        lr: float = 0.025,
        optimizer=torch.optim.SGD,
        optimizer_kwargs: dict | None = None,
        callbacks: list | None = None,
        warm_start: bool = False,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        patience: int = 5,
        accelerator=None,
    ) -> None:
        super().__init__(**common_params(locals()))
        self.n_components = n_components
        self.architecture = architecture
        self.window = window
        self.subwords = subwords
        self.min_n = min_n
        self.max_n = max_n
        self.bucket = bucket
        self.shrink_windows = shrink_windows
        self.min_count = min_count
        self.max_vocab_size = max_vocab_size
        self.max_final_vocab = max_final_vocab
        self.trim_rule = trim_rule
        self.sample = sample
        self.n_negatives = n_negatives
        self.ns_exponent = ns_exponent
        self.objective = objective
        self.adversarial = adversarial
        self.noise_mixture = noise_mixture
        self.n_candidates = n_candidates
        self.reward_temperature = reward_temperature
        self.reward_baseline = reward_baseline
        self.entropy_weight = entropy_weight
        self.mask_false_negatives = mask_false_negatives
        self.importance_weighting = importance_weighting
        self.max_importance_weight = max_importance_weight
        self.generator_lr = generator_lr
        self.generator_centre = generator_centre
        self.adversarial_warmup = adversarial_warmup
        self.tokenizer = tokenizer
        self.init_vectors = init_vectors
        self.weighting = weighting
        self.sif_a = sif_a
        self.min_lr_ratio = min_lr_ratio

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        return tags

    # --- fitting ----------------------------------------------------------------------
    def _config(self, schedule_epochs: int | None) -> ACEConfig:
        return ACEConfig(
            objective=self.objective,
            n_negatives=self.n_negatives,
            adversarial=self.adversarial,
            adversarial_warmup=self.adversarial_warmup,
            schedule_epochs=schedule_epochs,
        )

    def _make_step(self) -> ACEKernelStep:
        """word2vec's compiled SGD over ``n_jobs`` threads (where it applies, see the class);
        fastText's with ``subwords``."""
        step = SubwordKernelStep if self.subwords else ACEKernelStep
        return step(check_n_jobs(self.n_jobs))

    def _continued_roles(self) -> dict:
        """``min_lr_ratio`` is fixed when the fit planned no decay of the rate
        (``min_lr_ratio=1``, or an ``LRScheduler`` callback)."""
        roles = super()._continued_roles()
        if "lr_decay" in dict(self.net_.callbacks_):
            return roles
        return {
            **roles,
            "min_lr_ratio": Fixed(
                "planned no decay of the rate (min_lr_ratio=1, or an LRScheduler callback)"
            ),
        }

    def _update_net(self, net) -> None:
        """The step, the schedule's negatives and warm-up, the generator's settings and
        rate, and the end of the rate's decay, from the parameters."""
        super()._update_net(net)
        net.config = dataclasses.replace(
            net.config, n_negatives=self.n_negatives, adversarial_warmup=self.adversarial_warmup
        )
        decay = dict(net.callbacks_).get("lr_decay")
        if decay is not None:
            decay.end_ratio = self.min_lr_ratio
        miner = net.miner
        if miner is not None:
            miner.settings = GeneratorSettings.of(self)
            miner.lr = self.generator_lr
            for group in net.optimizer_miner_.param_groups:
                group["lr"] = self.generator_lr

    def _discriminator_optimizer(self) -> DiscriminatorOptimizer:
        """The discriminator's optimizer and rate where this fit's net trains."""
        return DiscriminatorOptimizer.resolve(
            self._make_step(),
            self.optimizer,
            self.optimizer_kwargs or {},
            self.lr,
            self._resolve_device(),  # a continued fit's: the device cannot change
        )

    def _optimizer_class(self) -> type:
        """``optimizer``; plain SGD becomes Adam where the kernel does not run (a GPU)."""
        return self._discriminator_optimizer().optimizer

    def _fit_lr(self) -> float:
        """``lr``; Adam's rate where plain SGD becomes Adam (see ``_optimizer_class``)."""
        return self._discriminator_optimizer().lr

    def _check_params(self) -> None:
        """Errors naming the fix for ``n_jobs``, and for what the subword model does not do
        or cannot hold."""
        check_n_jobs(self.n_jobs)
        if self.subwords and self.bucket != "auto":  # "auto" is at most fastText's default
            check_subword_memory(self.bucket, self.n_components)
        if self.subwords and self.adversarial and self.generator_centre == "discriminator":
            raise ValueError(
                "generator_centre='discriminator' reads one input row per word, and with "
                "subwords=True a word's input vector is the mean of several rows; use "
                "generator_centre='own' (the default) with subwords."
            )

    def _make_miner(self) -> ACEMiner | None:
        """The generator, with ``adversarial=True``."""
        if not self.adversarial:
            return None
        return ACEMiner(self.generator_lr, GeneratorSettings.of(self))

    def _divergence_hint(self) -> str:
        hint = "Lower lr (this call ran at {lr})"
        if self.adversarial and self.importance_weighting:
            hint += (
                f", lower max_importance_weight (now {self.max_importance_weight}), or set "
                "importance_weighting=False"
            )
        return hint + "."

    def _progress_bar(self) -> ProgressBar:
        return ProgressBar(batches_per_epoch="count")

    def _vocabulary_options(self) -> dict:
        return dict(
            tokenizer=self.tokenizer,
            min_count=self.min_count,
            max_vocab_size=self.max_vocab_size,
            max_final_vocab=self.max_final_vocab,
            trim_rule=self.trim_rule,
        )

    def _fitted_vocabulary(self, n_documents: int = 0) -> Vocabulary:
        return Vocabulary(
            list(self.vocabulary_), self.counts_, n_raw_tokens=0, n_documents=n_documents
        )

    def _init_rows(self, vocab: Vocabulary) -> _Pretrained | None:
        """The vocabulary rows found in ``init_vectors`` and their pretrained vectors."""
        if self.init_vectors is None:
            return None
        pretrained = resolve_init_vectors(self.init_vectors)
        if pretrained.vectors.shape[1] != self.n_components:
            raise ValueError(
                f"init_vectors have {pretrained.vectors.shape[1]} dimensions but "
                f"n_components={self.n_components}; set n_components to their dimension."
            )
        rows = [(i, pretrained.index[w]) for i, w in enumerate(vocab.words) if w in pretrained]
        if not rows:
            warn_caller(
                f"none of the {len(vocab)} vocabulary words is in init_vectors "
                f"({len(pretrained)} words, e.g. {pretrained.words[:3]}): every vector "
                "starts at random. Check that both use the same tokenisation and case.",
                UserWarning,
            )
            return _Pretrained(np.empty(0, dtype=np.int64), pretrained.vectors[:0])
        ours, theirs = (np.asarray(r) for r in zip(*rows))
        return _Pretrained(ours, pretrained.vectors[theirs])

    def _init_width(self) -> float:
        """Half-width, times the dimension, of the uniform start of the word vectors.

        gensim 4's 1 (uniform in ``[-1/d, 1/d)``) for CBOW, whose input is the mean of
        several vectors and so starts smaller than one, and for subwords (fastText's);
        word2vec's 0.5 for skip-gram.
        """
        return 1.0 if self.architecture == "cbow" or self.subwords else 0.5

    def _expected_examples(self, vocab: Vocabulary) -> float:
        """An upper bound of the examples of one epoch (edges of documents have fewer)."""
        kept = float(np.sum(vocab.counts * vocab.keep_probs(self.sample)))
        fraction = 1.0 - self.validation_fraction if self.early_stopping else 1.0
        if self.architecture == "cbow":
            per_word = 1.0
        else:
            per_word = self.window + 1.0 if self.shrink_windows else 2.0 * self.window
        return max(kept * fraction * per_word, 1.0)

    def _sampler(self, vocab: Vocabulary, noise: UnigramNoise, device) -> WordSampler:
        return WordSampler(
            vocab,
            self.tokenizer,
            self.window,
            self.sample,
            noise,
            self.n_negatives,
            self.noise_mixture,
            self.n_candidates,
            device,
            architecture=self.architecture,
            shrink_windows=self.shrink_windows,
        )

    # --- the hooks of the fit skeleton --------------------------------------------------
    def _validate_fit_data(
        self, X, y, *, reset: bool, partial: bool, update_vocabulary: bool = False
    ) -> _Corpus:
        """The corpus: restartable when read more than once (every fit but some passes)."""
        if isinstance(X, (str, bytes)) or not partial:
            check_restartable(X)  # (also the error for a single string)
        elif reset or update_vocabulary or self.weighting != "mean":
            check_restartable(X)
        return _Corpus(X, partial, update_vocabulary)

    def _start_fit(self, data: _Corpus, seeds) -> _Corpus:
        """The vocabulary, the noise and the pretrained rows of a new fit."""
        vocab = Vocabulary.build(data.X, **self._vocabulary_options())
        noise = UnigramNoise(vocab.counts, self.ns_exponent)
        pretrained = self._init_rows(vocab)
        self.n_init_vectors_ = 0 if pretrained is None else len(pretrained.rows)
        self._forget_vectors()  # a new network gets a new wv_
        self._set_vocabulary(vocab, noise)
        return data._replace(
            vocab=vocab,
            noise=noise,
            n_documents=vocab.n_documents,
            new=True,
            pretrained=pretrained,
        )

    def _continue_fit(self, data: _Corpus) -> _Corpus:
        """The fitted vocabulary (grown with ``update_vocabulary``), the schedule's span."""
        vocab, noise, undo = self._fitted_vocabulary(), self.noise_, None
        n_documents = None
        if not data.partial:
            vocab = self._fitted_vocabulary(n_documents=sum(1 for _ in data.X))
            n_documents = vocab.n_documents
        elif data.update_vocabulary:
            grown = vocab.updated(data.X, **self._vocabulary_options())
            n_documents = grown.n_documents
            if not np.array_equal(grown.counts[: len(vocab)], vocab.counts) or len(grown) > len(
                vocab
            ):
                noise = UnigramNoise(grown.counts, self.ns_exponent).to(self.net_.device)
                if self.subwords:
                    undo = renew_subword_noise(self.net_, len(vocab), len(grown), noise)
                else:
                    undo = grow_network(
                        self.net_, len(grown), self.n_components, self._init_width(), noise
                    )
            vocab = grown
        # partial_fit's n-th pass takes the rate (and warm-up) of fit's n-th epoch: the
        # schedule spans max_epochs passes. A warm start spans the epochs already
        # trained plus its own max_epochs.
        total = self.max_epochs if data.partial else None
        self.net_.config.schedule_epochs = total
        for name, callback in self.net_.callbacks_:
            if name == "lr_decay":
                callback.total_epochs = total
        self._set_vocabulary(vocab, noise)
        # Checkpoints carry it: resuming one of another vocabulary is an error.
        stamp_fingerprint(self.net_.module_, "vocabulary", vocab.words)
        self._sync_vectors()
        return data._replace(vocab=vocab, noise=noise, n_documents=n_documents, undo=undo)

    def _make_dataset(self, data: _Corpus, device: str) -> CorpusDataset:
        data.noise.to(device)  # in place
        sampler = self._sampler(data.vocab, data.noise, device)
        return CorpusDataset(data.X, sampler, data.n_documents)

    def _make_module(self, data: _Corpus, seeds) -> ACESkipGram:
        discriminator = None
        if self.subwords:
            words, min_n, max_n = data.vocab.words, self.min_n, self.max_n
            bucket = auto_bucket(words, min_n, max_n) if self.bucket == "auto" else self.bucket
            discriminator = subword_discriminator(words, self.n_components, min_n, max_n, bucket)
        module = ACESkipGram(
            len(data.vocab),
            self.n_components,
            adversarial=self.adversarial,
            generator_centre=self.generator_centre,
            discriminator=discriminator,
        )
        with torch.no_grad():  # SkipGram starts at word2vec's +-0.5/d
            module.discriminator.input_embeddings.weight.mul_(2.0 * self._init_width())
            if data.pretrained is not None and len(data.pretrained.rows):
                weight = module.discriminator.input_embeddings.weight
                weight[torch.as_tensor(data.pretrained.rows)] = torch.as_tensor(
                    data.pretrained.vectors
                )
        stamp_fingerprint(module, "vocabulary", data.vocab.words)
        return module

    def _make_objective(self) -> BinaryNCELoss | NegativeSamplingLoss:
        if self.objective == "nce":
            return BinaryNCELoss(learn_gamma=False)
        return NegativeSamplingLoss()

    def _net_options(self, data: _Corpus) -> dict:
        """ACENet with the noise, the warm-up schedule, the vectors' and the rate's callbacks."""
        total = self.max_epochs if data.partial else None
        extra = [("vectors", _FreshVectors())]
        if self.min_lr_ratio < 1 and not self._user_lr_schedule():
            schedule = LinearDecay(self.min_lr_ratio, self._expected_examples(data.vocab), total)
            extra.append(("lr_decay", schedule))
        return {
            "net_class": ACENet,
            "extra_callbacks": extra,
            "noise": data.noise,
            "config": self._config(total),
            "prefetch": True,
        }

    @contextlib.contextmanager
    def _training(self, data: _Corpus, device: str) -> Iterator[None]:
        """A grown network shrinks back if the pass fails."""
        try:
            yield
        except BaseException:
            if data.undo is not None:
                data.undo()
            raise

    def _after_fit(self, data: _Corpus) -> None:
        self._sync_vectors()  # after early stopping's restore
        fit_weighting(self, data.X, reset=data.new or not data.partial)

    def _user_lr_schedule(self) -> bool:
        """Whether ``callbacks`` hold a skorch ``LRScheduler`` (it replaces the decay)."""
        for callback in self.callbacks or ():
            if isinstance(callback, tuple):
                callback = callback[1]
            if isinstance(callback, LRScheduler):
                return True
        return False

    def _set_vocabulary(self, vocab: Vocabulary, noise: UnigramNoise) -> None:
        """The fitted vocabulary, its counts and the noise."""
        self.vocabulary_ = dict(vocab.index)
        self.counts_ = vocab.counts
        self.noise_ = noise

    def _forget_vectors(self) -> None:
        """Drop ``vectors_`` and ``wv_``; a held ``wv_`` forgets its cached norms."""
        wv = self.__dict__.pop("wv_", None)
        if wv is not None:
            wv._forget_norms()  # a held reference may still view the trained weights
        self.__dict__.pop("vectors_", None)

    def _sync_vectors(self) -> None:
        """Make ``vectors_`` and ``wv_`` those of the current weights and vocabulary.

        On the CPU they view the weights, which training updates in place: only
        ``wv_``'s cached norms are dropped. From another device the weights are
        copied into ``vectors_``. ``wv_`` is kept while the words and their counts
        are unchanged, so that a ``wv = model.wv_`` held across ``partial_fit`` or a
        warm start stays the model's (as gensim's ``model.wv``); otherwise a new one
        views the weights. With subwords, ``wv_`` is a
        :class:`~sknce.words.SubwordVectors` and ``vectors_`` its word vectors (the
        means of rows), recomputed.
        """
        if self.subwords:
            self._sync_subword_vectors()
            return
        host, is_view = _on_host(self.net_.module_.discriminator.input_embeddings.weight)
        wv = getattr(self, "wv_", None)
        if (
            wv is None
            or wv.index_to_key != list(self.vocabulary_)
            or not np.array_equal(wv.expandos.get("count"), self.counts_)
        ):
            self._forget_vectors()
            self.vectors_ = host
            self.wv_ = WordVectors(list(self.vocabulary_), host, counts=self.counts_)
        elif is_view and np.may_share_memory(host, self.vectors_):
            self.wv_._forget_norms()
        elif not is_view and host.shape == self.vectors_.shape:
            np.copyto(self.vectors_, host)
            self.wv_._forget_norms()
        else:  # new parameters (another network): view them
            self.vectors_ = host
            self.wv_.vectors = host

    def _sync_subword_vectors(self) -> None:
        """:meth:`_sync_vectors` with subwords: ``wv_`` views the rows, ``vectors_`` the means."""
        discriminator = self.net_.module_.discriminator
        wv = getattr(self, "wv_", None)
        if (
            not isinstance(wv, SubwordVectors)
            or wv.index_to_key != list(self.vocabulary_)
            or not np.array_equal(wv.expandos.get("count"), self.counts_)
        ):
            self._forget_vectors()
            words = list(self.vocabulary_)
            self.wv_ = subword_vectors(words, self.counts_, discriminator, self.min_n, self.max_n)
        else:
            sync_subword_vectors(wv, discriminator)
        self.vectors_ = self.wv_.vectors

    def fit(self, X, y=None) -> ACEWord2Vec:
        """Learn the vocabulary and the word vectors from a corpus.

        With ``warm_start=True`` and a fitted model, the vocabulary is kept (new
        words are ignored) and training continues from the fitted vectors.

        Parameters
        ----------
        X : iterable of token lists, or of str
            A restartable corpus (a list, or an object whose ``__iter__`` starts a
            new pass, such as gensim's ``LineSentence``): it is read once for the
            vocabulary, once per epoch, and once more for ``weighting="tfidf"`` or
            ``"sif"``, never held in memory by the estimator. Strings are split by
            ``tokenizer``.
        y : None
            Ignored.

        Returns
        -------
        self : ACEWord2Vec

        Raises
        ------
        TypeError
            If ``X`` is a one-shot iterator (a generator) or not a corpus, or a
            token is not a string (the error names the document).
        ValueError
            If the corpus is empty, no word is kept in the vocabulary, or it yields
            no (centre, context) pair.
        """
        return super().fit(X, y)

    def partial_fit(self, X, y=None, update_vocabulary: bool = False) -> ACEWord2Vec:
        """One more pass of training over ``X``, optionally adding its new words.

        The first call (on an unfitted estimator) builds the vocabulary from ``X``
        and trains one pass. Later calls continue from the fitted vectors, noise
        and optimizer state, one pass over ``X`` each, as gensim's ``train`` on new
        sentences:

        * ``update_vocabulary=False``: the vocabulary is kept; words of ``X`` outside
          it are ignored.
        * ``update_vocabulary=True``: as gensim's ``build_vocab(update=True)``, the
          words of ``X`` are counted and selected as at the first fit (``min_count``,
          ``max_final_vocab``, ``trim_rule``, on their counts in ``X``); a selected
          new word is appended (new rows of the embeddings: input vectors drawn as
          at initialisation, output vectors zero; known words keep their rows and
          vectors), and every known word's count grows by its count in ``X``. The
          noise is rebuilt from the updated counts and the optimizer state grows
          with the rows.

        The learning rate follows fit's schedule: the n-th pass since the first
        call uses the rate of fit's n-th epoch out of ``max_epochs``, and
        ``lr * min_lr_ratio`` after ``max_epochs`` passes (``min_lr_ratio=1`` keeps
        ``lr``). So ``max_epochs`` calls on one corpus train as ``fit`` does; with
        one kernel thread, exactly. The adversarial warm-up counts passes the same
        way. There is no validation (``early_stopping`` is for ``fit``).

        Parameters
        ----------
        X : iterable of token lists, or of str
            Documents. Read once, so a generator is fine, except on the first call,
            with ``update_vocabulary=True`` or a ``weighting`` other than
            ``"mean"`` (one more pass each): then it must be restartable.
        y : None
            Ignored.
        update_vocabulary : bool, default=False
            Add the new words of ``X`` to the vocabulary.

        Returns
        -------
        self : ACEWord2Vec
        """
        return super().partial_fit(X, y, update_vocabulary=update_vocabulary)

    # --- inference --------------------------------------------------------------------
    def transform(self, X) -> np.ndarray:
        """Weighted mean vector of the in-vocabulary words of each document.

        The weights are those of ``weighting``: 1 (``"mean"``), tf-idf, or SIF's
        :math:`a / (a + p(w))` followed by the removal of ``sif_component_``. A
        document's vector depends on that document alone.

        Parameters
        ----------
        X : iterable of token lists, or of str
            Documents (read once, so a generator is fine). A document with no
            in-vocabulary word gets the zero vector.

        Returns
        -------
        ndarray of shape (n_documents, n_components), float32

        Raises
        ------
        TypeError
            If ``X`` is a single string, or a token is not hashable (the error
            names the document).
        """
        check_is_fitted(self)
        if isinstance(X, (str, bytes)):
            raise TypeError("X is a single string; pass an iterable of documents, e.g. [text].")
        weights = word_weights(self)
        zeros = np.zeros(self.n_components, dtype=np.float32)
        rows = [
            weighted_mean(self, ids, weights) if len(ids) else zeros for ids in encoded(self, X)
        ]
        if not rows:
            return np.zeros((0, self.n_components), dtype=np.float32)
        out = np.vstack(rows).astype(np.float32, copy=False)
        if self.weighting == "sif":
            component = self.sif_component_
            # row by row (not a matrix product, whose blocking depends on the batch), so
            # a document's vector does not depend on the others
            out = out - (out * component).sum(axis=1, keepdims=True) * component
        return out

    @property
    def _n_features_out(self) -> int:
        return self.n_components

    _exported_methods = ("transform",)

    def _inference_module(self, method: str) -> InferenceModule:
        """``transform`` of word ids (``sknce.export.word_ids``): the weighted mean of
        their vectors (with subwords, each word's vector, the mean of its rows)."""
        sif = self.weighting == "sif"
        body = WordMean(
            self.vectors_,
            word_weights(self),
            self.weighting,
            self.sif_component_ if sif else None,
        )
        return InferenceModule(body, n_features=None)

    def score(self, X, y=None) -> float:
        """Minus the discriminator's contrastive loss on the examples of a held-out corpus.

        The examples of ``X`` (with the fit's windows and subsampling) against
        negatives from the fixed noise :math:`p_N`, drawn from the fit's ``"score"``
        stream: the same draws at every call, in any thread. Higher is better, so
        ``GridSearchCV(ACEWord2Vec(), params)`` selects parameters without labels.

        Parameters
        ----------
        X : iterable of token lists, or of str
            Documents (read once).
        y : None
            Ignored.

        Returns
        -------
        float
            Minus the mean loss per example.

        Raises
        ------
        ValueError
            If ``X`` yields no example (no two in-vocabulary words close enough).
        """
        check_is_fitted(self)
        if isinstance(X, (str, bytes)):
            raise TypeError("X is a single string; pass an iterable of documents, e.g. [text].")
        sampler = self._sampler(self._fitted_vocabulary(), self.noise_, self.net_.device)
        return -self.net_.mean_loss(CorpusDataset(X, sampler, None), self._score_rng())

    def _forwarded(self, name: str) -> None:
        """Check the estimator is fitted; warn that ``name`` moved to ``wv_`` (gensim 4's)."""
        check_is_fitted(self)
        warnings.warn(
            f"ACEWord2Vec.{name} is deprecated and will be removed in a future release; "
            f"call model.wv_.{name}(...) instead (the trained vectors' object, as gensim 4's "
            "model.wv).",
            FutureWarning,
            stacklevel=3,
        )

    def most_similar(
        self,
        positive=None,
        negative=None,
        topn: int | None = 10,
        restrict_vocab: int | None = None,
    ) -> list[tuple[str, float]] | np.ndarray:
        """The words most similar in cosine to a mean of words and vectors.

        .. deprecated:: 0.2
            Use ``wv_.most_similar``; this forwarder warns ``FutureWarning``.

        gensim's ``most_similar`` (see :meth:`WordVectors.most_similar`): analogies by
        ``most_similar(positive=["king", "woman"], negative=["man"])``.

        Parameters
        ----------
        positive : str, array-like, or list of these or of (item, weight), default=None
            Words or vectors that attract.
        negative : str, array-like, or list of these or of (item, weight), default=None
            Words or vectors that repel.
        topn : int or None, default=10
            Number of words returned; ``None`` returns the similarity of every word.
        restrict_vocab : int or None, default=None
            Search only the ``restrict_vocab`` most frequent words.

        Returns
        -------
        list of (str, float), or ndarray of shape (n_words,) when ``topn`` is None

        Raises
        ------
        KeyError
            For a word not in the vocabulary.
        """
        self._forwarded("most_similar")
        return self.wv_.most_similar(
            positive=positive, negative=negative, topn=topn, restrict_vocab=restrict_vocab
        )

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words' vectors.

        .. deprecated:: 0.2
            Use ``wv_.similarity``; this forwarder warns ``FutureWarning``.

        Parameters
        ----------
        a, b : str
            The two words.

        Returns
        -------
        float

        Raises
        ------
        KeyError
            For a word not in the vocabulary.
        """
        self._forwarded("similarity")
        return self.wv_.similarity(a, b)

    def evaluate_word_pairs(self, pairs, **kwargs) -> tuple:
        """Pearson and Spearman correlation with human scores, and the OOV ratio.

        .. deprecated:: 0.2
            Use ``wv_.evaluate_word_pairs``; this forwarder warns ``FutureWarning``.

        gensim's ``KeyedVectors.evaluate_word_pairs`` semantics; see
        :meth:`WordVectors.evaluate_word_pairs` for ``pairs`` and the options.

        Parameters
        ----------
        pairs : path or iterable of (str, str, float)
            A file of word pairs with human scores, or the triples themselves.
        **kwargs
            Options of :meth:`WordVectors.evaluate_word_pairs`.

        Returns
        -------
        pearson : tuple of (float, float)
            Correlation and p-value.
        spearman : tuple of (float, float)
            Correlation and p-value.
        oov_ratio : float
            Percentage of pairs with an unknown word.
        """
        self._forwarded("evaluate_word_pairs")
        return self.wv_.evaluate_word_pairs(pairs, **kwargs)

    def save_word2vec_format(self, path, binary: bool = False) -> None:
        """Write the vectors in word2vec's text or binary format (readable by gensim).

        .. deprecated:: 0.2
            Use ``wv_.save_word2vec_format``; this forwarder warns ``FutureWarning``.

        Parameters
        ----------
        path : str or path-like
            The file to write (compressed when it ends in ``.gz`` or ``.bz2``).
        binary : bool, default=False
            Write word2vec's binary format instead of its text format.
        """
        self._forwarded("save_word2vec_format")
        self.wv_.save_word2vec_format(path, binary=binary)


def _on_host(weight: torch.Tensor) -> tuple[np.ndarray, bool]:
    """A weight as a numpy array, and whether it is a view (on the CPU) or a copy."""
    weight = weight.detach()
    if weight.device.type == "cpu":
        return weight.numpy(), True
    return weight.cpu().numpy(), False


class _FreshVectors(Callback):
    """Renew ``vectors_`` and ``wv_`` when training begins and at the end of each epoch,
    before the user's callbacks.

    The estimator's vectors view the weights that training updates in place (on the
    CPU; they are copied from another device), and ``wv_`` caches their norms: a
    callback querying ``net.estimator.wv_`` must see the epoch's vectors.
    """

    def on_train_begin(self, net, **kwargs) -> None:
        net.estimator._sync_vectors()

    def on_epoch_end(self, net, **kwargs) -> None:
        net.estimator._sync_vectors()
