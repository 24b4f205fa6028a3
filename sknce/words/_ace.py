"""ACEWord2Vec: skip-gram word vectors by NCE, optionally with adversarial negatives.

Bose, Ling and Cao (2018) replace word2vec's fixed noise by a mixture of the
noise and a generator that learns, by REINFORCE, to propose the negatives the
discriminator finds hardest. ``adversarial=False`` is plain skip-gram negative
sampling (or NCE): the baseline every ACE figure is compared with, through the
same code.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import torch
from joblib import effective_n_jobs
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin

from sknce._base import BaseNCE, NCENet, _LossIsOutput, seeded
from sknce._compat import Interval, StrOptions, _fit_context, check_is_fitted
from sknce.nn import ACESkipGram
from sknce.noise import UnigramNoise
from sknce.words._corpus import Vocabulary, check_restartable, iter_documents, pair_batches
from sknce.words._train import ACEConfig, SkipGramTrainer
from sknce.words._vectors import WordVectors, resolve_init_vectors

__all__ = ["ACEWord2Vec"]

#: Multiplier of the golden-ratio hash that assigns documents to the validation split.
_HASH = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1


class _DocumentSplit:
    """The training or validation documents of a corpus, as a restartable iterable.

    Document ``i`` is held out when a 64-bit hash of ``(i, seed)`` falls below
    ``fraction``: the split needs no second pass and no memory.
    """

    def __init__(self, X, fraction: float, seed: int, validation: bool) -> None:
        self.X = X
        self.threshold = int(fraction * 2**64)
        self.seed = seed
        self.validation = validation

    def held_out(self, i: int) -> bool:
        return (((i + 1) * _HASH) ^ (self.seed * 0x2545F4914F6CDD1D)) & _MASK64 < self.threshold

    def __iter__(self):
        for i, doc in enumerate(self.X):
            if self.held_out(i) == self.validation:
                yield doc


class ACEWord2Vec(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseNCE):
    r"""Skip-gram word vectors by adversarial contrastive estimation (ACE) or NCE.

    The discriminator is a skip-gram network,
    :math:`D(w_c \mid w_t) = \sigma(u_t^\top v_c)`, trained to tell true
    (centre, context) pairs of a corpus from negatives (Bose et al., 2018, Eq. 5–6).
    With ``adversarial=True`` each negative comes from the mixture
    :math:`\lambda p_N + (1 - \lambda) G(\cdot \mid w_t)` of the unigram noise
    :math:`p_N \propto \text{count}^{0.75}` and a skip-gram generator :math:`G`,
    which REINFORCE (Eq. 7) pushes towards the negatives the discriminator mistakes
    for true contexts. With ``adversarial=False`` it is word2vec's skip-gram with
    negative sampling. The word vectors are the discriminator's input embeddings.

    On the CPU with ``optimizer=torch.optim.SGD`` (the default) the discriminator is
    trained by a compiled kernel doing word2vec's per-pair SGD update in place on the
    torch parameters, over ``n_jobs`` threads; any other optimiser, or ``device="cuda"``,
    trains it by torch autograd on the core losses, one step per batch.

    Read more in the :ref:`User Guide <words>`.

    Parameters
    ----------
    n_components : int, default=100
        Dimension of the word vectors.
    window : int, default=5
        Largest distance between a centre word and its context; each centre word
        draws its window uniformly in ``1..window`` (word2vec's dynamic window).
    min_count : int, default=5
        Words seen fewer times are dropped from the vocabulary.
    max_vocab_size : int or None, default=None
        Prune the rarest words while counting when the vocabulary grows beyond
        this size (gensim's ``max_vocab_size``); ``None``: no limit.
    sample : float, default=1e-3
        Frequent-word subsampling threshold (Mikolov et al., 2013, as gensim); 0
        disables it.
    n_negatives : int, default=5
        Negatives K per (centre, context) pair.
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
        Weight λ of the fixed noise in the mixture. With ``adversarial_warmup=0.25``,
        0.75 put ACE above NCE on the rare-word pairs of the benchmark corpus on the
        3-seed mean (0.516 vs 0.498 on WordSim353's, 0.447 vs 0.439 on SimLex-999's;
        0.5: 0.520 and 0.419); the former default 0.5 without warm-up gave 0.491 and
        0.398. Over 9 seeds: 0.517 vs 0.506 and 0.432 vs 0.429, the latter within
        noise (see the User Guide).
    n_candidates : int, default=128
        Size of the candidate set that approximates the generator's softmax per
        batch: the unique centre words of a batch are scored against
        ``n_candidates`` words drawn from :math:`p_N` in one matrix product, and the
        generator samples by importance resampling (see the User Guide). At
        V = 28k an ACE epoch cost 2.6x an NCE epoch with 128 candidates, 3.2x with
        256, 4.6x with 512 (``noise_mixture=0.5``).
    reward_temperature : float, default=0.5
        Temperature of the sigmoid applied to the standardised rewards (Section 3).
    reward_baseline : bool, default=False
        Subtract the batch mean from those rewards (a REINFORCE baseline): they are
        all positive otherwise. On the benchmark corpus it did not help (3 seeds
        with ``adversarial_warmup=0.25, noise_mixture=0.5``: rare-word scores 0.501
        and 0.426 against 0.520 and 0.419 without), and the generator's proposal
        stayed as peaked as without it.
    entropy_weight : float, default=0.0
        Weight of the entropy of the generator's distribution in its objective
        (a bonus: larger values keep the generator spread out).
    mask_false_negatives : bool, default=True
        Drop generator samples that are a true context of their centre word in the
        batch from both the discriminator's loss and the generator's update.
    importance_weighting : bool, default=False
        Weight each generator sample in the discriminator's loss by
        :math:`p_N(\tilde w) / G(\tilde w \mid w_t)` (normalised to mean 1 per batch).
        Untruncated, single negatives were weighted up to 150–280 on the benchmark
        corpus and the fit diverged; see ``max_importance_weight``. A fit whose loss
        or vectors become non-finite raises a ``ValueError`` naming the fix.
    max_importance_weight : float, default=10.0
        Truncation of those weights (truncated importance sampling, Ionides 2008):
        no negative's SGD step exceeds this multiple of a plain one, at the price
        of a bias towards the generator's distribution.
    generator_lr : float, default=0.01
        Learning rate of the generator (SGD on the REINFORCE objective, summed over
        a batch's samples). On the planted corpus of the tests (no warm-up,
        ``noise_mixture=0.5``), 0.01 moved the generator's mass onto the hard
        negatives (a word's own group: 1/3 of the noise's mass, 1.0 of the
        generator's after training); 0.05 and 0.2 left it at 1/3.
    generator_centre : {"own", "discriminator"}, default="own"
        Centre vectors of the generator. ``"own"``: a skip-gram generator
        :math:`G(\cdot \mid w_t) = \operatorname{softmax}(g_t^\top h)` with centre
        vectors of its own (the paper's), which REINFORCE updates only when
        :math:`w_t` is a centre word of a batch. ``"discriminator"``: :math:`g_t` is the
        discriminator's input vector :math:`u_t`, read without gradient
        (:class:`~sknce.nn.SharedCentreGenerator`); only the generator's output
        vectors are learned. On the benchmark corpus it lowered the rare-word
        scores (3 seeds, former defaults: 0.448 and 0.396 against 0.491 and 0.398
        with ``"own"``): a rare word's own :math:`g_t` is in fact trained there
        (norm ~1.2 after 20 epochs for words seen 5-9 times, from ~0.03 at the
        start).
    adversarial_warmup : float, default=0.25
        Fraction of ``max_epochs`` (rounded down to whole epochs) trained first with
        negatives from the noise alone, the generator neither used nor trained:
        early on the discriminator's scores, the generator's rewards, carry no
        signal. ACE then fine-tunes NCE vectors, as in the paper's rare-word
        experiment. On the benchmark corpus (3 seeds, ``noise_mixture=0.5``) 0.25
        raised ACE's rare-word scores from 0.491 to 0.520 (WordSim353) and from
        0.398 to 0.419 (SimLex-999), WordSim353 from 0.516 to 0.525; 0.5 gave 0.477,
        0.442 and 0.513.
    tokenizer : callable or None, default=None
        Splits string documents into tokens; ``None``: ``CountVectorizer``'s default
        (words of 2+ word characters, lowercased). Token lists are used as given.
    init_vectors : dict, (words, matrix) pair, WordVectors, path or None, default=None
        Pretrained vectors to start from (fine-tuning): the input embedding of every
        vocabulary word found in them is initialised with its pretrained vector
        (their dimension must equal ``n_components``). A path is read in word2vec
        text or binary format.
    min_lr_ratio : float, default=1e-4
        The learning rate decays linearly from ``lr`` to ``lr * min_lr_ratio`` over
        the whole training (word2vec's ``min_alpha / alpha``).
    n_jobs : int or None, default=-1
        Threads of the compiled kernel (``-1``: all cores). With more than one the
        threads update shared rows without locks, as word2vec and gensim do, so a
        fit is reproducible with ``random_state`` only with ``n_jobs=1`` (or on the
        torch path).
    max_epochs : int, default=20
        Passes over the corpus.
    batch_size : int, default=10000
        (centre, context) pairs per batch: one generator step, one set of
        negatives, one torch step on the torch path.
    lr : float, default=0.025
        Initial learning rate of the discriminator (word2vec's). On the benchmark
        corpus 20 epochs at 0.025 matched gensim's 20 epochs on WordSim353 in every
        seed; 10 epochs at 0.05 took half the time but fell 0.045 below it in one
        seed of three (see the User Guide).
    optimizer : torch optimizer class, default=torch.optim.SGD
        ``torch.optim.SGD`` uses the compiled kernel on the CPU; another class
        (e.g. ``torch.optim.Adam``) trains the discriminator by autograd with it.
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
    random_state : int, RandomState instance or None, default=None
        Seeds the initial vectors, subsampling, windows and negatives.
    verbose : int, default=0
        1 prints the loss of each epoch.
    early_stopping : bool, default=False
        Hold out the documents of ``validation_fraction`` of the corpus; after each
        epoch, compute the discriminator's loss on their pairs against fixed noise
        negatives (the same pairs and negatives every epoch); stop when it has not
        improved for ``patience`` epochs and restore the best vectors. The learning
        rate still decays over ``max_epochs``.
    validation_fraction : float, default=0.1
    patience : int, default=5

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Row of each word in ``vectors_``, most frequent first.
    vectors_ : ndarray of shape (n_words, n_components), float32
        The word vectors (the discriminator's input embeddings).
    wv_ : WordVectors
        The vectors with their queries and I/O.
    counts_ : ndarray of shape (n_words,)
        Corpus count of each word.
    noise_ : UnigramNoise
        The fixed noise distribution :math:`p_N`.
    n_init_vectors_ : int
        Vocabulary words initialised from ``init_vectors`` (0 without).
    net_ : NCENet
        The skorch net holding the networks (``net_.module_.discriminator``,
        ``net_.module_.generator``).
    history_ : list of dict
        Per-epoch ``train_loss`` (mean per pair), ``valid_loss`` with early
        stopping, ``dur`` (seconds).
    n_iter_ : int
        Epochs run.

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

    Examples
    --------
    >>> from sknce import ACEWord2Vec
    >>> docs = [["cat", "purrs", "cat", "meows"], ["dog", "barks", "dog", "growls"]] * 50
    >>> model = ACEWord2Vec(n_components=8, min_count=1, sample=0, max_epochs=20,
    ...                     adversarial=False, n_jobs=1, random_state=0).fit(docs)
    >>> model.transform([["cat", "unknown"], ["dog"]]).shape
    (2, 8)
    >>> model.most_similar("purrs", topn=1)[0][0] in {"cat", "meows"}
    True
    """

    _parameter_constraints: dict = {
        **BaseNCE._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "window": [Interval(Integral, 1, None, closed="left")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "max_vocab_size": [Interval(Integral, 1, None, closed="left"), None],
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
        "min_lr_ratio": [Interval(Real, 0, 1, closed="both")],
        "n_jobs": [Integral, None],
    }

    def __init__(
        self,
        *,
        n_components: int = 100,
        window: int = 5,
        min_count: int = 5,
        max_vocab_size: int | None = None,
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
        min_lr_ratio: float = 1e-4,
        n_jobs: int | None = -1,
        max_epochs: int = 20,
        batch_size: int = 10000,
        lr: float = 0.025,
        optimizer=torch.optim.SGD,
        device: str = "cpu",
        random_state=None,
        verbose: int = 0,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        patience: int = 5,
    ) -> None:
        self.n_components = n_components
        self.window = window
        self.min_count = min_count
        self.max_vocab_size = max_vocab_size
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
        self.min_lr_ratio = min_lr_ratio
        self.n_jobs = n_jobs
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.optimizer = optimizer
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        return tags

    # --- fitting ----------------------------------------------------------------------
    def _config(self) -> ACEConfig:
        return ACEConfig(
            n_negatives=self.n_negatives,
            objective=self.objective,
            adversarial=self.adversarial,
            noise_mixture=self.noise_mixture,
            n_candidates=self.n_candidates,
            reward_temperature=self.reward_temperature,
            reward_baseline=self.reward_baseline,
            entropy_weight=self.entropy_weight,
            mask_false_negatives=self.mask_false_negatives,
            importance_weighting=self.importance_weighting,
            max_importance_weight=self.max_importance_weight,
            generator_lr=self.generator_lr,
        )

    def _initialise_from(self, module: ACESkipGram, vocab: Vocabulary) -> int:
        """Copy pretrained vectors into the input embeddings; return how many words."""
        pretrained = resolve_init_vectors(self.init_vectors)
        if pretrained.vectors.shape[1] != self.n_components:
            raise ValueError(
                f"init_vectors have {pretrained.vectors.shape[1]} dimensions but "
                f"n_components={self.n_components}; set n_components to their dimension."
            )
        rows = [(i, pretrained.index[w]) for i, w in enumerate(vocab.words) if w in pretrained]
        if rows:
            ours, theirs = (np.asarray(r) for r in zip(*rows))
            weight = module.discriminator.input_embeddings.weight
            with torch.no_grad():
                weight[torch.as_tensor(ours)] = torch.as_tensor(pretrained.vectors[theirs])
        return len(rows)

    def _expected_pairs(self, vocab: Vocabulary, fraction: float) -> float:
        """An upper bound of the pairs in one epoch (edges of documents have fewer)."""
        kept = float(np.sum(vocab.counts * vocab.keep_probs(self.sample)))
        return max(kept * fraction * (self.window + 1), 1.0)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None) -> ACEWord2Vec:
        """Learn the vocabulary and the word vectors from a corpus.

        Parameters
        ----------
        X : iterable of token lists, or of str
            A restartable corpus (a list, or an object whose ``__iter__`` starts a
            new pass, such as gensim's ``LineSentence``): it is read once for the
            vocabulary and once per epoch, never held in memory by the estimator.
            Strings are split by ``tokenizer``.
        y : None
            Ignored.

        Returns
        -------
        self : ACEWord2Vec

        Raises
        ------
        TypeError
            If ``X`` is a one-shot iterator (a generator) or not a corpus.
        ValueError
            If the corpus is empty, no word reaches ``min_count``, or it yields no
            (centre, context) pair.
        """
        check_restartable(X)
        vocab = Vocabulary.build(
            X,
            tokenizer=self.tokenizer,
            min_count=self.min_count,
            max_vocab_size=self.max_vocab_size,
        )
        seed, device = self._seed_and_device()
        noise = UnigramNoise(vocab.counts, self.ns_exponent).to(device)
        train_docs, valid_docs = X, None
        if self.early_stopping:
            train_docs = _DocumentSplit(X, self.validation_fraction, seed, validation=False)
            valid_docs = _DocumentSplit(X, self.validation_fraction, seed, validation=True)
            if not any(True for _ in valid_docs):
                raise ValueError(
                    f"validation_fraction={self.validation_fraction} of "
                    f"{vocab.n_documents} documents leaves no validation document for "
                    "early stopping. Provide more documents, raise validation_fraction, "
                    "or set early_stopping=False."
                )
        with seeded(seed, device):
            module = ACESkipGram(
                len(vocab),
                self.n_components,
                adversarial=self.adversarial,
                generator_centre=self.generator_centre,
            )
            self.n_init_vectors_ = (
                0 if self.init_vectors is None else self._initialise_from(module, vocab)
            )
            net = NCENet(
                module=module,
                criterion=_LossIsOutput,
                optimizer=self.optimizer,
                lr=self.lr,
                max_epochs=self.max_epochs,
                batch_size=self.batch_size,
                device=device,
                train_split=None,
                callbacks=[],
                verbose=0,
            ).initialize()
        trainer = SkipGramTrainer(
            net.module_,
            noise,
            self._config(),
            lr=self.lr,
            min_lr_ratio=self.min_lr_ratio,
            optimizer=self.optimizer,
            n_jobs=effective_n_jobs(self.n_jobs),
            device=device,
            rng=torch.Generator(device).manual_seed(seed),
        )
        self._train(net, trainer, vocab, train_docs, valid_docs, seed)

        self.vocabulary_ = dict(vocab.index)
        self.counts_ = vocab.counts
        self.noise_ = noise
        weight = net.module_.discriminator.input_embeddings.weight.detach()
        self.vectors_ = weight.numpy() if weight.device.type == "cpu" else weight.cpu().numpy()
        self.wv_ = WordVectors(vocab.words, self.vectors_)
        self.net_ = net
        return self

    def _train(self, net, trainer, vocab, train_docs, valid_docs, seed: int) -> None:
        """The epochs, with early stopping on the validation loss; sets ``history_``."""
        fraction = 1.0 - self.validation_fraction if self.early_stopping else 1.0
        per_epoch = self._expected_pairs(vocab, fraction)
        rng = np.random.default_rng(seed)
        discriminator = net.module_.discriminator
        pairs_done, best, best_state, stale = 0, np.inf, None, 0
        warmup_epochs = int(self.adversarial_warmup * self.max_epochs)
        self.history_ = []
        for epoch in range(1, self.max_epochs + 1):
            start = time.perf_counter()
            batches = pair_batches(
                train_docs,
                self.tokenizer,
                vocab,
                window=self.window,
                sample=self.sample,
                batch_size=self.batch_size,
                rng=rng,
            )
            loss, n_pairs = trainer.train_epoch(
                batches,
                pairs_done,
                per_epoch * self.max_epochs,
                use_generator=epoch > warmup_epochs,
            )
            if n_pairs == 0:
                raise ValueError(
                    "the corpus yields no (centre, context) pair: every document has fewer "
                    "than two in-vocabulary words. Lower min_count, or pass longer documents."
                )
            if not (
                np.isfinite(loss) and torch.isfinite(discriminator.input_embeddings.weight).all()
            ):
                raise ValueError(
                    f"training diverged in epoch {epoch}: the loss or the word vectors became "
                    f"non-finite (NaN or inf). Lower lr (now {self.lr})"
                    + (
                        ", lower max_importance_weight (now "
                        f"{self.max_importance_weight}), or set importance_weighting=False."
                        if self.adversarial and self.importance_weighting
                        else "."
                    )
                )
            if epoch == 1:
                per_epoch = float(n_pairs)
            pairs_done += n_pairs
            row = {"epoch": epoch, "train_loss": loss / n_pairs}
            if valid_docs is not None:
                valid_batches = pair_batches(
                    valid_docs,
                    self.tokenizer,
                    vocab,
                    window=self.window,
                    sample=self.sample,
                    batch_size=self.batch_size,
                    rng=np.random.default_rng(seed + 1),
                )
                row["valid_loss"] = trainer.evaluation_loss(valid_batches, seed + 2)
                if row["valid_loss"] < best:
                    best, stale = row["valid_loss"], 0
                    best_state = {k: v.clone() for k, v in discriminator.state_dict().items()}
                else:
                    stale += 1
            row["dur"] = time.perf_counter() - start
            net.history.new_epoch()
            for key, value in row.items():
                net.history.record(key, value)
            self.history_.append(row)
            if self.verbose:
                print(", ".join(f"{k}={v:.4g}" for k, v in row.items()))
            if valid_docs is not None and stale >= self.patience:
                break
        if best_state is not None:
            # load_state_dict copies in place, so numpy views of the weights stay valid
            discriminator.load_state_dict(best_state)
        self.n_iter_ = len(self.history_)

    # --- inference --------------------------------------------------------------------
    def transform(self, X) -> np.ndarray:
        """Mean vector of the in-vocabulary words of each document.

        Parameters
        ----------
        X : iterable of token lists, or of str
            Documents (read once, so a generator is fine). A document with no
            in-vocabulary word gets the zero vector.

        Returns
        -------
        ndarray of shape (n_documents, n_components), float32
        """
        check_is_fitted(self)
        if isinstance(X, (str, bytes)):
            raise TypeError("X is a single string; pass an iterable of documents, e.g. [text].")
        index = self.vocabulary_
        rows = []
        for doc in iter_documents(X, self.tokenizer):
            ids = [index[w] for w in doc if w in index]
            rows.append(
                self.vectors_[ids].mean(axis=0)
                if ids
                else np.zeros(self.n_components, dtype=np.float32)
            )
        if not rows:
            return np.zeros((0, self.n_components), dtype=np.float32)
        return np.vstack(rows).astype(np.float32, copy=False)

    @property
    def _n_features_out(self) -> int:
        return self.n_components

    def most_similar(self, word_or_vector, topn: int = 10) -> list[tuple[str, float]]:
        """The ``topn`` words of highest cosine similarity (see :meth:`WordVectors.most_similar`).

        Parameters
        ----------
        word_or_vector : str, array-like or list of str
            A word (excluded from the result), a vector, or positive words.
        topn : int, default=10

        Returns
        -------
        list of (str, float)

        Raises
        ------
        KeyError
            For a word not in the vocabulary.
        """
        check_is_fitted(self)
        return self.wv_.most_similar(word_or_vector, topn=topn)

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words' vectors.

        Raises
        ------
        KeyError
            For a word not in the vocabulary.
        """
        check_is_fitted(self)
        return self.wv_.similarity(a, b)

    def evaluate_word_pairs(self, pairs, **kwargs) -> tuple:
        """Pearson and Spearman correlation with human scores, and the OOV ratio.

        gensim's ``KeyedVectors.evaluate_word_pairs`` semantics; see
        :meth:`WordVectors.evaluate_word_pairs` for ``pairs`` and the options.

        Returns
        -------
        pearson : tuple of (float, float)
            Correlation and p-value.
        spearman : tuple of (float, float)
            Correlation and p-value.
        oov_ratio : float
            Percentage of pairs with an unknown word.
        """
        check_is_fitted(self)
        return self.wv_.evaluate_word_pairs(pairs, **kwargs)

    def save_word2vec_format(self, path, binary: bool = False) -> None:
        """Write the vectors in word2vec's text or binary format (readable by gensim).

        Parameters
        ----------
        path : str or path-like
        binary : bool, default=False
        """
        check_is_fitted(self)
        self.wv_.save_word2vec_format(path, binary=binary)
