"""Random streams of a fit: explicit generators, never torch's process-wide one.

Every random draw sknce makes while fitting or scoring comes from a generator
derived from the fit's seed and a named stream (numpy's ``SeedSequence`` with
the stream's key as extra entropy): shuffling and negatives of training epoch
``e`` from ``("train", e)``, the validation pairs from ``("valid",)``, the pairs
of :meth:`score` from ``("score",)``. So two fits with the same ``random_state``
draw the same numbers whatever runs beside them in other threads, and a fit
resumed from a checkpoint at epoch ``e`` draws what the uninterrupted fit drew.

Only the construction of a torch module uses torch's global generator (its
layers initialise themselves from it): :func:`seeded_init` forks and seeds it
under a process-wide lock, so concurrent constructions cannot interleave.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import numpy as np
import torch
from sklearn.utils import check_random_state

__all__ = ["Seeds", "seeded_init", "torch_generator"]

#: Keys of the named streams (SeedSequence entropy must be integers).
_STREAMS = {"init": 0, "split": 1, "train": 2, "valid": 3, "score": 4, "prepare": 5}

_SEED_HIGH = np.iinfo(np.int32).max

# Module construction is the one place torch's global generator is used.
_INIT_LOCK = threading.Lock()


class Seeds:
    """The named random streams of one fit.

    Parameters
    ----------
    seed : int
        The fit's seed (drawn once from ``random_state``).
    """

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)

    @classmethod
    def from_random_state(cls, random_state) -> Seeds:
        """Draw a fit's seed from an int, a ``RandomState`` or ``None``."""
        return cls(check_random_state(random_state).randint(_SEED_HIGH))

    def _sequence(self, stream: str, index: tuple[int, ...]) -> np.random.SeedSequence:
        return np.random.SeedSequence([self.seed, _STREAMS[stream], *index])

    def numpy(self, stream: str, *index: int) -> np.random.Generator:
        """A numpy Generator of ``stream`` (and, e.g., an epoch number)."""
        return np.random.default_rng(self._sequence(stream, index))

    def int(self, stream: str, *index: int) -> int:
        """A non-negative 31-bit integer seed of ``stream``."""
        return int(self._sequence(stream, index).generate_state(1)[0] >> 1)


def torch_generator(rng: np.random.Generator, device: str | torch.device = "cpu"):
    """A torch Generator on ``device`` seeded from the numpy Generator ``rng``.

    Samplers draw index arrays with numpy and noise with torch (on the noise's
    device); both come from one stream this way.
    """
    return torch.Generator(device).manual_seed(int(rng.integers(2**62)))


@contextlib.contextmanager
def seeded_init(seeds: Seeds, device: str = "cpu") -> Iterator[None]:
    """Construct torch modules reproducibly: the global generator forked and seeded.

    Hold no other lock inside: the block must only build modules.
    """
    devices = [torch.device(device).index or 0] if str(device).startswith("cuda") else []
    with _INIT_LOCK, torch.random.fork_rng(devices=devices):
        torch.manual_seed(seeds.int("init"))
        yield
