"""LatentClassNCEEmbedder on real data at its defaults, against raw features, PCA and tf-idf.

The latent class of a point is its class label (Awasthi et al., Section 5: two points of
one class form a positive pair, no augmentation) or, for text, the article a sentence
comes from. Every representation goes through the same plain pipeline, defaults
everywhere (only ``random_state`` set); the embedder is fitted on training points with
their latent classes, the other representations on the points without them. Beside the
defaults, ``LatentClassNCE (paper)`` is the paper's setting (the embedder's defaults
before issue 13): ``scaling="none", init="random", n_components=128,
hidden_layer_sizes=(256, 256), batch_size=256, max_epochs=100, early_stopping=False``.

**sklearn tasks** (``digits``: 1,797 8x8 images, 10 classes; ``wine``: 178, 3;
``breast-cancer``: 569, 2; ``iris``: 150, 3). Each representation is fitted on the
training folds of 5 stratified folds x ``--repeats`` seeds and probed on the test fold by

* ``probe acc``: ``LogisticRegression(max_iter=1000)`` trained on the training folds'
  representations and labels (the labels the embedder was trained with: every method
  sees the same labelled points);
* ``5-NN acc``: ``KNeighborsClassifier()`` (5 nearest neighbours, Euclidean; on unit
  vectors the same order as cosine).

Representations: ``raw`` (the features as loaded), ``scaled`` (``StandardScaler``),
``PCA`` (``StandardScaler`` then ``PCA(n_components=0.95)``), and the embedder on the raw
features. Reported: mean and 95% t-interval over the folds; the embedder's fit seconds and
epochs.

**Text task** ``lee_sentences`` (``lee_background.cor``: sentences of news articles,
group = article; 2,594 sentences of 295 articles, 4-24 sentences each). Each of
``--draws`` draws puts half of every article's sentences (rounded up) in a training set.
The embedder (``CountVectorizer()`` then the embedder) is fitted on the training sentences
with their articles; ``counts`` (``CountVectorizer()``), ``tf-idf`` and
``tf-idf+SVD-100`` are fitted once on all sentences, without groups. Scores on the other
sentences: ``same-group NN``, the rate at which a sentence's nearest training sentence
(cosine) is from its own article, and ``linear probe``, the accuracy of
``LogisticRegression()`` trained on the training sentences to predict the article;
mean and 95% t-interval over the draws.

**Targets** (issue 13): the embedder at its defaults above ``raw`` and ``PCA`` on the sklearn
tasks, and above ``counts``, ``tf-idf`` and ``tf-idf+SVD-100`` on text, in each score.
The targets table has every embedder row against every baseline: ``margin`` is the
embedder's score minus the baseline's, with the 95% t-interval of the
paired differences (every method sees the same folds and draws) and the share of folds or
draws where the defaults score higher (a tie is not ahead).

Run (one command; contended timings are labelled so in the README)::

    flock /tmp/sknce-bench.lock nice -n 5 .venv/bin/python benchmarks/bench_real_latent.py

``--ablations`` adds rows of the embedder with one change from its defaults each
(``ABLATIONS``: no early stopping, the principal-component start, a wider output), to see
where a shortfall comes from.

``--from-saved`` rebuilds the tables and the targets from the saved per-fold and per-draw
rows (``results/real_latent{_tag}_folds.json``, ``results/real_latent_lee_sentences{_tag}.json``)
without refitting.
"""

from __future__ import annotations

import argparse
import itertools
import json
import warnings

import numpy as np
import torch
from _common import RESULTS, Timer, report
from _real_conditional_data import latent_task, mean_ci, summarise
from _real_data import load_task
from sklearn.decomposition import PCA, TruncatedSVD
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler, normalize

from sknce import LatentClassNCEEmbedder

SKLEARN_TASKS = ["digits", "wine", "breast-cancer", "iris"]
TEXT_TASKS = ["lee_sentences"]

#: The paper's setting (Section 5), the embedder's defaults before issue 13.
PAPER = dict(
    scaling="none",
    init="random",
    n_components=128,
    hidden_layer_sizes=(256, 256),
    batch_size=256,
    max_epochs=100,
    early_stopping=False,
)

#: One change from the defaults each (``--ablations``): where the shortfalls come from.
ABLATIONS = {
    "early_stopping=False": dict(early_stopping=False),
    "init='pca'": dict(init="pca"),
    "n_components=256": dict(n_components=256),
}

#: The embedder's rows (the targets are about the defaults), and the baselines it must beat.
EMBEDDER = "LatentClassNCE"
DEFAULTS = "LatentClassNCE (defaults)"
POINT_BASELINES = ("raw", "PCA")
TEXT_BASELINES = ("counts", "tf-idf", "tf-idf+SVD-100")

#: Keys of the tables.
POINT_KEYS = ("probe acc", "5-NN acc", "dims", "fit s", "epochs")
TEXT_KEYS = ("same-group NN", "linear probe", "fit s", "epochs")


