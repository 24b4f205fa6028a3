"""Subword vectors: gensim's FastText vs ACEWord2Vec(subwords=True) on a Wikipedia excerpt.

The corpus and word-pair sets are those of ``bench_words.py`` (the Wikipedia
excerpt in gensim's test data, ``_words_data.py``). All methods use the same
hyperparameters: 100 dimensions, window 5, 5 negatives, min_count 5, sample
1e-3, n-grams of 3 to 6 characters hashed into 2,000,000 buckets (fastText's and
gensim's defaults; ``--bucket auto`` gives sknce its own default, the rows from
the vocabulary, and the others 2,000,000), 2 threads:

- ``gensim_ft``: ``gensim.models.FastText(sg=1, negative=5, workers=2)``;
  ``gensim_ft_cbow``: ``sg=0`` (``cbow_mean=1``);
- ``sw_nce``: ``ACEWord2Vec(subwords=True, adversarial=False, n_jobs=2)``;
  ``sw_ace``: the same with ACE; ``sw_cbow``: ``architecture="cbow"``, NCE;
- ``words``: ``ACEWord2Vec(adversarial=False)`` without subwords, for reference:
  it has no vector for a word outside its vocabulary;
- ``fasttext``: fastText itself (``fasttext.train_unsupervised``, skipgram,
  ``thread=2``), only if its wheel is installed.

Each (method, seed) runs in a fresh subprocess; the load average is recorded
before each run. Quality is the Spearman correlation with the human scores of
WordSim353 and SimLex-999 (words lower-cased, as the corpus):

- ``*_all``: every pair; a pair with a word that has no vector (outside the
  vocabulary of a word-level model) gets similarity 0, gensim's ``dummy4unknown``;
- ``*_oov``: only the pairs with a word outside the model's vocabulary (of
  ``min_count=5``, the same for every method), which only the n-grams can score;
- ``*_vocab``: gensim's ``evaluate_word_pairs`` default (pairs of vocabulary
  words only), comparable with ``bench_words.py``.

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_subwords.py --seeds 1
    .venv/bin/python benchmarks/bench_subwords.py --quick   # 2 epochs, 100,000 buckets

The environment variable ``SKNCE_PARAMS`` (JSON) overrides parameters of the
sknce methods, for screens (e.g. ``SKNCE_PARAMS='{"lr": 0.05}'``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from _common import Timer, format_table, peak_rss_mib, report, run_one_json
from _words_data import read_pairs, simlex999_path, wordsim353_path
from bench_words import corpus
from scipy import stats

COMMON = dict(window=5, min_count=5, sample=1e-3)
NGRAMS = dict(min_n=3, max_n=6)
FASTTEXT_BUCKET = 2_000_000
METHODS = {
    "gensim_ft": "gensim FastText (sg=1)",
    "gensim_ft_cbow": "gensim FastText (sg=0)",
    "fasttext": "fastText skipgram",
    "sw_nce": "ACEWord2Vec subwords NCE",
    "sw_ace": "ACEWord2Vec subwords ACE",
    "sw_cbow": "ACEWord2Vec subwords CBOW NCE",
    "words": "ACEWord2Vec NCE (words only)",
}
REFERENCE = {"sw_nce": "gensim_ft", "sw_ace": "gensim_ft", "sw_cbow": "gensim_ft_cbow"}
SKNCE_PARAMS = {
    "sw_nce": dict(subwords=True, adversarial=False),
    "sw_ace": dict(subwords=True, adversarial=True),
    "sw_cbow": dict(subwords=True, adversarial=False, architecture="cbow"),
    "words": dict(adversarial=False),
}
DEFAULT_METHODS = ["gensim_ft", "sw_nce", "sw_ace", "gensim_ft_cbow", "sw_cbow", "words"]
TITLE = "Subword vectors on the gensim Wikipedia excerpt (median time, mean quality)"
SETS = {"ws353": wordsim353_path, "simlex": simlex999_path}


def spearman(similarity, vocab: set, path) -> dict:
    """Spearman on all pairs (0 for a word without a vector), OOV pairs, vocabulary pairs."""
    gold, model, oov_gold, oov_model, in_gold, in_model = [], [], [], [], [], []
    for a, b, score in read_pairs(path):
        a, b = a.lower(), b.lower()
        value = similarity(a, b)
        gold.append(score)
        model.append(0.0 if value is None else value)
        if a in vocab and b in vocab:
            in_gold.append(score)
            in_model.append(value)
        elif value is not None:
            oov_gold.append(score)
            oov_model.append(value)
    n_oov = len(gold) - len(in_gold)
    return {
        "all": float(stats.spearmanr(gold, model)[0]),
        "oov": float(stats.spearmanr(oov_gold, oov_model)[0]) if len(oov_gold) > 2 else None,
        "vocab": float(stats.spearmanr(in_gold, in_model)[0]),
        "oov_pairs": n_oov,
        "pairs": len(gold),
    }


def _cosine(u: np.ndarray, v: np.ndarray) -> float:
    norm = np.linalg.norm(u) * np.linalg.norm(v)
    return float(u @ v / norm) if norm > 0 else 0.0


def _bucket(text: str) -> int | str:
    """``--bucket``: a number of rows, or ``auto`` (sknce's rule; the others take 2,000,000)."""
    return text if text == "auto" else int(text)


def fit(method: str, epochs: int, seed: int, bucket: int | str):
    """Fit one model; return (similarity function, vocabulary, epochs, seconds, cpu seconds)."""
    docs = corpus()
    rows = FASTTEXT_BUCKET if bucket == "auto" else bucket  # gensim's and fastText's
    cpu = time.process_time()
    if method.startswith("gensim"):
        from gensim.models import FastText

        with Timer() as t:
            model = FastText(
                docs,
                vector_size=100,
                sg=0 if method == "gensim_ft_cbow" else 1,
                negative=5,
                workers=2,
                epochs=epochs,
                seed=seed,
                bucket=rows,
                **NGRAMS,
                **COMMON,
            )
        wv = model.wv
        return wv.similarity, set(wv.index_to_key), epochs, t.seconds, time.process_time() - cpu
    if method == "fasttext":
        import tempfile

        import fasttext

        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.writelines(" ".join(doc) + "\n" for doc in docs)
        with Timer() as t:
            model = fasttext.train_unsupervised(
                f.name,
                model="skipgram",
                dim=100,
                ws=COMMON["window"],
                minCount=COMMON["min_count"],
                t=COMMON["sample"],
                neg=5,
                epoch=epochs,
                thread=2,
                bucket=rows,
                minn=NGRAMS["min_n"],
                maxn=NGRAMS["max_n"],
                verbose=0,
            )
        os.unlink(f.name)
        vocab = set(model.words)

        def similarity(a, b):
            return _cosine(model.get_word_vector(a), model.get_word_vector(b))

        return similarity, vocab, epochs, t.seconds, time.process_time() - cpu
    from sknce import ACEWord2Vec

    params = {**SKNCE_PARAMS[method], "random_state": seed, "max_epochs": epochs, **COMMON}
    params |= json.loads(os.environ.get("SKNCE_PARAMS", "{}"))
    if params.get("subwords"):
        params.update(bucket=bucket, **NGRAMS)
    # compile (or load from cache) the numba kernels outside the timed fit
    warm = {k: v for k, v in params.items() if k in ("architecture", "subwords")}
    ACEWord2Vec(min_count=1, sample=0, max_epochs=1, n_components=4, bucket=10, **warm).fit(
        [["a", "b", "c"]] * 2
    )
    cpu = time.process_time()
    with Timer() as t:
        model = ACEWord2Vec(n_jobs=2, **params).fit(docs)
    cpu = time.process_time() - cpu
    wv = model.wv_
    vocab = set(model.vocabulary_)
    if params.get("subwords"):
        similarity = wv.similarity
    else:

        def similarity(a, b):
            return wv.similarity(a, b) if a in vocab and b in vocab else None

    return similarity, vocab, model.n_iter_, t.seconds, cpu


def run_one(method: str, epochs: int, seed: int, bucket: int | str) -> dict:
    """Fit one model in this process; return its measurements."""
    n_tokens = sum(len(d) for d in corpus())
    similarity, vocab, epochs, seconds, cpu = fit(method, epochs, seed, bucket)
    row = {
        "fit_s": seconds,
        "cpu_s": cpu,
        "epochs": epochs,
        "words_per_s": n_tokens * epochs / seconds,
        "peak_rss_mib": peak_rss_mib(),
        "vocab": len(vocab),
    }
    for name, path in SETS.items():
        for key, value in spearman(similarity, vocab, path()).items():
            row[f"{name}_{key}"] = value
    return row


def in_subprocess(method: str, epochs: int, seed: int, bucket: int | str) -> dict:
    """Run :func:`run_one` in a fresh interpreter and parse its JSON."""
    return run_one_json(__file__, method, epochs, seed, bucket)


def summarise(rows: list[dict]) -> list[dict]:
    """Median fit time and mean quality per method, with time ratios to gensim."""
    summary = []
    for key in dict.fromkeys(r["key"] for r in rows):
        group = [r for r in rows if r["key"] == key]
        entry = {"method": METHODS[key], "key": key, "runs": len(group)}
        for name in ("fit_s", "cpu_s", "words_per_s", "peak_rss_mib", "load"):
            entry[name] = float(np.median([r[name] for r in group]))
        for name in SETS:
            for part in ("all", "oov", "vocab"):
                values = [r[f"{name}_{part}"] for r in group if r[f"{name}_{part}"] is not None]
                entry[f"{name}_{part}"] = float(np.mean(values)) if values else None
        summary.append(entry)
    for entry in summary:
        match = [e for e in summary if e["key"] == REFERENCE.get(entry["key"])]
        if match:
            entry["time_vs_gensim"] = entry["fit_s"] / match[0]["fit_s"]
            entry["ws353_all_vs_gensim"] = entry["ws353_all"] - match[0]["ws353_all"]
            entry["simlex_all_vs_gensim"] = entry["simlex_all"] - match[0]["simlex_all"]
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument(
        "--bucket",
        type=_bucket,
        default=FASTTEXT_BUCKET,
        help="n-gram rows, or 'auto' (sknce's default; gensim and fastText take 2,000,000)",
    )
    parser.add_argument("--methods", nargs="+", default=None, choices=list(METHODS))
    parser.add_argument("--quick", action="store_true", help="2 epochs, 100,000 buckets")
    parser.add_argument("--name", default="bench_subwords", help="results file stem")
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        method, epochs, seed, bucket = args.one
        print(json.dumps(run_one(method, int(epochs), int(seed), _bucket(bucket))))
        return
    if args.quick:
        args.epochs, args.bucket = 2, 100000
    methods = args.methods or list(DEFAULT_METHODS)
    if args.methods is None:
        try:
            import fasttext  # noqa: F401

            methods.insert(1, "fasttext")
        except ImportError:
            pass
    corpus()  # parse once before any timed run
    params = {"seeds": args.seeds, "first_seed": args.first_seed, "epochs": args.epochs}
    params["bucket"] = args.bucket
    params |= COMMON | NGRAMS
    note = (
        "2 cores shared with other engineers' jobs; 'load' is the 1-minute load average "
        "before each run"
    )
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for method in methods:
            load = os.getloadavg()[0]
            result = in_subprocess(method, args.epochs, seed, args.bucket)
            rows.append({"method": METHODS[method], "key": method, "seed": seed, "load": load})
            rows[-1].update(result)
            print(format_table([rows[-1]]), flush=True)
            # saved after every run, so that an interrupted benchmark keeps what it measured
            report(
                args.name,
                summarise(rows),
                title=TITLE,
                params={**params, "runs": rows, "note": note},
            )


if __name__ == "__main__":
    main()
