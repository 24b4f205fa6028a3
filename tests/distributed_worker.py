"""One process of the 2-process test (tests/test_distributed.py), run by torchrun.

Every process fits the same estimators (one per entry of the test registry,
tests/_registry.py, on its kind of data, and a streamed fit) with one
``accelerate.Accelerator`` (gloo on the CPU), then writes what it ended with
(weights, history) to ``OUT/<name>-<rank>.pkl``; process 0 also pickles the
fitted estimators (``OUT/<name>.estimator.pkl``). The cases are built here so
that the test fits the single-process reference on the same data and settings. Then every
process runs the user guide's ``train.py`` (docs/user_guide/scaling.rst) and
writes what it printed to ``OUT/guide-<rank>.txt``.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

#: Examples of every fit.
N_SAMPLES = 600
#: Settings of every fit whose estimator takes them (the registry's own come after).
SMALL = dict(hidden_layer_sizes=(16,), batch_size=32, random_state=0)
#: The estimator also fitted on a stream of chunks (its registry entry's settings).
STREAMED = "DirectNCEEmbedder"


class Case(NamedTuple):
    """One fit: its name, the estimator's, a factory, the arguments of ``fit``, and the
    data its quality is measured on."""

    name: str
    estimator: str
    make: Callable
    data: tuple
    X: object
    y: object


def chunks(X, n_chunks: int = 4) -> list:
    """``X`` cut into ``n_chunks`` blocks of rows: a stream of chunks."""
    bounds = np.linspace(0, X.shape[0], n_chunks + 1).astype(int)
    return [X[lo:hi] for lo, hi in zip(bounds, bounds[1:])]


def cases() -> list[Case]:
    """A fit of every estimator of the registry on its kind of data, and a streamed fit."""
    from _registry import REGISTRY

    import sknce

    def factory(name):
        cls = getattr(sknce, name)
        accepted = cls().get_params()
        common = {key: value for key, value in SMALL.items() if key in accepted}
        settings = {**common, **REGISTRY[name].distributed}
        return lambda **kw: cls(**settings, **kw)

    found = []
    for name, entry in REGISTRY.items():
        X, y = entry.data.make(N_SAMPLES, 0)
        found.append(Case(name, name, factory(name), entry.args(X, y), X, y))
        if name == STREAMED:  # early stopping holds out the stream's last chunk
            stream = (chunks(X), *entry.args(X, y)[1:])
            found.append(Case(f"{name}-stream", name, factory(name), stream, X, y))
    return found


#: The user guide page whose multi-process script this launch also runs.
GUIDE = Path(__file__).resolve().parent.parent / "docs" / "user_guide" / "scaling.rst"


def guide_script() -> str:
    """The guide's ``train.py``: its code block that starts with ``# train.py``."""
    from test_docs_guides import _python_blocks

    return next(b for b in _python_blocks(GUIDE.read_text()) if b.startswith("# train.py"))


def main(out: Path) -> None:
    import torch
    from accelerate import Accelerator

    torch.set_num_threads(1)
    accelerator = Accelerator(cpu=True)
    rank = accelerator.process_index
    for name, _, make, data, _, _ in cases():
        estimator = make(accelerator=accelerator).fit(*data)
        state = {
            "n_processes": accelerator.num_processes,
            "weights": [p.detach().numpy().copy() for p in estimator.net_.module_.parameters()],
            "history": estimator.history_,
            "batches": [row["batches"] for row in estimator.net_.history],
        }
        (out / f"{name}-{rank}.pkl").write_bytes(pickle.dumps(state))
        if accelerator.is_main_process:
            (out / f"{name}.estimator.pkl").write_bytes(pickle.dumps(estimator))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(guide_script(), str(GUIDE), "exec"), {"__name__": "__main__"})
    (out / f"guide-{rank}.txt").write_text(printed.getvalue())
    # A process group left alive at exit can abort it (gloo's threads outlive Python);
    # the guide's script ends it, and this ends it whatever the script does.
    accelerator.end_training()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