def embedders(text: bool, ablations: bool = False) -> dict:
    """The embedder's rows: method -> ``(factory(seed), True)``; on text after CountVectorizer."""
    settings = {DEFAULTS: {}, "LatentClassNCE (paper)": PAPER}
    if ablations:
        settings.update({f"LatentClassNCE (defaults, {k})": v for k, v in ABLATIONS.items()})

    def factory(params: dict):
        def build(seed: int):
            embedder = LatentClassNCEEmbedder(random_state=seed, **params)
            return make_pipeline(CountVectorizer(), embedder) if text else embedder

        return build

    return {name: (factory(params), True) for name, params in settings.items()}


def representations(ablations: bool = False) -> dict:
    """sklearn tasks: method -> ``(factory(seed), uses latent classes)``."""
    return {
        "raw": (lambda seed: FunctionTransformer(), False),
        "scaled": (lambda seed: StandardScaler(), False),
        "PCA": (lambda seed: make_pipeline(StandardScaler(), PCA(n_components=0.95)), False),
        **embedders(text=False, ablations=ablations),
    }


def text_representations(ablations: bool = False) -> dict:
    """Text task: method -> ``(factory(seed), uses latent classes)``, each from raw texts."""
    return {
        "counts": (lambda seed: CountVectorizer(), False),
        "tf-idf": (lambda seed: make_pipeline(CountVectorizer(), TfidfTransformer()), False),
        "tf-idf+SVD-100": (
            lambda seed: make_pipeline(
                CountVectorizer(), TfidfTransformer(), TruncatedSVD(100, random_state=seed)
            ),
            False,
        ),
        **embedders(text=True, ablations=ablations),
    }


def _epochs(rep) -> int | None:
    """Epochs of a fitted embedder (alone or last in a pipeline), else None."""
    last = rep[-1] if hasattr(rep, "steps") else rep
    return int(last.n_iter_) if isinstance(last, LatentClassNCEEmbedder) else None


