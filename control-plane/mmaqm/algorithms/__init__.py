"""The algorithm plug-ins and their registry.

Each algorithm is one plug-in (``base.Algorithm``) in its own module: its name,
its P4 action of the table ``port_policy`` (aqm.p4), its parameters, their
validation, the action's encoding and what the controller runs for it. Nothing
outside this package names an algorithm: code asks ``get(name)`` for the plug-in
and uses what it declares. The driver checks at connect time that the switch's
P4Info has each plug-in's action with the parameters the encoding sends.

Adding an algorithm: its P4 control(s) and dispatch entry, a module here with
one ``Algorithm`` subclass, its entry in ``REGISTRY`` below, its tests and its
doc page.
"""

from __future__ import annotations

from . import cbt, chips, dcbt, droptail, fred, mcdt, red, upta
from .base import (DEFAULT_QUEUE_LIMIT_PKTS, MAX_QUEUE_LIMIT_PKTS, MIN_LOOP_INTERVAL_MS,
                   REQUIRED, Algorithm, Param, PortInputs, PortPolicy, Settings)

# In the order of the documentation and of the status table.
REGISTRY: dict[str, Algorithm] = {plugin.name: plugin for plugin in (
    droptail.PLUGIN, red.PLUGIN, cbt.RED_ALL, cbt.RED_TCP_ONLY, dcbt.PLUGIN, chips.PLUGIN,
    mcdt.PLUGIN, fred.PLUGIN, upta.PLUGIN)}
# config name -> P4 action of table port_policy
ALGORITHMS: dict[str, str] = {name: plugin.p4_action for name, plugin in REGISTRY.items()}
ALGORITHM_OF_ACTION: dict[str, str] = {action: name for name, action in ALGORITHMS.items()}


def get(name: str) -> Algorithm:
    """The plug-in of an algorithm name; KeyError naming the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}; known: {', '.join(REGISTRY)}") from None


def of_action(action: str) -> Algorithm:
    """The plug-in whose port_policy action is ``action``."""
    return REGISTRY[ALGORITHM_OF_ACTION[action]]


def all_keys() -> tuple[str, ...]:
    """Every policy key of every plug-in, in first-use order."""
    seen: dict[str, None] = {}
    for plugin in REGISTRY.values():
        seen.update(dict.fromkeys(plugin.keys))
    return tuple(seen)


def users_of(key: str) -> tuple[str, ...]:
    """The algorithms that take a policy key."""
    return tuple(name for name, plugin in REGISTRY.items() if key in plugin.keys)


__all__ = ["ALGORITHMS", "ALGORITHM_OF_ACTION", "DEFAULT_QUEUE_LIMIT_PKTS", "MAX_QUEUE_LIMIT_PKTS",
           "MIN_LOOP_INTERVAL_MS", "REGISTRY", "REQUIRED", "Algorithm", "Param", "PortInputs",
           "PortPolicy", "Settings", "all_keys", "cbt", "chips", "dcbt", "droptail", "fred",
           "get", "mcdt", "of_action", "red", "upta", "users_of"]
