#!/usr/bin/env python3
"""Compile the per-algorithm BMv2 profiles of p4src/v1model/main.p4.

A profile is main.p4 compiled with -DMMAQM_PROFILE_<NAME> (p4src/v1model/profile.p4):
only that algorithm's control and port_policy action, with the shared pipeline.
The names are the Tofino build's (tools/build-tna.sh). Each profile's P4Info must
equal its golden copy p4src/v1model/profiles/<name>.p4info.txtpb.

  tools/build_profiles.py                   every profile -> build/<name>/main.json
  tools/build_profiles.py --profile RED     one (repeatable)
  tools/build_profiles.py --accept          write the golden P4Infos instead of checking

Warning-free like the all-in-one build, except p4c's `unused` class: the shared
defines.p4 holds every algorithm's constants and a profile uses only its own
(tools/build-tna.sh passes the same flag).
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAIN = REPO / "p4src" / "v1model" / "main.p4"
GOLDEN_DIR = REPO / "p4src" / "v1model" / "profiles"
# The Tofino build's names and order (tools/build-tna.sh VARIANTS).
PROFILES = ("DROP_TAIL", "RED", "CBT_RED_ALL", "CBT_RED_TCP_ONLY", "DCBT", "DCBT_CHIPS",
            "MCDT", "FRED", "UPTA")
P4C_FLAGS = ("--arch", "v1model", "--std", "p4-16")


def golden_path(profile: str) -> Path:
    return GOLDEN_DIR / f"{profile.lower()}.p4info.txtpb"


def out_dir(build: Path, profile: str) -> Path:
    return build / profile.lower()


@dataclass
class Result:
    profile: str
    json: Path
    p4info: Path
    log: str
    returncode: int

    @property
    def warnings(self) -> list[str]:
        return [line for line in self.log.splitlines() if "warning" in line.lower()]


def compile_profile(profile: str, build: Path) -> Result:
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    d = out_dir(build, profile)
    d.mkdir(parents=True, exist_ok=True)
    json_path, p4info = d / "main.json", d / "main.p4info.txtpb"
    r = subprocess.run(["p4c-bm2-ss", *P4C_FLAGS, f"-DMMAQM_PROFILE_{profile}",
                        "-o", str(json_path), "--p4runtime-files", str(p4info), str(MAIN)],
                       capture_output=True, text=True, cwd=REPO)
    return Result(profile, json_path, p4info, (r.stdout + r.stderr).strip(), r.returncode)


def golden_diff(result: Result) -> str:
    """'' when the profile's P4Info equals its golden copy, else a unified diff."""
    golden = golden_path(result.profile)
    if not golden.exists():
        return f"no golden P4Info {golden.relative_to(REPO)}"
    a, b = golden.read_text(), result.p4info.read_text()
    if a == b:
        return ""
    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True),
                                        str(golden.relative_to(REPO)), str(result.p4info)))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", action="append", help="one of " + ", ".join(PROFILES))
    p.add_argument("--build-dir", type=Path, default=REPO / "build")
    p.add_argument("--accept", action="store_true",
                   help="copy each compiled P4Info over its golden file")
    args = p.parse_args()
    profiles = [x.upper() for x in (args.profile or PROFILES)]
    unknown = [x for x in profiles if x not in PROFILES]
    if unknown:
        p.error(f"unknown profile(s) {unknown}; known: {', '.join(PROFILES)}")
    fail = 0
    for profile in profiles:
        r = compile_profile(profile, args.build_dir)
        if r.returncode != 0 or r.warnings:
            print(r.log, file=sys.stderr)
            why = "failed" if r.returncode else "warned (the build must be warning-free)"
            print(f"mmaqm: profile {profile}: p4c {why}", file=sys.stderr)
            r.json.unlink(missing_ok=True)
            fail = 1
            continue
        if args.accept:
            GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(r.p4info, golden_path(profile))
            print(f"accepted {golden_path(profile).relative_to(REPO)}")
        else:
            diff = golden_diff(r)
            if diff:
                print("\n".join(diff.splitlines()[:40]), file=sys.stderr)
                print(f"mmaqm: profile {profile}: the P4Info differs from "
                      f"{golden_path(profile).relative_to(REPO)}; review, then "
                      f"'make golden-p4info PROFILE={profile}'", file=sys.stderr)
                r.json.unlink(missing_ok=True)
                fail = 1
                continue
        stats = subprocess.run([sys.executable, "-m", "mmaqm_exp.pipeline_stats", str(r.json)],
                               capture_output=True, text=True)
        print(f"profile {profile}: " + (stats.stdout.strip() or str(r.json)))
    return fail


if __name__ == "__main__":
    sys.exit(main())
