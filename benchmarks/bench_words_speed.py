"""ACEWord2Vec: cost of an ACE epoch against an NCE epoch, and where an epoch's time goes.

A synthetic corpus of Zipf-distributed tokens over 30,000 words (documents of
1,000 tokens; ``min_count=1``, so the vocabulary holds every word drawn) is
fitted for ``--epochs`` epochs by ``ACEWord2Vec(adversarial=False)`` and by
``ACEWord2Vec(adversarial=True)`` at several ``n_candidates`` (the size of the
per-batch candidate set that approximates the generator's softmax), all other
parameters at their defaults. Reported: seconds per epoch (mean of skorch-style
``history_`` durations) and the ratio to the NCE epoch.

With ``--profile``: on the Wikipedia excerpt of ``bench_words.py``, each of
NCE, ACE (no warm-up), CBOW and CBOW-ACE is fitted for ``--epochs`` epochs with
one kernel thread, and the CPU time of each part of an epoch is summed over the
threads that run it (``time.thread_time``, so other processes on the machine
barely change it): reading and encoding the corpus, the windows,
the noise negatives, the generator's random draws (all in the batch-building
thread), the discriminator's kernel, and the generator's proposal, rewards and
update (in the training thread). Reported in ms per epoch, with the fit's total
CPU seconds per epoch.

Run::

    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_words_speed.py
    flock /tmp/sknce-bench.lock .venv/bin/python benchmarks/bench_words_speed.py --profile
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections import Counter

import numpy as np
from _common import Timer, report

from sknce import ACEWord2Vec

#: The parts of an epoch: (module, class or None, function, label); a generator function
#: is timed while it produces each item.
PARTS = [
    ("sknce.words._corpus", None, "_encoded_chunks", "read and encode"),
    ("sknce.words._corpus", None, "window_contexts", "windows"),
    ("sknce.words._sampler", None, "sample_alias", "noise negatives"),
    ("sknce.words._sampler", None, "draw_adversarial", "generator draws"),
    ("sknce.words._net", None, "sgd_pairs", "kernel"),
    ("sknce.words._net", None, "sgd_cbow", "kernel"),
    ("sknce.words._generator", "CompiledGenerator", "propose", "generator proposal"),
    ("sknce.words._generator", "CompiledGenerator", "rewards", "generator rewards"),
    ("sknce.words._generator", "CompiledGenerator", "update", "generator update"),
]
PROFILED = {
    "NCE": dict(adversarial=False),
    "ACE": dict(adversarial=True, adversarial_warmup=0.0),
    "CBOW": dict(architecture="cbow", adversarial=False),
    "CBOW-ACE": dict(architecture="cbow", adversarial=True, adversarial_warmup=0.0),
}


def zipf_corpus(n_words: int, n_tokens: int, seed: int = 0) -> list[list[str]]:
    """Documents of 1,000 tokens drawn from a Zipf(1) law over ``n_words`` words."""
    rng = np.random.default_rng(seed)
    probs = 1.0 / np.arange(1, n_words + 1)
    ids = rng.choice(n_words, size=n_tokens, p=probs / probs.sum())
    words = np.array([f"w{i}" for i in range(n_words)])
    return [list(words[ids[i : i + 1000]]) for i in range(0, n_tokens, 1000)]


@contextlib.contextmanager
def timed_parts(spent: Counter):
    """Add each part's CPU seconds (of the thread that runs it) to ``spent``."""
    import importlib
    import inspect

    patched = []
    for module_name, owner, name, label in PARTS:
        target = importlib.import_module(module_name)
        if owner is not None:
            target = getattr(target, owner)
        original = getattr(target, name)
        patched.append((target, name, original))
        if inspect.isgeneratorfunction(original):

            def timed(*args, _f=original, _label=label, **kwargs):
                items = _f(*args, **kwargs)
                while True:
                    start = time.thread_time()
                    item = next(items, StopIteration)
                    spent[_label] += time.thread_time() - start
                    if item is StopIteration:
                        return
                    yield item
        else:

            def timed(*args, _f=original, _label=label, **kwargs):
                start = time.thread_time()
                try:
                    return _f(*args, **kwargs)
                finally:
                    spent[_label] += time.thread_time() - start

        setattr(target, name, timed)
    try:
        yield
    finally:
        for target, name, original in patched:
            setattr(target, name, original)


def profile(epochs: int) -> None:
    """CPU milliseconds per epoch of each part of a fit, per method."""
    from bench_words import COMMON, corpus

    docs = corpus()
    rows = []
    for method, params in PROFILED.items():
        warm = {k: v for k, v in params.items() if k == "architecture"}
        ACEWord2Vec(min_count=1, sample=0, max_epochs=1, n_components=4, **warm).fit(
            [["a", "b", "c"]] * 2
        )
        spent: Counter = Counter()
        cpu = time.process_time()
        with timed_parts(spent), Timer() as t:
            ACEWord2Vec(n_jobs=1, max_epochs=epochs, random_state=0, **params, **COMMON).fit(docs)
        cpu = time.process_time() - cpu
        row = {"method": method, "cpu_s_per_epoch": cpu / epochs, "wall_s": t.seconds}
        row |= {label: 1000 * spent[label] / epochs for *_, label in PARTS if label in spent}
        rows.append(row)
    report(
        "bench_words_profile",
        rows,
        title="CPU ms per epoch of each part of an ACEWord2Vec fit (one kernel thread)",
        params={"epochs": epochs, **COMMON, "note": "thread CPU time; wall_s is contended"},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=30000)
    parser.add_argument("--tokens", type=int, default=500000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--candidates", type=int, nargs="+", default=[128, 256, 512])
    parser.add_argument("--profile", action="store_true", help="time the parts of an epoch")
    args = parser.parse_args()
    if args.profile:
        profile(args.epochs)
        return

    docs = zipf_corpus(args.words, args.tokens)
    ACEWord2Vec(min_count=1, sample=0, max_epochs=1, n_components=4).fit([["a", "b"]] * 2)
    configs = [("NCE", dict(adversarial=False))]
    configs += [(f"ACE, n_candidates={m}", dict(n_candidates=m)) for m in args.candidates]
    rows, nce_epoch = [], None
    for name, params in configs:
        with Timer() as t:
            model = ACEWord2Vec(min_count=1, max_epochs=args.epochs, random_state=0, **params)
            model.fit(docs)
        epoch_s = float(np.mean([row["dur"] for row in model.history_]))
        nce_epoch = nce_epoch or epoch_s
        rows.append(
            {
                "method": name,
                "vocab": len(model.vocabulary_),
                "s_per_epoch": epoch_s,
                "ratio_to_nce": epoch_s / nce_epoch,
                "fit_s": t.seconds,
            }
        )
    report(
        "bench_words_speed",
        rows,
        title=f"ACE vs NCE epoch time at V = {args.words} (synthetic Zipf corpus)",
        params={**vars(args), "note": "2 cores shared with other engineers' jobs"},
    )


if __name__ == "__main__":
    main()
