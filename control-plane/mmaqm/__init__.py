"""mmaqm control plane: configuration, one plug-in per algorithm (algorithms),
one module per data-plane target (targets), the P4Runtime driver, the controller
and its loops, and the mmaqm-ctl command (cli).

Submodules are imported on demand; importing the package loads nothing else and
reads no file (the P4 constants are generated into p4generated.py at build time).
"""

__version__ = "0.1.0"
