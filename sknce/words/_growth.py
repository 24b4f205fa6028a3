"""Growing a fitted ACE network for new words, optimizer state included.

``partial_fit(..., update_vocabulary=True)`` appends rows to every embedding of
the discriminator and the generator; the optimizers are rebuilt for the new
parameters and their per-parameter state (e.g. Adam's moments) is carried over,
padded with zeros for the new rows.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sknce._random import torch_generator
from sknce.noise import CategoricalNoise

__all__ = ["carry_state", "grow_network"]

#: The optimizers of an ACENet, rebuilt when the vocabulary grows.
_OPTIMIZERS = ("optimizer_", "optimizer_miner_")


def grow_network(
    net, n_words: int, dim: int, init_width: float, noise: CategoricalNoise
) -> Callable[[], None]:
    """New rows for new words in every embedding of ``net``; return the function that undoes it.

    Input vectors of new words are drawn uniform in ``[-init_width / dim,
    init_width / dim]`` as at initialisation (the generator's in ``0.5 / dim``),
    from the fit's ``"prepare"`` stream keyed by the epochs trained; output vectors
    are zero. The optimizers are rebuilt with their state padded by zeros, and the
    net takes ``noise``.

    Parameters
    ----------
    net : ACENet
    n_words : int
        The grown vocabulary's size.
    dim : int
        Dimension of the vectors.
    init_width : float
        Half-width, times ``dim``, of the discriminator's input vectors' start.
    noise : CategoricalNoise
        The noise of the grown vocabulary.
    """
    module = net.module_
    generator = torch_generator(net.seeds.numpy("prepare", len(net.history)))
    # (embedding, half-width of its new rows' uniform start)
    embeddings = [(module.discriminator.input_embeddings, init_width / dim)]
    embeddings.append((module.discriminator.output_embeddings, 0.0))
    if module.generator is not None:
        if hasattr(module.generator, "input_embeddings"):
            embeddings.append((module.generator.input_embeddings, 0.5 / dim))
        embeddings.append((module.generator.output_embeddings, 0.0))
    old_weights = [embedding.weight for embedding, _ in embeddings]
    old_optimizers = {name: getattr(net, name) for name in _OPTIMIZERS if hasattr(net, name)}
    old_noise = net.noise
    renamed = {}
    for embedding, width in embeddings:
        weight = embedding.weight
        extra = torch.zeros(n_words - weight.shape[0], dim)
        if width:
            extra.uniform_(-width, width, generator=generator)
        grown = torch.cat([weight.detach(), extra.to(weight.device, weight.dtype)])
        embedding.weight = torch.nn.Parameter(grown, requires_grad=weight.requires_grad)
        embedding.num_embeddings = n_words
        renamed[weight] = embedding.weight
    net.initialize_optimizer()
    for name, old in old_optimizers.items():
        carry_state(old, getattr(net, name), renamed)
    net.set_noise(noise)

    def undo() -> None:
        for (embedding, _), weight in zip(embeddings, old_weights):
            embedding.weight = weight
            embedding.num_embeddings = weight.shape[0]
        for name, old in old_optimizers.items():
            setattr(net, name, old)
        net.set_noise(old_noise)

    return undo


def carry_state(old: torch.optim.Optimizer, new: torch.optim.Optimizer, renamed: dict) -> None:
    """Copy ``old``'s per-parameter state into ``new``, rows of grown parameters zero-padded.

    ``renamed`` maps each old parameter to the parameter that replaced it.
    """
    for param, state in old.state.items():
        target = renamed.get(param, param)
        carried = {}
        for key, value in state.items():
            if torch.is_tensor(value) and value.shape == param.shape != target.shape:
                pad = value.new_zeros((target.shape[0] - value.shape[0], *value.shape[1:]))
                value = torch.cat([value, pad])
            carried[key] = value
        new.state[target] = carried
