"""Fits on a quiet and on a contended machine: wall and CPU seconds (issue 34).

Every sknce estimator's default fit on its benchmark task, beside a scikit-learn,
gensim or fastText peer of the same job, and a ``GridSearchCV(n_jobs=2, cv=2)`` over
two settings of each sknce estimator and of the sklearn peers:

==========  ========================================================================
task        data (shipped with gensim or scikit-learn, or generated with a seed)
==========  ========================================================================
documents   the demo's corpus: 4,074 chunks of 40 stemmed words, 106 Wikipedia
            articles (``sknce.datasets.load_wiki_chunks``), word counts
article     the article (of 106) of each 40-token chunk of the Wikipedia excerpt,
            80% of the chunks (``bench_vs_fasttext.article_task``), from the text
dense       ``make_classification``: 3,000 x 100, 10 classes (the MLP path)
keywords    the 5 keywords of each chunk's article (``bench_multilabel``), multi-label
diabetes    sklearn's diabetes regression (442 x 10)
digits      sklearn's digits, the class as the latent class (1,797 x 64)
lee         gensim's Lee corpus, 300 news stories, 58k tokens (the README's example)
wiki        the Wikipedia excerpt, 453k tokens (``_words_data.load_wiki_corpus``), for the
            threads of the words kernel beside gensim's (``--groups threads``)
==========  ========================================================================

A *contended* fit runs beside two busy competitor processes
(``python -c "while True: pass"``, each bounded to ``--busy-limit`` seconds) that the
script starts just before the fit and stops just after it; on 2 cores a fair share
makes a fit at most about 2x slower. Each repeat measures every case quiet then
contended, case after case (A quiet, A contended, B quiet, ...), so slow drifts in the
machine's load fall on all cases alike; the tables give medians over the repeats.
CPU seconds are this process's user + system time (all its threads) plus that of its
live worker processes (a grid search's loky workers), the competitors excepted; the
preemptions are this process's involuntary context switches (not its workers'): a fit
that resumes after each one refills its caches, so its CPU seconds grow with them, and
a "quiet" fit that other work preempted often shrinks the ratio (benchmarks/README.md,
issue 34, sixth session). The load average (1 minute) is recorded before every
measurement: a "quiet" fit is only as quiet as the machine. Before the clock: one
untimed fit of every case on a small slice (imports, compilation, the loky workers'
start).

Usage (other benchmarks must not run at the same time)::

    flock /tmp/sknce-bench.lock python benchmarks/bench_contention.py          # all, 2 repeats
    flock /tmp/sknce-bench.lock python benchmarks/bench_contention.py --quick  # small, 1 repeat
    python benchmarks/bench_contention.py --cases DirectNCE MLPClassifier --no-grid

Writes ``benchmarks/results/contention.json`` (``contention_quick.json`` with ``--quick``;
``--tag`` adds a suffix).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import psutil
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
from _common import report  # noqa: E402

#: Busy competitors of a contended fit (one per core of this 2-core machine).
N_BUSY = 2
#: A fit at most this many times its quiet time and CPU seconds is a fair share (issue 34).
FAIR_TIME, FAIR_CPU = 2.5, 1.2
#: Threads given to the peers that take a thread count (gensim, fastText).
PEER_THREADS = 2

#: A busy competitor: a loop on one core, ending by itself after ``argv[1]`` seconds.
_BUSY = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end:\n"
    "    pass\n"
)


# --- measuring --------------------------------------------------------------------------
@contextlib.contextmanager
def competitors(n: int, limit: float) -> Iterator[set[int]]:
    """``n`` busy processes, each ending by itself after ``limit`` seconds at the latest."""
    procs = [subprocess.Popen([sys.executable, "-c", _BUSY, str(limit)]) for _ in range(n)]
    try:
        if procs:
            time.sleep(0.3)  # running before the clock starts
        yield {p.pid for p in procs}
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def cpu_seconds(exclude: set[int]) -> float:
    """User + system seconds of this process, of its children that ended (a worker that
    loky replaced) and of its live children not in ``exclude`` (the competitors, which
    end after the measurement)."""
    me = psutil.Process()
    times = me.cpu_times()
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = times.user + times.system + ended.ru_utime + ended.ru_stime
    for child in me.children(recursive=True):
        if child.pid in exclude:
            continue
        with contextlib.suppress(psutil.NoSuchProcess):
            times = child.cpu_times()
            total += times.user + times.system
    return total


def preemptions() -> int:
    """Involuntary context switches of this process's threads so far: how often the
    scheduler took a core from them (a fit's CPU seconds grow with it, issue 34)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def measure(fit: Callable[[], object], busy: bool, limit: float) -> dict:
    """Wall and CPU seconds of ``fit()`` and this process's preemptions in it, quiet or
    beside the competitors."""
    load = os.getloadavg()[0]
    with competitors(N_BUSY if busy else 0, limit) as pids:
        cpu, switches = cpu_seconds(pids), preemptions()
        start = time.perf_counter()
        fit()
        wall = time.perf_counter() - start
        cpu, switches = cpu_seconds(pids) - cpu, preemptions() - switches
    return {"wall": wall, "cpu": cpu, "preemptions": switches, "load": load}


# --- tasks ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Size:
    """Sizes of the tasks: full, or ``--quick``."""

    quick: bool

    @property
    def articles(self) -> int | None:
        return 25 if self.quick else None

    @property
    def rows(self) -> int:
        return 1000 if self.quick else 3000


@cache
def documents(size: Size):
    from sklearn.feature_extraction.text import CountVectorizer

    from sknce.datasets import load_wiki_chunks

    texts, _ = load_wiki_chunks(n_articles=size.articles)
    return CountVectorizer().fit_transform(texts)


@cache
def article(size: Size):
    from bench_vs_fasttext import article_task

    texts, labels, _, _ = article_task()
    n = 1500 if size.quick else len(texts)
    return texts[:n], labels[:n]


@cache
def dense(size: Size):
    from sklearn.datasets import make_classification

    return make_classification(
        size.rows, 100, n_informative=20, n_classes=10, n_clusters_per_class=1, random_state=0
    )


@cache
def keywords(size: Size):
    from bench_multilabel import indicator, keywords_task

    task = keywords_task()
    texts, label_sets, vocabulary = task["X_train"], task["L_train"], task["vocabulary"]
    n = 1500 if size.quick else len(texts)
    return texts[:n], indicator(label_sets[:n], len(vocabulary)), label_sets[:n]


@cache
def diabetes(size: Size):
    from sklearn.datasets import load_diabetes

    return load_diabetes(return_X_y=True)


@cache
def digits(size: Size):
    from sklearn.datasets import load_digits

    return load_digits(return_X_y=True)


@cache
def lee(size: Size):
    import gensim
    from gensim.utils import simple_preprocess

    path = Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    return [simple_preprocess(line) for line in path.open(encoding="utf-8")]


@cache
def wiki(size: Size):
    if size.quick:
        return lee(size)
    from _words_data import load_wiki_corpus

    return load_wiki_corpus()


@cache
def fasttext_file(name: str, size: Size) -> Path:
    """fastText's training file of the article or keywords task (written before the clock)."""
    path = Path(tempfile.mkdtemp(prefix="sknce-contention-")) / f"{name}.txt"
    with open(path, "w", encoding="utf-8") as f:
        if name == "article":
            texts, labels = article(size)
            for text, label in zip(texts, labels):
                f.write(f"__label__{label} {text}\n")
        else:
            texts, _, label_sets = keywords(size)
            for text, labels in zip(texts, label_sets):
                f.write(" ".join(f"__label__k{k}" for k in labels) + f" {text}\n")
    return path


# --- cases ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """A system fitted on a task: a sknce estimator at its defaults, or a peer.

    ``make()`` returns a fresh estimator (``None`` for gensim and fastText, which
    ``run`` trains itself); ``run(estimator, data)`` fits it on ``data``, the arrays of
    ``source`` (the task's own by default), or a small slice of them for the warm-up;
    ``grid``, when given, is the two settings of the grid search.
    """

    system: str
    task: str
    make: Callable[[], object]
    run: Callable[[object, tuple], object]
    grid: dict | None = None
    group: str = "fits"
    source: str | None = None

    def data(self, size: Size) -> tuple:
        return _TASKS[self.source or self.task](size)


def _fit(estimator, data):
    return estimator.fit(*data)


def _text_pipeline(estimator):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import make_pipeline

    return make_pipeline(CountVectorizer(token_pattern=r"\S+", lowercase=False), estimator)


def _nce(task: str, name: str, grid=None, text=False, group="fits", **params) -> Case:
    """A sknce estimator (``random_state=0``, else ``params``), on text through counts."""
    shown = ", ".join(f"{key}={value!r}" for key, value in params.items())

    def make():
        import sknce

        estimator = getattr(sknce, name)(random_state=0, **params)
        return _text_pipeline(estimator) if text else estimator

    return Case(f"{name}({shown})", task, make, _fit, grid, group)


def _sklearn(task: str, system: str, make: Callable[[], object], grid=None) -> Case:
    return Case(system, task, make, _fit, grid)


def _gensim(task: str, group="fits", **params) -> Case:
    def run(_, data):
        from gensim.models import Word2Vec

        return Word2Vec(data[0], seed=0, **params)

    shown = ", ".join(f"{key}={value}" for key, value in params.items())
    return Case(f"gensim Word2Vec({shown})", task, lambda: None, run, group=group)


def _fasttext(task: str, **params) -> Case:
    def run(_, data):
        import fasttext

        return fasttext.train_supervised(
            input=str(data[0]), thread=PEER_THREADS, verbose=0, seed=0, **params
        )

    shown = "".join(f"{key}={value!r}, " for key, value in params.items())
    system = f"fastText({shown}thread={PEER_THREADS})"
    return Case(system, task, lambda: None, run, source=f"{task}-file")


def _svd():
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.pipeline import make_pipeline

    return make_pipeline(TfidfTransformer(), TruncatedSVD(100, random_state=0))


def _logistic(text: bool = False):
    from sklearn.linear_model import LogisticRegression

    return _text_pipeline(LogisticRegression()) if text else LogisticRegression()


def _mlp(kind: str):
    from sklearn import neural_network

    if kind == "classifier":
        return neural_network.MLPClassifier((256,), random_state=0)
    return neural_network.MLPRegressor(random_state=0)


def _lda():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    return LinearDiscriminantAnalysis()


#: Epochs of the plain PyTorch loop: as many as the default regressor's fit on the
#: diabetes task runs before early stopping ends it (42, ``len(net_.history)``).
TORCH_LOOP_EPOCHS = 42


def _torch_loop(_, data):
    """The regressor's own network, noise and loss in a hand-written PyTorch loop.

    What a default ``ConditionalNCERegressor`` fit on the diabetes task trains (its
    base, sampler, module, objective and untraced Adam, built by the estimator's own
    hooks) on the first 90% of the rows (the fit holds out a random 10% for early
    stopping), the same number of epochs of the same batch size, without skorch's
    loop, callbacks and held-out scoring: the torch floor of that fit, measured beside
    it under the same load (issue 34).
    """
    from sknce import ConditionalNCERegressor
    from sknce._base import auto_batch_size
    from sknce._random import Seeds
    from sknce._untraced import UntracedAdam

    X, y = data
    estimator = ConditionalNCERegressor(random_state=0)
    seeds = Seeds.from_random_state(0)
    n_train = len(y) - int(np.ceil(estimator.validation_fraction * len(y)))
    examples = estimator._validate_fit_data(X[:n_train], y[:n_train], reset=True, partial=False)
    examples = estimator._start_fit(examples, seeds)
    sampler = estimator._make_dataset(examples, "cpu").sampler
    module = estimator._make_module(examples, seeds)
    objective = estimator._make_objective()
    optimizer = UntracedAdam(module.parameters(), lr=estimator.lr)
    batch_size = auto_batch_size(n_train, estimator._batch_divisor)
    rng = np.random.default_rng(0)
    with threadpool_limits(1), _torch_threads(1):
        for _ in range(TORCH_LOOP_EPOCHS):
            order = rng.permutation(n_train)
            for start in range(0, n_train, batch_size):
                inputs, targets = sampler(order[start : start + batch_size], rng)
                optimizer.zero_grad()
                objective(module(**inputs), targets).backward()
                optimizer.step()
    return module


@contextlib.contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    """torch's intra-op threads set to ``n``, the caller's put back after (as a fit does)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _keywords_data(size):
    texts, Y, _ = keywords(size)
    return texts, Y


_TASKS: dict[str, Callable[[Size], tuple]] = {
    "documents": lambda size: (documents(size),),
    "article": article,
    "article-file": lambda size: (fasttext_file("article", size),),
    "dense": dense,
    "keywords": _keywords_data,
    "keywords-file": lambda size: (fasttext_file("keywords", size),),
    "diabetes": diabetes,
    "digits": digits,
    "lee": lambda size: (lee(size),),
    "wiki": lambda size: (wiki(size),),
}

_LR = {"lr": [1e-3, 3e-3]}
_PIPE_LR = {"conditionalnceclassifier__lr": [1e-3, 3e-3]}
_ALPHA = {"alpha": [1e-4, 1e-3]}

CASES = [
    # documents (Tosh et al.) and their peer
    _nce("documents", "DirectNCEEmbedder", {"n_components": [50, 100]}),
    _nce("documents", "LandmarkNCEEmbedder", {"n_landmarks": [500, 1000]}),
    _sklearn("documents", "tf-idf + TruncatedSVD(100)", _svd),
    # the classifier's compiled bag path, its torch MLP path, and their peers
    _nce(
        "article",
        "ConditionalNCEClassifier",
        {"conditionalnceclassifier__lr": [0.1, 0.2]},
        text=True,
    ),
    _nce("article", "ConditionalNCEClassifier", _PIPE_LR, text=True, hidden_layer_sizes=(256,)),
    _sklearn(
        "article",
        "LogisticRegression()",
        lambda: _logistic(text=True),
        {"logisticregression__C": [0.5, 1.0]},
    ),
    _fasttext("article"),
    _nce("dense", "ConditionalNCEClassifier", _LR),
    _sklearn("dense", "MLPClassifier((256,))", lambda: _mlp("classifier"), _ALPHA),
    _sklearn("dense", "LogisticRegression()", _logistic, {"C": [0.5, 1.0]}),
    # the multi-label path (torch autograd) and fastText's one-vs-all
    _nce("keywords", "ConditionalNCEClassifier", _PIPE_LR, text=True),
    _fasttext("keywords", loss="ova"),
    # the regressor and the latent-class embedder
    _nce("diabetes", "ConditionalNCERegressor", _LR),
    Case(
        "PyTorch loop (ConditionalNCERegressor's network)",
        "diabetes",
        lambda: None,
        _torch_loop,
    ),
    _sklearn("diabetes", "MLPRegressor()", lambda: _mlp("regressor"), _ALPHA),
    _nce("digits", "LatentClassNCEEmbedder", _LR),
    _sklearn("digits", "LinearDiscriminantAnalysis()", _lda, {"solver": ["svd", "lsqr"]}),
    # the compiled words kernel and gensim, at their defaults
    _nce("lee", "ACEWord2Vec"),
    _gensim("lee"),
    # threads of the words kernel (issue 34): n_jobs on 2 cores beside gensim's workers
    *(
        _nce("wiki", "ACEWord2Vec", group="threads", adversarial=False, n_jobs=n)
        for n in (None, 2, -1)
    ),
    *(_gensim("wiki", group="threads", sg=1, epochs=20, workers=n) for n in (1, 2)),
]


# --- the run ----------------------------------------------------------------------------
def _head(data: tuple, n: int) -> tuple:
    """The first ``n`` rows of each array of ``data`` (a file stays whole)."""
    return tuple(x if isinstance(x, Path) else x[:n] for x in data)


def _keep_worker() -> None:
    """A loky worker's initializer: no restart when its memory grows (a larger fit than its
    first is not a leak here), so that no measurement pays a worker's start."""
    from joblib.externals.loky import process_executor

    process_executor._USE_PSUTIL = False


def _grid_search(case: Case, data: tuple) -> object:
    from joblib import parallel_config
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(case.make(), case.grid, cv=2, n_jobs=2, error_score="raise")
    # the same two loky workers run every search (started by the warm-up)
    with parallel_config(backend="loky", idle_worker_timeout=24 * 3600, initializer=_keep_worker):
        return search.fit(*data)


def _measurements(case: Case, grid: bool, size: Size) -> list[tuple[str, Callable[[], object]]]:
    data = case.data(size)
    runs = [("fit", lambda: case.run(case.make(), data))]
    if grid and case.grid is not None:
        runs.append(("GridSearchCV(n_jobs=2)", lambda: _grid_search(case, data)))
    return runs


def warm_up(cases: list[Case], grid: bool, size: Size) -> float:
    """One untimed fit (and grid search) of every case on a small slice of its data."""
    start = time.perf_counter()
    for case in cases:
        head = _head(case.data(size), 50 if case.task in ("lee", "wiki") else 300)
        case.run(case.make(), head)
        if grid and case.grid is not None:
            _grid_search(case, head)
    return time.perf_counter() - start


def summarise(samples: list[dict]) -> list[dict]:
    """Medians over the repeats, per case and kind: quiet, contended and their ratios."""
    rows = []
    keys = list(dict.fromkeys((s["task"], s["system"], s["kind"]) for s in samples))
    for task, system, kind in keys:
        mine = [s for s in samples if (s["task"], s["system"], s["kind"]) == (task, system, kind)]
        quiet = [s for s in mine if not s["busy"]]
        busy = [s for s in mine if s["busy"]]
        q_wall = statistics.median(s["wall"] for s in quiet)
        b_wall = statistics.median(s["wall"] for s in busy)
        q_cpu = statistics.median(s["cpu"] for s in quiet)
        b_cpu = statistics.median(s["cpu"] for s in busy)
        time_ratio, cpu_ratio = b_wall / q_wall, b_cpu / max(q_cpu, 1e-9)
        rows.append(
            {
                "task": task,
                "system": system,
                "kind": kind,
                "quiet s": q_wall,
                "contended s": b_wall,
                "time x": time_ratio,
                "quiet cpu s": q_cpu,
                "contended cpu s": b_cpu,
                "cpu x": cpu_ratio,
                # .get: samples of JSON files written before preemptions were counted
                "quiet preemptions": statistics.median(s.get("preemptions", 0) for s in quiet),
                "contended preemptions": statistics.median(s.get("preemptions", 0) for s in busy),
                "fair": "yes" if time_ratio <= FAIR_TIME and cpu_ratio <= FAIR_CPU else "no",
                "load quiet": f"{min(s['load'] for s in quiet):.1f}-"
                f"{max(s['load'] for s in quiet):.1f}",
                "load contended": f"{min(s['load'] for s in busy):.1f}-"
                f"{max(s['load'] for s in busy):.1f}",
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small tasks, 1 repeat")
    parser.add_argument("--repeats", type=int, default=None, help="default 2 (1 with --quick)")
    parser.add_argument(
        "--cases", nargs="*", default=None, help="keep the cases whose system or task has one"
    )
    parser.add_argument(
        "--groups",
        nargs="*",
        default=["fits", "threads"],
        help="fits: every estimator and its peer; threads: n_jobs of the words kernel",
    )
    parser.add_argument("--no-grid", action="store_true", help="no GridSearchCV measurements")
    parser.add_argument(
        "--busy-limit", type=float, default=1800, help="seconds a competitor lives at most"
    )
    parser.add_argument("--tag", default="", help="suffix of the JSON file's name")
    args = parser.parse_args(argv)
    size = Size(args.quick)
    repeats = args.repeats or (1 if args.quick else 2)
    grid = not args.no_grid
    cases = [c for c in CASES if c.group in args.groups]
    if args.cases:
        cases = [c for c in cases if any(k in c.system or k == c.task for k in args.cases)]
    warnings.simplefilter("ignore")  # peers' ConvergenceWarnings at their defaults
    load_start = os.getloadavg()
    print(f"load average at start: {load_start}; {len(cases)} cases, {repeats} repeat(s)")
    for case in cases:
        case.data(size)  # built before any clock
    print(f"warm-up {warm_up(cases, grid, size):.1f} s", flush=True)
    samples = []
    for repeat in range(repeats):
        for case in cases:
            for kind, run in _measurements(case, grid, size):
                for busy in (False, True):
                    sample = measure(run, busy, args.busy_limit)
                    sample.update(task=case.task, system=case.system, kind=kind, busy=busy)
                    sample["repeat"] = repeat
                    samples.append(sample)
                    print(
                        f"  [{repeat + 1}/{repeats}] {case.task:<9} {case.system:<52} {kind:<22}"
                        f" {'contended' if busy else 'quiet':<9} {sample['wall']:7.2f} s "
                        f"cpu {sample['cpu']:7.2f} s  preempted {sample['preemptions']:5d}x  "
                        f"load {sample['load']:.1f}",
                        flush=True,
                    )
        # after every repeat: what is measured so far survives a run stopped later
        write(args, samples, repeat + 1, load_start)


def write(args: argparse.Namespace, samples: list[dict], repeats: int, load_start) -> None:
    """The table and JSON of ``samples``, the medians of ``repeats`` repeats."""
    load_end = os.getloadavg()
    name = "contention_quick" if args.quick else "contention"
    report(
        name + (f"_{args.tag}" if args.tag else ""),
        summarise(samples),
        title=(
            f"Quiet and contended fits ({N_BUSY} busy competitors), medians of {repeats}; "
            f"load average {load_start[0]:.1f} at start, {load_end[0]:.1f} at end"
        ),
        params={
            "quick": args.quick,
            "repeats": repeats,
            "busy_competitors": N_BUSY,
            "busy_limit_s": args.busy_limit,
            "fair_time": FAIR_TIME,
            "fair_cpu": FAIR_CPU,
            "peer_threads": PEER_THREADS,
            "load_start": load_start,
            "load_end": load_end,
            "samples": samples,
        },
    )


if __name__ == "__main__":
    main()
