"""ConditionalNCEClassifier against fastText's supervised mode on sparse bag input (issue 21).

Tasks (all built from data that ships with gensim, or generated):

- ``centre``: the centre word of each position of gensim's Wikipedia excerpt from the
  bag of the words within 5 positions of it (the centre excluded, within its article).
  Articles are split 80/20 (seeded); labels are the training articles' words seen 5
  times or more, and test positions whose word is not a label are dropped.
- ``article``: the article (of 106) a 40-token chunk comes from, from its bag of words;
  chunks split 80/20 at random.
- ``synthetic-1e5`` / ``synthetic-1e6``: the planted log-linear model of
  :func:`sknce.datasets.make_loglinear_conditional` (Ma & Collins, Section 5.1) with
  10^5 or 10^6 labels, each input written as tokens: its support point's id and its 4
  coordinates binned in 10 bins. Test rows whose label no training row has are dropped.

Both systems see the same text: fastText reads it from a training file (written
before the clock starts) with ``__label__`` prefixes; sknce fits
``make_pipeline(CountVectorizer(token_pattern=r"\\S+"), ConditionalNCEClassifier(...))``
on the strings, the vectorizer's fit included in the time. Both run 2 threads.

Figures: fit wall seconds; accuracy and top-10 recall on every test row; the mean
log-likelihood of the true label on (at most) ``--ll-rows`` test rows, from every
label's probability (fastText: ``predict(k=-1)``, renormalised over the labels, since
fastText returns ``exp(log(p + 1e-5))`` and, for ``loss="ns"``, unnormalised sigmoids);
predict seconds per 10,000 rows (fastText: ``predict(k=10)`` line by line through
its binding, the batch form returns wrong probabilities under numpy 2; sknce:
``predict_topk(k=10)`` on the batch). fastText ``softmax`` on the centre task takes
about 400 s: it runs once, not once per repeat.

Usage::

    python benchmarks/bench_vs_fasttext.py                 # everything, 3 repeats
    python benchmarks/bench_vs_fasttext.py --quick         # small, 1 repeat, for development
    python benchmarks/bench_vs_fasttext.py --tasks centre article --repeats 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sknce
from _common import report  # noqa: E402
from _real_conditional_data import wiki_articles  # noqa: E402

THREADS = 2
TOPK = 10


# --- tasks ------------------------------------------------------------------------------
def _split_articles(seed: int = 0):
    articles = wiki_articles()
    order = np.random.default_rng(seed).permutation(len(articles))
    n_train = int(round(0.8 * len(articles)))
    return [articles[i] for i in order[:n_train]], [articles[i] for i in order[n_train:]]


def centre_task(window: int = 5, min_count: int = 5, max_train: int | None = None):
    """Centre word from the bag of words within ``window`` positions (same article)."""
    train, test = _split_articles()
    counts = Counter(w for a in train for w in a)
    labels = {w for w, c in counts.items() if c >= min_count}

    def examples(articles):
        texts, ys = [], []
        for art in articles:
            for i, word in enumerate(art):
                if word not in labels:
                    continue
                bag = art[max(i - window, 0) : i] + art[i + 1 : i + 1 + window]
                texts.append(" ".join(bag))
                ys.append(word)
        return texts, np.asarray(ys, dtype=object)

    X_tr, y_tr = examples(train)
    X_te, y_te = examples(test)
    if max_train is not None and len(X_tr) > max_train:
        X_tr, y_tr = X_tr[:max_train], y_tr[:max_train]
        X_te, y_te = X_te[: max_train // 4], y_te[: max_train // 4]
    return X_tr, y_tr, X_te, y_te


def article_task(chunk: int = 40, seed: int = 0):
    """The article of each ``chunk``-token piece of the corpus."""
    texts, ys = [], []
    for a, art in enumerate(wiki_articles()):
        for start in range(0, len(art) - chunk + 1, chunk):
            texts.append(" ".join(art[start : start + chunk]))
            ys.append(f"a{a}")
    order = np.random.default_rng(seed).permutation(len(texts))
    n_train = int(round(0.8 * len(texts)))
    texts, ys = np.asarray(texts, dtype=object), np.asarray(ys, dtype=object)
    tr, te = order[:n_train], order[n_train:]
    te = te[np.isin(ys[te], ys[tr])]  # an article with no training chunk cannot be predicted
    return list(texts[tr]), ys[tr], list(texts[te]), ys[te]


def planted_truth(n_labels: int, m_x: int, seed: int = 0):
    """The planted model of ``make_loglinear_conditional`` and each input written as tokens."""
    from sknce.datasets import make_loglinear_conditional

    _, _, truth = make_loglinear_conditional(1, m_x=m_x, m_y=n_labels, random_state=seed)
    support = truth.support
    edges = [np.quantile(support[:, j], np.linspace(0, 1, 11)[1:-1]) for j in range(4)]
    tokens = []
    for x in range(m_x):
        bins = [f"c{j}b{int(np.searchsorted(edges[j], support[x, j]))}" for j in range(4)]
        tokens.append(" ".join([f"x{x}", *bins]))
    return truth, tokens


def planted_draws(truth, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of the planted model: each row's input (uniform) and label indices."""
    m_x, n_labels = truth.table.shape
    x_index = rng.integers(m_x, size=n)
    cdf = np.cumsum(truth.table, axis=1)
    y = np.empty(n, dtype=np.int64)
    for x in range(m_x):  # inverse-CDF draws, one support point at a time
        rows = np.flatnonzero(x_index == x)
        y[rows] = np.searchsorted(cdf[x], rng.uniform(0, cdf[x, -1], size=rows.size))
    return x_index, np.minimum(y, n_labels - 1)


