"""Nested parameters of the ``callbacks`` parameter, routed as skorch routes them.

skorch names each callback (a ``(name, callback)`` pair, or the class name of a
bare callback) and exposes its parameters as ``callbacks__<name>__<param>``, so
that ``set_params`` and :class:`~sklearn.model_selection.GridSearchCV` can tune,
say, a learning-rate scheduler's ``step_size``. An sknce estimator holds its
callbacks as a plain parameter (a list), which scikit-learn's ``set_params``
cannot descend into: these functions do it.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["callback_params", "named_callbacks", "set_callback_params"]

_PREFIX = "callbacks__"


def named_callbacks(callbacks) -> list[tuple[str, object]]:
    """``(name, callback)`` for each of ``callbacks``: its given name, or its class name.

    Two bare callbacks of one class are named ``Class_1``, ``Class_2`` (as skorch does).

    Parameters
    ----------
    callbacks : list or None
        Callbacks and ``(name, callback)`` pairs.

    Returns
    -------
    list of (str, callback)
    """
    if not isinstance(callbacks, (list, tuple)):
        return []  # not a valid value: fit names the problem, set_params must not raise
    pairs = [item if _named(item) else (type(item).__name__, item) for item in callbacks]
    counts = Counter(name for name, _ in pairs)
    seen: Counter = Counter()
    named = []
    for name, callback in pairs:
        if counts[name] > 1:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        named.append((name, callback))
    return named


def _named(item) -> bool:
    return isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)


def callback_params(callbacks) -> dict:
    """``callbacks__<name>`` and ``callbacks__<name>__<param>`` of every callback.

    Parameters
    ----------
    callbacks : list or None

    Returns
    -------
    dict
    """
    params = {}
    for name, callback in named_callbacks(callbacks):
        params[_PREFIX + name] = callback
        if hasattr(callback, "get_params"):
            for key, value in callback.get_params().items():
                params[f"{_PREFIX}{name}__{key}"] = value
    return params


def set_callback_params(callbacks, params: dict) -> list | None:
    """Apply ``callbacks__<name>[__<param>]`` settings; return the callbacks list.

    ``callbacks__<name>=new`` replaces callback ``name`` (in a new list, keeping its
    name); ``callbacks__<name>__<param>=value`` sets a parameter of it in place, as
    skorch does.

    Parameters
    ----------
    callbacks : list or None
        The estimator's ``callbacks``.
    params : dict
        Keys starting with ``callbacks__``.

    Returns
    -------
    list or None
        The callbacks, a new list when one was replaced.

    Raises
    ------
    ValueError
        Naming the callbacks there are when ``name`` is not one of them.
    """
    items = list(callbacks) if isinstance(callbacks, (list, tuple)) else []
    names = [name for name, _ in named_callbacks(items)]
    replaced = False
    # replacements first, so that parameters of this call reach the new callback
    for key in sorted(params, key=lambda k: k.count("__")):
        name, _, param = key[len(_PREFIX) :].partition("__")
        if name not in names:
            raise ValueError(
                f"Invalid parameter {key!r}: there is no callback named {name!r}; the "
                f"callbacks are {names or 'none'}. Name a callback by passing a "
                "(name, callback) pair in callbacks, or use its class name."
            )
        index = names.index(name)
        if not param:
            new = params[key]
            items[index] = (name, new) if _named(items[index]) else new
            replaced = True
            continue
        item = items[index]
        callback = item[1] if _named(item) else item
        callback.set_params(**{param: params[key]})
    if replaced or callbacks is None:
        return items if items or callbacks is not None else callbacks
    return callbacks
