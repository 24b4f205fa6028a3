"""Noise samplers: draws per second vs the number of categories.

sknce's alias-method sampler (``sknce.noise.UnigramNoise``) against
``torch.multinomial`` (with replacement) and ``numpy.random.Generator.choice``
with ``p=``, for 10^3 ... 10^6 categories of Zipf-distributed counts. Each
call draws a (batch, K) block of negatives, as an estimator does per step.

Run::

    .venv/bin/python benchmarks/bench_noise.py [--draws 262144] [--repeats 5]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _common import Timer, report

from sknce.noise import UnigramNoise


def best_rate(fn, draws: int, repeats: int) -> float:
    fn()  # warm-up
    best = np.inf
    for _ in range(repeats):
        with Timer() as t:
            fn()
        best = min(best, t.seconds)
    return draws / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=4096 * 64, help="draws per call")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    shape = (args.draws // 64, 64)
    rows = []
    for n in (10**3, 10**4, 10**5, 10**6):
        counts = np.random.default_rng(0).zipf(1.3, size=n).astype(np.float64)
        with Timer() as build:
            noise = UnigramNoise(counts, ns_exponent=0.75)
        gen = torch.Generator().manual_seed(0)
        probs_t = torch.as_tensor(noise.probs, dtype=torch.float32)
        rng = np.random.default_rng(0)
        # Default arguments bind this iteration's objects (closures would see the last ones).
        samplers = {
            "sknce_alias": lambda noise=noise, gen=gen: noise.sample(shape, gen),
            "torch_multinomial": lambda p=probs_t, gen=gen: torch.multinomial(
                p, args.draws, replacement=True, generator=gen
            ),
            "numpy_choice": lambda n=n, rng=rng, p=noise.probs: rng.choice(n, size=shape, p=p),
        }
        rates = {k: best_rate(f, args.draws, args.repeats) for k, f in samplers.items()}
        rows.append(
            {
                "categories": n,
                "alias_Mdraws_per_s": rates["sknce_alias"] / 1e6,
                "torch_multinomial_Mdraws_per_s": rates["torch_multinomial"] / 1e6,
                "numpy_choice_Mdraws_per_s": rates["numpy_choice"] / 1e6,
                "alias_speedup_vs_multinomial": rates["sknce_alias"] / rates["torch_multinomial"],
                "alias_table_build_s": build.seconds,
            }
        )
    report(
        "noise_samplers",
        rows,
        title=f"Noise samplers, {args.draws} draws per call (1 torch thread), best of "
        f"{args.repeats}",
        params=vars(args),
    )


if __name__ == "__main__":
    main()