def synthetic_task(n_labels: int, n_train: int, n_test: int, m_x: int, seed: int = 0):
    """The planted model of ``make_loglinear_conditional`` written as tokens."""
    truth, tokens = planted_truth(n_labels, m_x, seed)
    n = n_train + n_test
    x_index, y = planted_draws(truth, n, np.random.default_rng(seed + 1))
    texts = [tokens[x] for x in x_index]
    labels = np.array([f"y{v}" for v in y], dtype=object)
    seen = set(labels[:n_train])
    test = [i for i in range(n_train, n) if labels[i] in seen]
    return (
        texts[:n_train],
        labels[:n_train],
        [texts[i] for i in test],
        labels[test],
    )


# --- systems ----------------------------------------------------------------------------
def _write_fasttext_file(path: Path, texts, labels) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for text, label in zip(texts, labels):
            f.write(f"__label__{label} {text}\n")


def _huffman_paths(counts: np.ndarray) -> tuple[list, list]:
    """fastText's hierarchical-softmax tree (``Loss::buildTree``): each label's nodes and codes.

    ``counts`` are the label counts in fastText's label order (non-increasing).
    """
    n = len(counts)
    count = np.full(2 * n - 1, 1e15)
    count[:n] = counts
    parent = np.full(2 * n - 1, -1)
    binary = np.zeros(2 * n - 1, dtype=bool)
    leaf, node = n - 1, n
    for i in range(n, 2 * n - 1):
        mini = []
        for _ in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                mini.append(leaf)
                leaf -= 1
            else:
                mini.append(node)
                node += 1
        count[i] = count[mini[0]] + count[mini[1]]
        parent[mini[0]] = parent[mini[1]] = i
        binary[mini[1]] = True
    paths, codes = [], []
    for i in range(n):
        path, code, j = [], [], i
        while parent[j] != -1:
            path.append(parent[j] - n)
            code.append(binary[j])
            j = parent[j]
        paths.append(path)
        codes.append(code)
    return paths, codes


def _log_sigmoid(z):
    return -np.logaddexp(0.0, -z)


def _flat_log_proba(S: np.ndarray, loss: str) -> np.ndarray:
    """log p(label | text) of every label from the output scores ``S`` (rows x labels):
    ``softmax``'s, or ``ns``'s per-label sigmoids normalised over the labels."""
    if loss == "softmax":
        S = S - S.max(axis=1, keepdims=True)
        return S - np.log(np.exp(S).sum(axis=1, keepdims=True))
    log_sig = _log_sigmoid(S)
    return log_sig - np.log(np.exp(log_sig).sum(axis=1, keepdims=True))


