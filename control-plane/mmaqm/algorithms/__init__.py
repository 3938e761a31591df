"""Per-algorithm arithmetic (pure functions, no switch): configuration -> action parameters.

One module per algorithm; each cites its paper section.
"""

from . import cbt, dcbt, red

__all__ = ["cbt", "dcbt", "red"]
