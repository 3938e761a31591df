#!/usr/bin/env bash
# Compile p4src/tna/main.p4 for Tofino, one program per algorithm, and write
# the compiler's resource report (make build-tna; docs/tofino.md).
#   tools/build-tna.sh            compile every variant, then tools/tna_resources.py
#   tools/build-tna.sh --check    only report whether the Tofino compiler is present
#   tools/build-tna.sh --frontend type-check every variant with p4test (p4c's
#                                 front and mid end) against the TNA includes
# Exit 0 when every variant compiled (or, with --check, the compiler is present).
# The compiler is a by-hand prerequisite, never built here: the open-source
# Tofino back end of p4c (backends/tofino, p4c v1.2.5.16), which installs
# p4c-barefoot, bfas and the driver's tofino target (p4c --target tofino, also
# installed as bf-p4c by open-p4studio).
set -u
cd "$(dirname "$0")/.."

VARIANTS=${TNA_VARIANTS:-"DROP_TAIL RED CBT_RED_ALL CBT_RED_TCP_ONLY DCBT DCBT_CHIPS MCDT FRED UPTA"}
OUT=${TNA_BUILD_DIR:-build/tna}
MAIN=p4src/tna/main.p4
prefix=${P4_TOOLCHAIN_PREFIX:-}
[ -n "$prefix" ] && export PATH="$prefix/bin:$PATH"

# The TNA includes (tna.p4, tofino1_*.p4): installed with the compiler, or a p4c
# source tree's backends/tofino/bf-p4c/p4include (TNA_P4INCLUDE=...).
find_tna_include() {
  local d
  for d in ${TNA_P4INCLUDE:-} "${prefix:+$prefix/share/p4c/p4include}" \
           /usr/local/share/p4c/p4include /usr/share/p4c/p4include; do
    [ -n "$d" ] && [ -r "$d/tna.p4" ] && { echo "$d"; return 0; }
  done
  return 1
}

# The compiler driver: bf-p4c (open-p4studio), or p4c with p4c-barefoot beside it.
find_compiler() {
  if [ -n "${BF_P4C:-}" ]; then echo "$BF_P4C"; return 0; fi
  if command -v bf-p4c >/dev/null 2>&1; then command -v bf-p4c; return 0; fi
  if command -v p4c-barefoot >/dev/null 2>&1 && command -v p4c >/dev/null 2>&1; then
    command -v p4c; return 0
  fi
  return 1
}

how_to_get() {
  cat >&2 <<MSG
mmaqm: the Tofino compiler is not installed: need 'bf-p4c', or 'p4c-barefoot' (+ 'bfas')
  beside the 'p4c' driver (searched ${prefix:+\$P4_TOOLCHAIN_PREFIX/bin and }PATH; BF_P4C=/path overrides).
  It is the open-source Tofino back end of p4c, a by-hand prerequisite like the rest
  of the toolchain (no Debian or PyPI package ships it). Build p4c at the tested
  revision v1.2.5.16 with the back end enabled:
    cmake -DENABLE_TOFINO=ON -DENABLE_BMV2=ON .. && make && make install
  (or build open-p4studio's bf-p4c). Its build needs, beyond p4c's own:
    Z3 4.8.14 .. 4.11 (Debian 12 ships 4.8.12: build Z3 from source),
    spdlog, RapidJSON (libspdlog-dev, rapidjson-dev),
    Python packages jsonschema==2.6.0, jsl, pyinstaller, pyyaml.
  Expect hours on 2 cores. Meanwhile 'make check-tna' type-checks every variant
  with p4test (needs the TNA includes: TNA_P4INCLUDE=<p4c>/backends/tofino/bf-p4c/p4include).
MSG
}

mode=${1:-build}
case "$mode" in
  --check)
    if c=$(find_compiler); then
      v=$("$c" --version 2>&1 | head -n1)
      echo "ok: Tofino compiler $c (${v:-version unknown})"
      exit 0
    fi
    echo "note: Tofino compiler not installed (optional: make build-tna says how to get it)"
    exit 1
    ;;
  --frontend)
    if ! command -v p4test >/dev/null 2>&1; then
      echo "mmaqm: p4test (installed with p4c) not found" >&2; exit 1
    fi
    if ! inc=$(find_tna_include); then
      echo "mmaqm: no TNA includes (tna.p4) found; set TNA_P4INCLUDE=<p4c>/backends/tofino/bf-p4c/p4include" >&2
      exit 1
    fi
    fail=0
    for v in $VARIANTS; do
      # -Wdisable=unused: defines.p4 is shared, every build uses part of it.
      # uninitialized-out-param: metadata bf-p4c zero-initialises (@pa_auto_init_metadata).
      if log=$(p4test --std p4-16 -D__TARGET_TOFINO__=1 -DMMAQM_TNA_$v -I "$inc" \
                 --Wdisable=unused --Wdisable=uninitialized-out-param "$MAIN" 2>&1); then
        if [ -n "$log" ]; then echo "$log" >&2; echo "frontend $v: warnings" >&2; fail=1
        else echo "ok: frontend $v"; fi
      else
        echo "$log" | grep -m1 -E 'error' >&2; echo "FAIL: frontend $v" >&2; fail=1
      fi
    done
    exit $fail
    ;;
  build) ;;
  *) echo "usage: $0 [--check|--frontend]" >&2; exit 2 ;;
