"""mmaqm control plane: configuration, fixed-point reference model, flow counting, driver.

Submodules are imported on demand; importing the package loads nothing else
(p4constants parses defines.p4 when first imported).
"""

__version__ = "0.1.0"
