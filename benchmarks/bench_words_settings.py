"""ACEWord2Vec settings screen: rare-word quality of ACE variants against NCE, per seed.

Fits ``ACEWord2Vec(random_state=seed, n_jobs=1, window=5, min_count=5,
sample=1e-3, **setting)`` on the Wikipedia excerpt of ``bench_words.py`` for
every setting and seed (one kernel thread, so that several screens can share a
machine) and scores it with ``bench_words.evaluate``: Spearman on WordSim353 and
SimLex-999 and on their rare-word pairs. Prints one row per setting (per-seed
figures and their mean), then the paired difference of each setting to the
first one (mean over seeds ± its standard error).

``--diagnose`` also reports, per corpus-frequency band of the centre word, the
norm of the generator's centre vectors and the entropy of its proposal over one
candidate set of ``n_candidates`` noise draws (uniform proposal: log 128 = 4.85
nats); a collapsed generator has entropy near 0.

Run::

    .venv/bin/python benchmarks/bench_words_settings.py --seeds 0 1 2 \\
        --settings '{"adversarial": false}' '{"noise_mixture": 0.5, "adversarial_warmup": 0}' '{}'
    .venv/bin/python benchmarks/bench_words_settings.py --seeds 0 --diagnose \\
        --settings '{"noise_mixture": 0.5, "adversarial_warmup": 0}'
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch
from _common import Timer, report
from bench_words import COMMON, corpus, evaluate

from sknce import ACEWord2Vec

METRICS = ("ws353", "ws353_rare", "simlex_rare", "simlex")
BANDS = ((5, 10), (10, 50), (50, 200), (200, 1000), (1000, None))


def generator_diagnostic(model: ACEWord2Vec) -> list[dict]:
    """Centre-vector norm and proposal entropy of the generator, per frequency band."""
    generator = model.net_.module_.generator
    counts = model.counts_
    draw = torch.Generator().manual_seed(0)
    candidates = model.noise_.sample((model.n_candidates,), generator=draw)
    with torch.no_grad():
        # The proposal over a candidate set: G's logits importance-weighted by 1 / p_N.
        logits = generator.logits(torch.arange(len(counts)), candidates)
        log_q = torch.log_softmax(logits - model.noise_.log_prob(candidates), dim=1)
        entropy = -(log_q.exp() * log_q).sum(1).numpy()
        # generator_centre="discriminator" reads the discriminator's input vectors.
        shared = model.generator_centre == "discriminator"
        centre = (model.net_.module_.discriminator if shared else generator).input_embeddings
        norms = centre.weight.norm(dim=1).numpy()
    rows = []
    for low, high in BANDS:
        band = (counts >= low) & (counts < (high or np.inf))
        rows.append(
            {
                "count band": f"[{low}, {high or 'inf'})",
                "words": int(band.sum()),
                "|g_t| mean": float(norms[band].mean()),
                "proposal entropy (nats)": float(entropy[band].mean()),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=['{"adversarial": false}', "{}"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--diagnose", action="store_true")
    parser.add_argument("--name", default="words_settings")
    args = parser.parse_args()
    torch.set_num_threads(1)
    docs = corpus()
    settings = [json.loads(s) for s in args.settings]
    scores = np.zeros((len(settings), len(args.seeds), len(METRICS)))
    rows, diagnostics = [], []
    for i, setting in enumerate(settings):
        seconds = []
        for j, seed in enumerate(args.seeds):
            with Timer() as t:
                model = ACEWord2Vec(random_state=seed, n_jobs=1, **COMMON, **setting).fit(docs)
            seconds.append(t.seconds)
            found = evaluate(model.wv_, dict(zip(model.wv_.words, model.counts_.tolist())))
            scores[i, j] = [found[m] for m in METRICS]
            print(json.dumps({"setting": setting, "seed": seed, **found}), flush=True)
            if args.diagnose and model.adversarial:
                for row in generator_diagnostic(model):
                    diagnostics.append({"setting": json.dumps(setting), "seed": seed, **row})
                    print(diagnostics[-1], flush=True)
        row = {"setting": json.dumps(setting), "fit s (mean)": float(np.mean(seconds))}
        for k, metric in enumerate(METRICS):
            per_seed = " / ".join(f"{v:.3f}" for v in scores[i, :, k])
            row[metric] = f"{per_seed} = {scores[i, :, k].mean():.3f}"
        if i:
            diff = scores[i] - scores[0]
            err = (
                diff.std(axis=0, ddof=1) / np.sqrt(len(args.seeds))
                if len(args.seeds) > 1
                else 0 * diff[0]
            )
            row["minus first: ws353_rare, simlex_rare"] = (
                f"{diff[:, 1].mean():+.3f} ± {err[1]:.3f}, {diff[:, 2].mean():+.3f} ± {err[2]:.3f}"
            )
        rows.append(row)
    report(
        args.name,
        rows,
        title="ACEWord2Vec settings on the Wikipedia excerpt: Spearman per seed = mean "
        "(1 kernel thread; 'minus first': paired difference to the first setting ± s.e.)",
        params={**vars(args), "common": COMMON},
    )
    if diagnostics:
        report(f"{args.name}_generator", diagnostics, title="Generator diagnostic per band")


if __name__ == "__main__":
    main()