esac

if ! compiler=$(find_compiler); then
  how_to_get
  exit 1
fi
mkdir -p "$OUT"
fail=0
for v in $VARIANTS; do
  dir="$OUT/$(echo "$v" | tr 'A-Z' 'a-z')"
  rm -rf "$dir"; mkdir -p "$dir"
  # -g: resources.json and phv.json under <dir>/pipe/logs (tools/tna_resources.py).
  # --p4runtime-force-std-externs: counters, registers and the digest as standard
  # P4Runtime objects (bf-p4c's default puts TNA externs under P4Info 'externs',
  # which a standard P4Runtime client such as the controller's finsy cannot use).
  # the log sits beside the output directory: the compiler driver replaces that directory
  "$compiler" --target tofino --arch tna --std p4-16 -g -DMMAQM_TNA_$v \
      --p4runtime-force-std-externs -o "$dir" --p4runtime-files "$dir/p4info.txtpb" \
      "$MAIN" >"$dir.compile.log" 2>&1
  rc=$?
  # The p4c driver of v1.2.5.16 stops before the assembler with a Python error
  # ('PosixPath' object has no attribute 'find', in barefoot.py checkAndRunCmd)
  # after the compiler proper has written pipe/main.bfa: run the assembler here.
  if [ $rc -ne 0 ] && grep -q "'PosixPath' object has no attribute 'find'" "$dir.compile.log" \
       && [ -s "$dir/pipe/main.bfa" ]; then
    bfas=$(command -v bfas || echo "$(dirname "$compiler")/bfas")
    echo "(driver stopped before the assembler: running $bfas)" >>"$dir.compile.log"
    "$bfas" -o "$dir/pipe" "$dir/pipe/main.bfa" >>"$dir.compile.log" 2>&1
    rc=$?
  fi
  # A program that fits gives the Tofino binary; the assembler rejects one that
  # needs more than the 12 stages ("tofino supports up to 12 stages, using N").
  if [ $rc -eq 0 ] && [ -s "$dir/pipe/tofino.bin" ]; then
    echo "ok: $v compiled ($dir)"
  else
    why=$(grep -m1 -E 'supports up to [0-9]+ stages' "$dir.compile.log" \
          || grep -m1 -E 'error' "$dir.compile.log")
    echo "FAIL: $v does not compile for Tofino: $why (log: $dir.compile.log)" >&2
    fail=1
  fi
done
python3 tools/tna_resources.py --write "$OUT" || fail=1
exit $fail