def fasttext_log_proba(model, texts, loss: str, block: int = 4) -> tuple[list, np.ndarray]:
    """log p(label | text) under a fastText model for every label: the labels (without
    ``__label__``) and a texts x labels matrix, as :func:`fasttext_log_likelihood` gives
    it one label at a time (``hs``: every label's path at once, padded to the deepest)."""
    names, freqs = model.get_labels(include_freq=True)
    labels = [name[len("__label__") :] for name in names]
    H = np.array([model.get_sentence_vector(t + " </s>") for t in texts], dtype=np.float64)
    O = np.asarray(model.get_output_matrix(), dtype=np.float64)
    if loss in ("softmax", "ns"):
        return labels, _flat_log_proba(H @ O.T, loss)
    paths, codes = _huffman_paths(np.asarray(freqs, dtype=np.float64))
    depth = max(len(path) for path in paths)
    nodes = np.zeros((len(paths), depth), dtype=np.int64)
    sign = np.zeros((len(paths), depth))  # +1 / -1 along the path, 0 past its end
    for i, (path, code) in enumerate(zip(paths, codes)):
        nodes[i, : len(path)] = path
        sign[i, : len(path)] = np.where(code, 1.0, -1.0)
    out = np.empty((len(texts), len(labels)))
    for start in range(0, len(texts), block):  # rows x labels x depth blocks stay small
        S = (H[start : start + block] @ O.T)[:, nodes]
        out[start : start + block] = np.sum(_log_sigmoid(S * sign) * (sign != 0), axis=2)
    return labels, out


def fasttext_log_likelihood(model, texts, labels, loss: str) -> list:
    """log p(label | text) under a fastText model, exactly, from its matrices.

    The hidden vector is the mean of the input vectors of the text's words and the
    end-of-line token, as ``predict`` computes it. ``softmax``: a softmax over the
    labels; ``hs``: the product of the sigmoids along the label's path in the tree;
    ``ns``: fastText's per-label sigmoids, normalised over the labels.
    """
    names, freqs = model.get_labels(include_freq=True)
    index = {name[len("__label__") :]: i for i, name in enumerate(names)}
    H = np.array([model.get_sentence_vector(t + " </s>") for t in texts], dtype=np.float64)
    O = np.asarray(model.get_output_matrix(), dtype=np.float64)
    out = []
    for start in range(0, len(texts), 64):  # rows x labels blocks stay small
        h = H[start : start + 64]
        ys = [index.get(label) for label in labels[start : start + 64]]
        S = h @ O.T
        if loss in ("softmax", "ns"):
            logp = _flat_log_proba(S, loss)
            out += [logp[r, y] if y is not None else -np.inf for r, y in enumerate(ys)]
        else:
            if not hasattr(model, "_paths"):
                model._paths = _huffman_paths(np.asarray(freqs, dtype=np.float64))
            paths, codes = model._paths
            for r, y in enumerate(ys):
                if y is None:
                    out.append(-np.inf)
                    continue
                s = S[r, paths[y]]
                out.append(float(np.sum(_log_sigmoid(np.where(codes[y], s, -s)))))
    return out


