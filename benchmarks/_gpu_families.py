"""One benchmark per estimator family for ``gpu_check.py``: the device against the CPU paths.

Each family is a generator of rows (dicts) and notes (strings). Its data are the
loaders of the other benchmarks, its baselines their runners (``bench_vs_fasttext``,
``bench_multilabel``, ``bench_real_regression``, ``bench_real_latent``), and the sknce
side calls the public estimators with ``device=``. Within a family the systems run one
after the other on the same data: the baseline, sknce on the CPU (its compiled kernel
where it has one), sknce on the device. A row holds the fit seconds, a quality figure
(``metric`` and ``quality``), the peak device memory of the row
(``torch.cuda.max_memory_allocated``, device rows only), the row's wall and CPU seconds,
the 1-minute load average at its start and end, and the figures its runner returns.

Before its timed fits, a family fits a tiny model on each device, untimed (the numba
kernels compile, CUDA starts), and reports its seconds as a note. CPU paths use :data:`THREADS`
threads, as the CPU benchmarks whose figures ``benchmarks/README.md`` holds.
``Plan.dry`` shrinks the data and the epochs, so that the same code runs in seconds on a
CPU.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from _common import Timer
from _real_conditional_data import Split, latent_task, lee_similarity, wiki_articles
from _words_data import GENSIM_MAX_SENTENCE, wordsim353_path

#: CPU threads of every CPU path (fastText, gensim, sknce's kernels, torch).
THREADS = 2
#: Epochs of the word-vector fits.
WORD_EPOCHS = 5


@dataclass(frozen=True)
class Plan:
    """What a run measures.

    Parameters
    ----------
    device : str
        Where the device rows train (``"cuda"``; ``"cpu"`` in a dry run).
    dry : bool
        Tiny data and one or two epochs, so that every family runs in seconds.
    """

    device: str
    dry: bool


def measure(family: str, system: str, side: str, device: str, run: Callable[[], dict]) -> dict:
    """One row: ``run()``'s figures with the row's time, load and peak device memory.

    ``side`` is ``"baseline"`` (another library), ``"cpu"`` (sknce's CPU paths) or
    ``"device"`` (sknce on the plan's device). An exception becomes the row's ``error``
    (the end of its traceback), so that one failing path leaves the family's other rows.
    """
    cuda = torch.device(device).type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    load = os.getloadavg()[0]
    cpu, start = time.process_time(), time.perf_counter()
    row = {"family": family, "system": system, "side": side, "device": device}
    try:
        row.update(run())
        if cuda:
            torch.cuda.synchronize()
    except Exception:
        row["error"] = traceback.format_exc(limit=-4)[-2000:]
    row["row_s"] = time.perf_counter() - start
    row["cpu_s"] = time.process_time() - cpu
    row["load"] = f"{load:.2f}-{os.getloadavg()[0]:.2f}"
    if cuda:
        row["peak_device_mib"] = torch.cuda.max_memory_allocated() / 2**20
    return row


def _warm_up(plan: Plan, fit: Callable[[str], object]) -> str:
    """Run ``fit(device)`` untimed on the CPU and the device; a note of its seconds.

    The warm-up data are tiny and random: the fits' warnings say so, and are dropped.
    """
    seconds = []
    for device in dict.fromkeys(("cpu", plan.device)):
        with Timer() as t, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit(device)
        seconds.append(f"{device} {t.seconds:.1f} s")
    return "warm-up (untimed): " + ", ".join(seconds)


def _sides(plan: Plan) -> tuple[tuple[str, str], ...]:
    """The sknce rows' sides and devices: the CPU paths, then the plan's device."""
    return (("cpu", "cpu"), ("device", plan.device))


# --- words: NCE and ACE against gensim --------------------------------------------------
def word_documents(dry: bool) -> list[list[str]]:
    """The Wikipedia excerpt in pieces of at most 10,000 tokens (gensim's limit).

    The same documents as ``_words_data.load_wiki_corpus()``, cut from the articles
    that the classifier tasks parse too; a dry run keeps the first 60,000 tokens.
    """
    docs = [
        list(article[start : start + GENSIM_MAX_SENTENCE])
        for article in wiki_articles()
        for start in range(0, len(article), GENSIM_MAX_SENTENCE)
    ]
    if not dry:
        return docs
    kept, total = [], 0
    for doc in docs:
        if total >= 60_000:
            break
        kept.append(doc)
        total += len(doc)
    return kept


def _word_figures(wv, fit_s: float, tokens: int) -> dict:
    return {
        "fit_s": fit_s,
        "metric": "WordSim353",
        "quality": float(wv.evaluate_word_pairs(wordsim353_path())[1][0]),
        "words_per_s": tokens / fit_s,
    }


def _fit_gensim(docs, epochs: int) -> dict:
    from bench_words import COMMON
    from gensim.models import Word2Vec

    with Timer() as t:
        model = Word2Vec(
            docs,
            vector_size=100,
            sg=1,
            negative=5,
            workers=THREADS,
            epochs=epochs,
            seed=0,
            **COMMON,
        )
    return _word_figures(model.wv, t.seconds, sum(map(len, docs)) * epochs)


def _fit_ace(method: str, device: str, docs, epochs: int) -> dict:
    from bench_words import COMMON, SKNCE_PARAMS

    from sknce import ACEWord2Vec

    est = ACEWord2Vec(
        **SKNCE_PARAMS[method],
        **COMMON,
        max_epochs=epochs,
        n_jobs=THREADS,
        random_state=0,
        device=device,
    )
    with Timer() as t:
        est.fit(docs)
    return _word_figures(est.wv_, t.seconds, sum(map(len, docs)) * est.n_iter_)


def words(plan: Plan) -> Iterator[dict | str]:
    """gensim's skip-gram, then ACEWord2Vec's NCE and ACE on the CPU and the device.

    At the defaults on both: the kernel's plain SGD on the CPU, what it resolves to
    where the kernel does not run (Adam at ``lr / 2.5``) on the device.
    """
    from sknce import ACEWord2Vec

    docs = word_documents(plan.dry)
    epochs = 1 if plan.dry else WORD_EPOCHS
    yield _warm_up(
        plan,
        lambda device: ACEWord2Vec(
            n_components=4, min_count=1, sample=0, max_epochs=1, device=device
        ).fit([["a", "b", "c"]] * 2),
    )
    yield f"{len(docs)} documents, {sum(map(len, docs))} tokens, {epochs} epochs"
    yield measure(
        "words", "gensim Word2Vec (sg=1)", "baseline", "cpu", partial(_fit_gensim, docs, epochs)
    )
    for method in ("nce", "ace"):
        for side, device in _sides(plan):
            fit = partial(_fit_ace, method, device, docs, epochs)
            yield measure("words", f"ACEWord2Vec {method.upper()}", side, device, fit)


# --- documents: DirectNCE on the demo's data --------------------------------------------
def _fit_direct(device: str, X, y, draws, per_class: int, settings: dict) -> dict:
    from bench_real_documents import probe_scores

    from sknce import DirectNCEEmbedder

    est = DirectNCEEmbedder(random_state=0, device=device, **settings)
    with Timer() as t:
        est.fit(X)
    return {
        "fit_s": t.seconds,
        "metric": f"probe accuracy {per_class}/class",
        "quality": float(np.mean(probe_scores(est.transform(X), y, draws))),
        "epochs": int(est.n_iter_),
    }


def documents(plan: Plan) -> Iterator[dict | str]:
    """DirectNCEEmbedder at its defaults on the demo's chunks, probed as the demo does."""
    from bench_real_documents import label_draws
    from sklearn.feature_extraction.text import CountVectorizer

    from sknce import DirectNCEEmbedder
    from sknce.datasets import load_wiki_chunks

    texts, y = load_wiki_chunks(n_articles=6 if plan.dry else None)
    X = CountVectorizer().fit_transform(texts)
    per_class, n_draws = (3, 2) if plan.dry else (10, 3)
    draws = label_draws(y, per_class, n_draws, seed=0)
    settings = {"max_epochs": 2} if plan.dry else {}
    yield _warm_up(plan, lambda d: DirectNCEEmbedder(max_epochs=1, device=d).fit(X[:200]))
    yield f"{X.shape[0]} chunks x {X.shape[1]} words, {len(np.unique(y))} articles"
    for side, device in _sides(plan):
        fit = partial(_fit_direct, device, X, y, draws, per_class, settings)
        yield measure("documents", "DirectNCEEmbedder (defaults)", side, device, fit)


# --- the classifier: the centre word, against fastText hs -------------------------------
def _classifier_figures(figures: dict) -> dict:
    return {**figures, "metric": "accuracy", "quality": figures["accuracy"]}


def _tiny_bags(seed: int = 0) -> tuple[sp.csr_matrix, np.ndarray]:
    """200 sparse bags and 4 labels: the classifiers' warm-up data."""
    rng = np.random.default_rng(seed)
    X = sp.random(200, 50, density=0.1, format="csr", random_state=seed)
    return X, rng.integers(0, 4, size=200)


def classifier(plan: Plan) -> Iterator[dict | str]:
    """The centre word from the bag of its neighbours: fastText hs, sknce on CPU and device."""
    import bench_vs_fasttext as ft

    from sknce import ConditionalNCEClassifier

    X_tr, y_tr, X_te, y_te = ft.centre_task(max_train=3000 if plan.dry else None)
    # every 4th test window (20,000 of 83,000): predicting all takes longer than a fit
    data = (X_tr, y_tr, X_te[::4], y_te[::4])
    ll_rows = 200 if plan.dry else 5000
    settings = {"n_jobs": THREADS, **({"max_epochs": 1} if plan.dry else {})}
    X, y = _tiny_bags()
    yield _warm_up(
        plan,
        lambda d: ConditionalNCEClassifier(max_epochs=1, n_jobs=THREADS, device=d).fit(X, y),
    )
    yield f"{len(data[0])} training and {len(data[2])} test windows, {len(set(data[1]))} words"
    with tempfile.TemporaryDirectory() as tmp:
        run = partial(ft.run_fasttext, {"loss": "hs"}, data, ll_rows, Path(tmp))
        yield measure(
            "classifier", "fastText hs", "baseline", "cpu", lambda: _classifier_figures(run())
        )
        for side, device in _sides(plan):
            run = partial(ft.run_sknce, {**settings, "device": device}, data, ll_rows, 0)
            yield measure(
                "classifier",
                "ConditionalNCEClassifier (defaults)",
                side,
                device,
                lambda run=run: _classifier_figures(run()),
            )


# --- multi-label: article keywords, against fastText ova --------------------------------
def _multilabel_figures(figures: dict) -> dict:
    return {**figures, "metric": "P@1", "quality": figures["P@1"]}


def multilabel(plan: Plan) -> Iterator[dict | str]:
    """Article keywords: fastText ova (tuned), sknce's sampled one-vs-all on CPU and device."""
    import bench_multilabel as ml

    from sknce import ConditionalNCEClassifier

    every = 40 if plan.dry else 4  # bench_multilabel --quick keeps every 4th row
    full = ml.article_keywords_task()
    data = (*(part[::every] for part in full[:4]), full[4])
    (settings,) = ml.SKNCE.values()
    settings = {**settings, **({"max_epochs": 1} if plan.dry else {})}
    fasttext_name = "fastText ova, epoch=25, lr=0.5"
    X, _ = _tiny_bags()
    Y = sp.csr_matrix(np.random.default_rng(0).random((200, 8)) < 0.3, dtype=np.int8)
    yield _warm_up(plan, lambda d: ConditionalNCEClassifier(max_epochs=1, device=d).fit(X, Y))
    yield f"{len(data[0])} training and {len(data[2])} test rows, {len(data[4])} labels"
    with tempfile.TemporaryDirectory() as tmp:
        run = partial(ml.run_fasttext, ml.FASTTEXT[fasttext_name], data, Path(tmp))
        yield measure(
            "multilabel", fasttext_name, "baseline", "cpu", lambda: _multilabel_figures(run())
        )
        for side, device in _sides(plan):
            run = partial(ml.run_sknce, {**settings, "device": device}, data, 0)
            yield measure(
                "multilabel",
                "ConditionalNCEClassifier (bench_multilabel's settings)",
                side,
                device,
                lambda run=run: _multilabel_figures(run()),
            )


# --- the regressor and the latent-class embedder ----------------------------------------
def _first_fold(task, dry: bool, n_train: int, n_test: int) -> Split:
    """The task's first fold; a dry run keeps ``n_train`` and ``n_test`` of its rows."""
    split = next(iter(task.folds(seed=0)))
    if not dry:
        return split
    return Split(
        split.X_train[:n_train],
        split.y_train[:n_train],
        split.X_test[:n_test],
        split.y_test[:n_test],
    )


def _renamed(figures: dict, metric: str) -> dict:
    """A runner's fold row as a gpu_check row: ``fit s`` as ``fit_s``, ``metric`` as quality."""
    out = {k: v for k, v in figures.items() if k not in ("task", "method", "fit s")}
    return {**out, "fit_s": figures["fit s"], "metric": metric, "quality": figures[metric]}


def _fold_rows(
    plan: Plan, family: str, estimator: type, evaluate, method: str, task, split, metric
):
    """sknce's rows of a fold benchmark: ``evaluate``'s row of the fold, on each side."""
    settings = {"max_epochs": 2} if plan.dry else {}
    for side, device in _sides(plan):

        def make(seed, device=device):
            return estimator(random_state=seed, device=device, **settings)

        run = partial(evaluate, task.name, method, make, split, 0)
        yield measure(family, method, side, device, lambda run=run: _renamed(run(), metric))


def regressor(plan: Plan) -> Iterator[dict | str]:
    """ConditionalNCERegressor at its defaults on the Lee pair similarities (first fold)."""
    from bench_real_regression import DEFAULTS, evaluate

    from sknce import ConditionalNCERegressor

    task = lee_similarity()
    split = _first_fold(task, plan.dry, 150, 50)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(100, 3)), rng.normal(size=100)
    yield _warm_up(plan, lambda d: ConditionalNCERegressor(max_epochs=1, device=d).fit(X, y))
    yield f"{task.name}: {len(split.y_train)} training, {len(split.y_test)} test pairs"
    yield from _fold_rows(
        plan, "regressor", ConditionalNCERegressor, evaluate, DEFAULTS, task, split, "NLL"
    )


def latent(plan: Plan) -> Iterator[dict | str]:
    """LatentClassNCEEmbedder at its defaults on digits (first fold), probed linearly."""
    from bench_real_latent import DEFAULTS, evaluate

    from sknce import LatentClassNCEEmbedder

    task = latent_task("digits")
    split = _first_fold(task, plan.dry, 300, 100)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 4)), np.repeat(np.arange(6), 10)
    yield _warm_up(plan, lambda d: LatentClassNCEEmbedder(max_epochs=1, device=d).fit(X, y))
    yield f"{task.name}: {len(split.y_train)} training, {len(split.y_test)} test points"
    yield from _fold_rows(
        plan, "latent", LatentClassNCEEmbedder, evaluate, DEFAULTS, task, split, "probe acc"
    )


#: The families, in the order a run measures them.
FAMILIES = {
    "words": words,
    "classifier": classifier,
    "documents": documents,
    "multilabel": multilabel,
    "regressor": regressor,
    "latent": latent,
}


def run_family(name: str, plan: Plan) -> Iterator[dict | str]:
    """Family ``name``'s rows and notes, torch and BLAS held to :data:`THREADS` threads.

    A dry run's BLAS takes one thread: on a loaded machine OpenBLAS's waiting threads
    slow a small fit several times over, and a dry run measures nothing.
    """
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(THREADS)
    with threadpool_limits(1 if plan.dry else THREADS, user_api="blas"):
        yield from FAMILIES[name](plan)
