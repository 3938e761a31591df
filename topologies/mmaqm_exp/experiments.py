"""Named experiments (topologies/experiments.yaml): `mmaqm-exp --experiment NAME`.

    reg = load_registry()                 # validated; errors name their field
    exp = reg.get("cbt-fig4")             # unknown name: RegistryError listing the known ones
    exp.topology, exp.scenario, exp.policies, exp.algorithms, exp.duration_s

An entry names a topology, a scenario and a policies file (relative to the
repository root), the algorithms in run order and optionally ``duration_s``
(the scenario scaled to it). ``default`` names the entry mmaqm-exp runs without
--experiment. Unknown keys are errors, as in every other input file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import yaml

from mmaqm import validation as V

REPO = Path(__file__).resolve().parents[2]
REGISTRY_PATH = REPO / "topologies" / "experiments.yaml"
TOP_KEYS = ("default", "experiments")
ENTRY_KEYS = ("description", "topology", "scenario", "policies", "algorithms", "duration_s",
              "paper_tagged_loss_pct")


class RegistryError(ValueError):
    """The registry is invalid, or a name is not in it."""


@dataclass(frozen=True)
class Experiment:
    name: str
    topology: Path
    scenario: Path
    policies: Path
    algorithms: tuple[str, ...]
    duration_s: Optional[float] = None       #: None: the scenario's own length
    description: str = ""
    #: the paper's tagged-class loss per algorithm (percent), for paper_table.txt
    paper_tagged_loss_pct: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Registry:
    default: str
    experiments: Mapping[str, Experiment]
    source: str = ""

    def names(self) -> list[str]:
        return list(self.experiments)

    def get(self, name: str) -> Experiment:
        if name not in self.experiments:
            raise RegistryError(f"unknown experiment {name!r}; known: {', '.join(self.names())} "
                                f"({self.source})")
        return self.experiments[name]

    def help_text(self) -> str:
        """One line per experiment, the default marked (for --help)."""
        return "; ".join(f"{n}{' (default)' if n == self.default else ''}: {e.description}"
                         for n, e in self.experiments.items())


def _path(value: Any, path: str, errs: V.Errors, root: Path) -> Optional[Path]:
    text = V.string(value, path, errs, non_empty=True)
    return None if text is None else (root / text)


def _entry(name: str, raw: Any, errs: V.Errors, root: Path) -> Optional[Experiment]:
    path = V.join("experiments", name)
    e = V.mapping(raw, path, errs, allowed=ENTRY_KEYS)
    if e is None:
        return None
    files = {k: _path(V.require(e, k, path, errs, note="a path from the repository root"),
                      V.join(path, k), errs, root) for k in ("topology", "scenario", "policies")}
    algos: list[str] = []
    raw_algos = V.sequence(V.require(e, "algorithms", path, errs), V.join(path, "algorithms"),
                           errs, at_least_one="algorithm")
    for i, a in enumerate(raw_algos or []):
        s = V.string(a, V.index(V.join(path, "algorithms"), i), errs, non_empty=True)
        if s is not None:
            algos.append(s)
    dur = None
    if "duration_s" in e:
        dur = V.number(e["duration_s"], V.join(path, "duration_s"), errs, gt=0, note="seconds")
    desc = V.string(e.get("description", ""), V.join(path, "description"), errs) or ""
    ref: dict[str, float] = {}
    raw_ref = V.mapping(e.get("paper_tagged_loss_pct", {}), V.join(path, "paper_tagged_loss_pct"),
                        errs)
    for algo, pct in (raw_ref or {}).items():
        v = V.number(pct, V.join(V.join(path, "paper_tagged_loss_pct"), algo), errs, ge=0,
                     le=100, note="percent")
        if v is not None:
            ref[str(algo)] = float(v)
    if None in files.values() or not algos:
        return None
    return Experiment(name, files["topology"], files["scenario"], files["policies"],
                      tuple(algos), None if dur is None else float(dur), desc, ref)


def parse_registry(data: Any, *, source: str = "experiments", root: Path = REPO) -> Registry:
    """Validate a registry mapping; every error is reported at once (RegistryError)."""
    errs = V.Errors()
    top = V.mapping(data, "", errs, allowed=TOP_KEYS)
    entries: dict[str, Experiment] = {}
    default = ""
    if top is not None:
        raw = V.mapping(V.require(top, "experiments", "", errs), "experiments", errs,
                        at_least_one="experiment")
        for name, item in (raw or {}).items():
            exp = _entry(str(name), item, errs, root)
            if exp is not None:
                entries[str(name)] = exp
        default = V.string(V.require(top, "default", "", errs, note="an experiment name"),
                           "default", errs, non_empty=True) or ""
        if default and raw and default not in raw:
            errs.add("default", f"must name an experiment ({', '.join(map(str, raw))}), "
                                f"got {default!r}")
    if errs.items:
        raise RegistryError(f"{source}:\n  " + "\n  ".join(errs.items))
    return Registry(default, entries, source)


def load_registry(path: Union[str, Path] = REGISTRY_PATH, *, root: Path = REPO) -> Registry:
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise RegistryError(f"{p}: {err}") from None
    return parse_registry(data, source=str(p), root=root)