def run_fasttext(params: dict, data, ll_rows: int, tmp: Path) -> dict:
    import fasttext

    X_tr, y_tr, X_te, y_te = data
    path = tmp / "train.txt"
    if not path.exists():
        _write_fasttext_file(path, X_tr, y_tr)
    start = time.perf_counter()
    model = fasttext.train_supervised(input=str(path), thread=THREADS, verbose=0, **params)
    fit_s = time.perf_counter() - start

    def predict(text: str, k: int):
        return model.f.predict(text + "\n", k, 0.0, "strict")

    start = time.perf_counter()
    top = [predict(t, TOPK) for t in X_te]
    predict_s = time.perf_counter() - start
    prefix = len("__label__")
    hit1 = hit10 = 0
    for pairs, label in zip(top, y_te):
        names = [name[prefix:] for _, name in pairs]
        hit1 += bool(names) and names[0] == label
        hit10 += label in names
    rows = np.random.default_rng(0).permutation(len(X_te))[:ll_rows]
    ll = fasttext_log_likelihood(model, [X_te[i] for i in rows], y_te[rows], params["loss"])
    return {
        "fit_s": fit_s,
        "accuracy": hit1 / len(y_te),
        "top10": hit10 / len(y_te),
        "log_lik": float(np.mean(ll)),
        "predict_s_per_10k": predict_s / len(X_te) * 1e4,
    }


def run_sknce(params: dict, data, ll_rows: int, seed: int) -> dict:
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import make_pipeline

    from sknce import ConditionalNCEClassifier

    X_tr, y_tr, X_te, y_te = data
    model = make_pipeline(
        CountVectorizer(token_pattern=r"\S+", lowercase=False),
        ConditionalNCEClassifier(random_state=seed, **params),
    )
    start = time.perf_counter()
    model.fit(X_tr, y_tr)
    fit_s = time.perf_counter() - start
    vectorizer, clf = model[0], model[-1]
    start = time.perf_counter()
    X = vectorizer.transform(X_te)
    top, _ = clf.predict_topk(X, TOPK)
    predict_s = time.perf_counter() - start
    rows = np.sort(np.random.default_rng(0).permutation(len(X_te))[:ll_rows])
    rows = rows[np.isin(y_te[rows], clf.classes_)]
    ll = []
    step = max(1, 20_000_000 // len(clf.classes_))  # (rows, classes) float64 blocks <= 160 MB
    for start in range(0, len(rows), step):
        block = rows[start : start + step]
        log_proba = clf.predict_log_proba(X[block])
        ll.extend(log_proba[np.arange(len(block)), np.searchsorted(clf.classes_, y_te[block])])
    return {
        "fit_s": fit_s,
        "accuracy": float(np.mean(top[:, 0] == y_te)),
        "top10": float(np.mean((top == y_te[:, None]).any(axis=1))),
        "log_lik": float(np.mean(ll)),
        "predict_s_per_10k": predict_s / len(X_te) * 1e4,
        "epochs": clf.n_iter_,
    }


FASTTEXT = {
    "fastText hs": {"loss": "hs"},
    "fastText ns": {"loss": "ns"},
    "fastText softmax": {"loss": "softmax"},
    "fastText tutorial (softmax, epoch=25, lr=1.0)": {"loss": "softmax", "epoch": 25, "lr": 1.0},
}

SKNCE = {
    "sknce defaults": {"n_jobs": THREADS},
}


def print_row(row: dict) -> None:
    """One run's figures on one line, floats to 4 decimals."""
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)


def result_name(script: str, tag: str, quick: bool) -> str:
    """The results' file stem: the script, then ``_<tag>``, then ``_quick``."""
    return script + (f"_{tag}" if tag else "") + ("_quick" if quick else "")


