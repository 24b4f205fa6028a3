"""Random streams of a fit: explicit generators, never torch's process-wide one.

Every random draw sknce makes while fitting or scoring comes from a generator
derived from the fit's seed and a named stream (numpy's ``SeedSequence`` with
the stream's key as extra entropy): shuffling and negatives of training epoch
``e`` from ``("train", e)``, the validation pairs from ``("valid",)``, the pairs
of :meth:`score` from ``("score",)``, the points an early-stopping monitor
scores from ``("monitor",)``. So two fits with the same ``random_state``
draw the same numbers whatever runs beside them in other threads, and a fit
resumed from a checkpoint at epoch ``e`` draws what the uninterrupted fit drew.

The construction of torch modules draws from the ``("init",)`` stream too: torch's
layers initialise themselves from the process-wide generator unless a call names
a generator, so :func:`seeded_init` hands the fit's own generator to every random
call made while the modules are built (a :class:`~torch.overrides.TorchFunctionMode`,
which is active in the building thread only). The weights are torch's defaults,
drawn from a generator seeded as ``torch.manual_seed`` would seed the global one,
and torch's global generator is neither read nor advanced: a thread drawing from it
during a fit changes nothing in the fit, and the fit changes nothing in its draws.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch
from sklearn.utils import check_random_state
from torch.overrides import TorchFunctionMode

__all__ = ["Seeds", "seeded_init", "torch_generator"]

#: Keys of the named streams (SeedSequence entropy must be integers).
_STREAMS = {
    "init": 0,
    "split": 1,
    "train": 2,
    "valid": 3,
    "score": 4,
    "prepare": 5,
    "monitor": 6,
}

_SEED_HIGH = np.iinfo(np.int32).max

#: torch's random functions that take a ``generator``: the functions and the tensor
#: methods (in place or not) that draw numbers.
_RANDOM_FUNCTIONS = frozenset(
    [
        *(
            getattr(torch, name)
            for name in (
                "rand",
                "randn",
                "randint",
                "randperm",
                "rand_like",
                "randn_like",
                "randint_like",
                "normal",
                "bernoulli",
                "multinomial",
                "poisson",
            )
        ),
        *(
            getattr(torch.Tensor, name)
            for name in (
                "uniform_",
                "normal_",
                "bernoulli_",
                "bernoulli",
                "random_",
                "exponential_",
                "geometric_",
                "log_normal_",
                "cauchy_",
                "multinomial",
            )
        ),
    ]
)


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


class _OwnGenerator(TorchFunctionMode):
    """Give every random torch call that names no generator one seeded from ``seed``.

    A call names none when it passes no ``generator`` or ``generator=None`` (as
    ``torch.nn.init`` does by default). One generator per device, created at its
    first use, each seeded with ``seed``.
    """

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed
        self.generators: dict[torch.device, torch.Generator] = {}

    def _generator(self, device) -> torch.Generator:
        device = torch.device(device if device is not None else "cpu")
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if device not in self.generators:
            self.generators[device] = torch.Generator(device).manual_seed(self.seed)
        return self.generators[device]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        named = "generator" in kwargs and kwargs["generator"] is not None
        if not named and ("generator" in kwargs or func in _RANDOM_FUNCTIONS):
            tensor = args[0] if args and isinstance(args[0], torch.Tensor) else None
            device = kwargs.get("device", tensor.device if tensor is not None else None)
            kwargs["generator"] = self._generator(device)
        return func(*args, **kwargs)


@contextlib.contextmanager
def seeded_init(seeds: Seeds) -> Iterator[None]:
    """Construct torch modules reproducibly, from the fit's ``"init"`` stream.

    Every random torch call made in the block by this thread (layers initialising
    themselves, a user's encoder class built inside it) draws from a generator
    seeded with ``seeds.int("init")``, not from torch's global generator. Only the
    draws of code that bypasses torch's Python API (a C++ extension drawing from
    the default generator) are not redirected.

    Parameters
    ----------
    seeds : Seeds
        The fit's streams.
    """
    with _OwnGenerator(seeds.int("init")):
        yield
