"""The linear kernel's CPU time per batch with and without the rival term, interleaved.

One batch of 2,048 unit rows of 32 entries over 30,439 features and 1,500 classes (the
article task's shape at 1,500 classes), ``sgd_linear_softmax`` at ``rival`` 0 and 0.03 in
turn, five times; prints the CPU seconds of each call and the load. Under the lock::

    flock /tmp/sknce-bench.lock env PYTHONPATH=$PWD .venv/bin/python \\
      benchmarks/time_rival_kernel.py
"""

import json
import os
import platform
import time

import numpy as np
import scipy.sparse as sp
import torch

from sknce.conditional._kernels import sgd_linear_softmax

N_FEATURES, N_CLASSES, N_ROWS, DAMPING = 30_439, 1_500, 2_048, 6_000.0


def main() -> None:
    rng = np.random.default_rng(0)
    X = sp.random(N_ROWS, N_FEATURES, density=32 / N_FEATURES, format="csr", random_state=0)
    X = X.astype(np.float32)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(1)).ravel()).clip(1e-6)
    X.data /= norms.repeat(np.diff(X.indptr)).astype(np.float32)
    labels = rng.integers(0, N_CLASSES, N_ROWS)
    weight = np.zeros((N_FEATURES, N_CLASSES), np.float32)
    bias = np.full(N_CLASSES, -np.log(N_CLASSES), np.float32)
    sums = (np.zeros(N_FEATURES, np.float32), np.zeros(1, np.float32))
    batch = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, labels)
    rest = (np.empty(0, np.float32), 0, N_ROWS, 9.0 * DAMPING, 9.0, DAMPING)

    def step(rival: float) -> float:
        start = time.process_time()
        sgd_linear_softmax(weight, bias, *sums, *batch, *rest, rival)
        return time.process_time() - start

    step(0.0), step(0.03)  # compile
    load = os.getloadavg()
    times: dict = {0.0: [], 0.03: []}
    for _ in range(5):
        for rival in times:
            times[rival].append(step(rival))
    print(
        json.dumps(
            {
                "machine": platform.platform(),
                "torch": torch.__version__,
                "load": [load, os.getloadavg()],
                "cpu_s": {str(k): [round(x, 4) for x in v] for k, v in times.items()},
                "median": {str(k): round(float(np.median(v)), 4) for k, v in times.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