def warm_up() -> float:
    """Tiny fits, untimed: the process's first fit imports torch's compiler stack (seconds)
    and loads the compiled kernels (one fit in each compiled regime: the linear model's
    and, with ``embedding_dim`` given, the factored bag's); fastText pays neither.
    Returns their wall seconds."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import make_pipeline

    from sknce import ConditionalNCEClassifier

    texts = [f"w{i % 7} w{i % 5} w{i % 3}" for i in range(200)]
    labels = [f"y{i % 4}" for i in range(200)]
    start = time.perf_counter()
    for options in ({}, {"embedding_dim": 8}):
        make_pipeline(
            CountVectorizer(token_pattern=r"\S+"),
            ConditionalNCEClassifier(max_epochs=1, n_jobs=THREADS, random_state=0, **options),
        ).fit(texts, labels)
    return time.perf_counter() - start


def task_systems(task: str, quick: bool) -> list[str]:
    """The systems run on ``task`` (softmax does not scale to the large label sets)."""
    if task == "article":
        return list(FASTTEXT)
    names = ["fastText hs", "fastText ns"]
    if task == "centre":
        names.append("fastText softmax")
    return names


def build(task: str, quick: bool):
    if task == "centre":
        return centre_task(max_train=40000 if quick else None)
    if task == "article":
        return article_task()
    n_labels = {"synthetic-1e5": 10**5, "synthetic-1e6": 10**6}[task]
    if quick:
        return synthetic_task(n_labels, 20000, 2000, m_x=20)
    if n_labels == 10**5:
        return synthetic_task(n_labels, 200_000, 10_000, m_x=200)
    return synthetic_task(n_labels, 300_000, 3_000, m_x=40)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=["centre", "article", "synthetic-1e5", "synthetic-1e6"],
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ll-rows", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="small data, 1 repeat")
    parser.add_argument("--only", nargs="*", default=None, help="run only these systems")
    parser.add_argument("--tag", default="")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    warm_up_s = warm_up()
    print(f"warm-up fit (untimed below): {warm_up_s:.1f} s", flush=True)
    rows = []
    for task in args.tasks:
        data = build(task, args.quick)
        info = {
            "task": task,
            "n_train": len(data[0]),
            "n_test": len(data[2]),
            "n_classes": len(set(data[1])),
        }
        print(info, flush=True)
        ll_rows = min(args.ll_rows, 300 if task == "synthetic-1e6" else args.ll_rows)
        systems = [(n, "fasttext", FASTTEXT[n]) for n in task_systems(task, args.quick)]
        systems += [(n, "sknce", p) for n, p in SKNCE.items()]
        if args.only is not None:
            systems = [s for s in systems if s[0] in args.only]
        with tempfile.TemporaryDirectory() as tmp:
            # Repeats interleave the systems, so that a drift in the machine's speed
            # during the run lands on every system alike.
            for repeat in range(repeats):
                for name, kind, params in systems:
                    # fastText softmax over thousands of labels: minutes a fit, run once
                    if repeat and params.get("loss") == "softmax" and task != "article":
                        continue
                    if kind == "fasttext":
                        result = run_fasttext(params, data, ll_rows, Path(tmp))
                    else:
                        result = run_sknce(params, data, ll_rows, seed=repeat)
                    row = {**info, "system": name, "repeat": repeat, **result}
                    print_row(row)
                    rows.append(row)
    summary = summarise(rows)
    name = result_name("bench_vs_fasttext", args.tag, args.quick)
    report(
        name,
        summary,
        title="ConditionalNCEClassifier vs fastText (2 threads each): mean and range over "
        "repeats; "
        "ratios to fastText hs",
        params={
            "repeats": repeats,
            "threads": THREADS,
            "ll_rows": args.ll_rows,
            "warm_up_s": warm_up_s,
            "runs": rows,
        },
    )


def summarise(rows: list[dict]) -> list[dict]:
    """One row per (task, system): means, ranges, and ratios to fastText hs."""
    out = []
    keys = ("fit_s", "accuracy", "top10", "log_lik", "predict_s_per_10k")
    groups: dict = {}
    for row in rows:
        groups.setdefault((row["task"], row["system"]), []).append(row)
    for (task, system), group in groups.items():
        entry = {"task": task, "system": system, "n": len(group)}
        for key in keys:
            values = np.array([r[key] for r in group])
            entry[key] = float(values.mean())
            if len(values) > 1:
                entry[key + "_range"] = f"{values.min():.4g}-{values.max():.4g}"
        hs = groups.get((task, "fastText hs"))
        if hs:
            entry["fit_vs_hs"] = entry["fit_s"] / np.mean([r["fit_s"] for r in hs])
            entry["acc_minus_hs"] = entry["accuracy"] - np.mean([r["accuracy"] for r in hs])
            entry["ll_minus_hs"] = entry["log_lik"] - np.mean([r["log_lik"] for r in hs])
        out.append(entry)
    return out


if __name__ == "__main__":
    main()
