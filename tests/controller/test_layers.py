"""Layering: the product (the mmaqm package, control-plane/mmaqm) never imports the
test oracle (mmaqm_oracle, oracle/). The oracle models the product's encodings and
imports it; the other direction would ship the reference models in the product.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mmaqm

REPO_ROOT = Path(__file__).resolve().parents[2]
PRODUCT = REPO_ROOT / "control-plane" / "mmaqm"
ORACLE = "mmaqm_oracle"


def imported_modules(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, module) of every import in the file (or in source, read as that file), at
    any depth (function-local and TYPE_CHECKING imports included); relative imports
    resolved against the package; __import__ / import_module with a literal name."""
    package = ".".join(path.relative_to(PRODUCT.parent).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    out: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((node.lineno, module))
            out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and (getattr(node.func, "id", None) == "__import__"
                                             or getattr(node.func, "attr", None) == "import_module"):
            out += [(node.lineno, arg.value) for arg in node.args
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    return out


def product_files() -> list[Path]:
    return sorted(PRODUCT.rglob("*.py"))


def test_the_product_is_the_package_under_test() -> None:
    assert Path(mmaqm.__file__).resolve().parent == PRODUCT.resolve()
    assert len(product_files()) > 10


def test_the_product_never_imports_the_oracle() -> None:
    offending = [f"{path.relative_to(REPO_ROOT)}:{line}: imports {module}"
                 for path in product_files()
                 for line, module in imported_modules(path)
                 if module == ORACLE or module.startswith(ORACLE + ".")]
    assert not offending, "the product imports the test oracle:\n" + "\n".join(offending)


def test_the_check_sees_imports() -> None:
    """The parser finds plain, from, relative, local and dynamic imports."""
    src = ("import os\nfrom mmaqm_oracle import fixedpoint_model\n"
           "def f():\n    import mmaqm_oracle.upta_model as m\n"
           "    return __import__('mmaqm_oracle')\n"
           "from . import p4constants\nfrom ..fixedpoint import check_int\n")
    modules = {m for _, m in imported_modules(PRODUCT / "algorithms" / "x.py", src)}
    assert {"os", "mmaqm_oracle", "mmaqm_oracle.fixedpoint_model", "mmaqm_oracle.upta_model",
            "mmaqm.algorithms.p4constants", "mmaqm.fixedpoint"} <= modules