def evaluate(task_name: str, method: str, factory, split, seed: int) -> dict:
    """Fit one representation on one fold and probe it: a dict row of the fold table."""
    rep = factory(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Timer() as fit:
            Z_train = rep.fit_transform(split.X_train, split.y_train)
        Z_test = rep.transform(split.X_test)
        probe = LogisticRegression(max_iter=1000).fit(Z_train, split.y_train)
    knn = KNeighborsClassifier().fit(Z_train, split.y_train)
    return {
        "task": task_name,
        "method": method,
        "probe acc": float(np.mean(probe.predict(Z_test) == split.y_test)),
        "5-NN acc": float(np.mean(knn.predict(Z_test) == split.y_test)),
        "dims": int(Z_train.shape[1]),
        "fit s": fit.seconds,
        "epochs": _epochs(rep),
    }


def run(tasks, methods: dict, *, repeats: int = 1, seed: int = 0, log=print) -> list[dict]:
    """Fold rows of every (sklearn task, method) over ``repeats`` seeds of the 5-fold split."""
    rows = []
    for name in tasks:
        task = latent_task(name)
        for r in range(repeats):
            for k, split in enumerate(task.folds(5, seed + r)):
                for method, (factory, _) in methods.items():
                    row = evaluate(name, method, factory, split, seed + 5 * r + k)
                    row["fold"] = 5 * r + k
                    log(row)
                    rows.append(row)
    return rows


def group_split(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask of training rows: half of each group's rows (rounded up), at random."""
    train = np.zeros(len(groups), dtype=bool)
    for g in np.unique(groups):
        rows = rng.permutation(np.flatnonzero(groups == g))
        train[rows[: (len(rows) + 1) // 2]] = True
    return train


def nearest_neighbour_rate(Z_test, g_test, Z_train, g_train) -> float:
    """Share of test rows whose nearest training row (cosine) is from the same group."""
    sim = normalize(Z_test) @ normalize(Z_train).T
    sim = sim.toarray() if hasattr(sim, "toarray") else np.asarray(sim)
    return float(np.mean(g_train[np.argmax(sim, axis=1)] == g_test))


def evaluate_text(task, method: str, factory, supervised: bool, draws: int, seed: int) -> list:
    """Draw rows (same-group NN rate, linear probe) of one method on a grouped-text task."""
    rng = np.random.default_rng(seed)
    texts = np.asarray(task.texts, dtype=object)
    rows, Z_all, seconds = [], None, 0.0
    for draw in range(draws):
        train = group_split(task.y, rng)
        rep, epochs = None, None
        if supervised:  # fitted on the training rows and their groups
            rep = factory(seed + draw)
            with Timer() as t:
                rep.fit(list(texts[train]), task.y[train])
            seconds, epochs = t.seconds, _epochs(rep)
            Z = rep.transform(task.texts)
        else:  # fitted once, without groups, on every row
            if Z_all is None:
                with Timer() as t:
                    Z_all = factory(seed).fit_transform(task.texts)
                seconds = t.seconds
            Z = Z_all
        y_train, y_test = task.y[train], task.y[~train]
        with warnings.catch_warnings():
            # the plain pipeline: default max_iter; unscaled features may not converge
            warnings.simplefilter("ignore", ConvergenceWarning)
            probe = LogisticRegression().fit(Z[train], y_train)
        rows.append(
            {
                "task": task.name,
                "method": method,
                "draw": draw,
                "same-group NN": nearest_neighbour_rate(Z[~train], y_test, Z[train], y_train),
                "linear probe": float(probe.score(Z[~train], y_test)),
                "fit s": seconds,
                "epochs": epochs,
            }
        )
    return rows


def targets(rows: list[dict], baselines, metrics, unit: str) -> list[dict]:
    """Paired margins of each embedder row over each baseline, per task and metric.

    ``rows`` are per-fold (``unit="fold"``) or per-draw (``unit="draw"``) rows; a
    difference is taken between an embedder and a baseline on the same fold or draw.
    """
    out = []
    for task in dict.fromkeys(r["task"] for r in rows):
        by = {(r["method"], r[unit]): r for r in rows if r["task"] == task}
        methods = [m for m in dict.fromkeys(m for m, _ in by) if m.startswith(EMBEDDER)]
        for method, metric, base in itertools.product(methods, metrics, baselines):
            units = [u for m, u in by if m == method]
            if any((base, u) not in by for u in units):
                continue
            ours = np.array([by[method, u][metric] for u in units])
            diff = ours - np.array([by[base, u][metric] for u in units])
            margin, half = mean_ci(diff)
            out.append(
                {
                    "task": task,
                    "method": method,
                    "score": metric,
                    "its score": float(ours.mean()),
                    "baseline": base,
                    "baseline's": float(ours.mean() - diff.mean()),
                    "margin": margin,
                    "margin ±": half,
                    "share ahead": float(np.mean(diff > 0)),
                    "above": "yes" if margin > 0 else "no",
                }
            )
    return out


def _saved(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=SKLEARN_TASKS + TEXT_TASKS)
    parser.add_argument("--methods", nargs="+", default=None, help="subset of the methods")
    parser.add_argument("--repeats", type=int, default=2, help="seeds of the 5-fold split")
    parser.add_argument("--draws", type=int, default=10, help="splits of the text task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tag", default="", help="suffix of the results file names")
    parser.add_argument("--ablations", action="store_true", help="add the ABLATIONS rows")
    parser.add_argument("--from-saved", action="store_true", help="no refitting: saved rows")
    args = parser.parse_args()
    torch.set_num_threads(1)
    suffix = f"_{args.tag}" if args.tag else ""
    point_tasks = [t for t in args.tasks if t in SKLEARN_TASKS]
    text_tasks = [t for t in args.tasks if t in TEXT_TASKS]
    unknown = sorted(set(args.tasks) - set(SKLEARN_TASKS + TEXT_TASKS))
    if unknown:
        parser.error(f"unknown tasks {unknown}; choose from {SKLEARN_TASKS + TEXT_TASKS}")

    def chosen(methods: dict) -> dict:
        return {m: f for m, f in methods.items() if not args.methods or m in args.methods}

    target_rows = []
    if point_tasks:
        if args.from_saved:
            rows = _saved(f"real_latent{suffix}_folds")["rows"]
            rows = [r for r in rows if r["task"] in point_tasks]
        else:
            rows = run(
                point_tasks,
                chosen(representations(args.ablations)),
                repeats=args.repeats,
                seed=args.seed,
            )
            report(f"real_latent{suffix}_folds", rows, title="Per fold", params=vars(args))
        target_rows += targets(rows, POINT_BASELINES, ("probe acc", "5-NN acc"), "fold")
        report(
            f"real_latent{suffix}",
            summarise(rows, POINT_KEYS),
            title="Latent classes = labels: linear-probe and 5-NN test accuracy of each "
            "representation, mean and 95% interval over folds",
            params=vars(args),
        )
    for name in text_tasks:
        task = load_task(name)
        rows = []
        if args.from_saved:
            rows = _saved(f"real_latent_{name}{suffix}")["params"]["draws"]
        else:
            for method, (factory, supervised) in chosen(
                text_representations(args.ablations)
            ).items():
                rows += evaluate_text(task, method, factory, supervised, args.draws, args.seed)
                print(summarise(rows[-args.draws :], TEXT_KEYS)[0], flush=True)
        target_rows += targets(rows, TEXT_BASELINES, ("same-group NN", "linear probe"), "draw")
        report(
            f"real_latent_{name}{suffix}",
            summarise(rows, TEXT_KEYS),
            title="Grouped sentences, held-out half of each group: same-group nearest training "
            "neighbour (cosine) and LogisticRegression() probe, mean and 95% interval over draws",
            params={**vars(args), "task": task.summary(), "draws": rows},
        )
    if target_rows:
        report(
            f"real_latent{suffix}_targets",
            target_rows,
            title="Issue 13 targets (on the defaults' rows): each LatentClassNCE row minus each "
            "baseline, paired over folds or draws (margin > 0: above)",
            params=vars(args),
        )


if __name__ == "__main__":
    main()
