#!/usr/bin/env python3
"""Write the files that start open-p4studio's Tofino model and bf_switchd on a
make build-tna variant (docs/tofino-model.md):

  build/tna/<variant>/mmaqm_<variant>.conf   bf_switchd --conf-file and tofino-model -c
                                             (absolute paths to the build's files)
  build/tna/tofino-model-ports.json          tofino-model -f: dev ports 1..4 on the
                                             veth pairs that run_ptf.py --target tna uses
  build/tna/<variant>/bf_switchd.device_config  the pipeline for bf_switchd's P4Runtime
                                             server (mmaqm-ctl install --device-config)

Exit 0 when written; 2 when the variant is unknown or has no compiled build.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "ptf-tests" / "tests"))
import mmaqm_profiles  # noqa: E402
import mmaqm_tofino as tofino  # noqa: E402
from mmaqm.targets import tna  # noqa: E402

VARIANTS = tuple(sorted(p.lower() for p in mmaqm_profiles.TESTS))   # make build-tna's


def conf_path(repo: Path, variant: str) -> Path:
    return tofino.build_dir(repo, variant) / f"{tofino.program_name(variant)}.conf"


def ports_path(repo: Path) -> Path:
    return repo / "build" / "tna" / "tofino-model-ports.json"


def write_files(repo: Path, variant: str) -> tuple[Path, Path, Path]:
    """(conf, ports.json, device config) of a compiled variant; FileNotFoundError
    without its build."""
    build = tofino.build_dir(repo, variant)
    missing = [p for p in (build / "bfrt.json", build / tofino.PIPE_NAME / "context.json",
                           build / tofino.PIPE_NAME / "tofino.bin") if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{build}: no {', '.join(p.name for p in missing)}; run "
                                f"'make build-tna TNA_VARIANTS={variant.upper()}'")
    conf, ports = conf_path(repo, variant), ports_path(repo)
    device_config = build / tofino.DEVICE_CONFIG_FILE
    device_config.write_bytes(tna.pi_device_config(build, tofino.program_name(variant)))
    conf.write_text(json.dumps(tofino.switchd_conf(build, variant), indent=2) + "\n")
    ports.write_text(json.dumps(tofino.ports_json(), indent=2) + "\n")
    return conf, ports, device_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", type=str.lower, choices=VARIANTS,
                        help="the make build-tna variant (its directory under build/tna)")
    args = parser.parse_args(argv)
    try:
        written = write_files(REPO, args.variant)
    except FileNotFoundError as err:
        print(f"tofino_model_files: {err}", file=sys.stderr)
        return 2
    print("\n".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
