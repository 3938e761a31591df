#!/usr/bin/env bash
# Verify (never build or install) the P4 toolchain mmaqm needs:
#   p4c-bm2-ss >= 1.2.5, simple_switch_grpc (BMv2 with P4Runtime) >= 1.15.1,
#   simple_switch_CLI (Thrift CLI, for per-port queue rate and depth).
# Looks in $P4_TOOLCHAIN_PREFIX/bin first (if set), then on PATH.
# Exit status 0 when everything is usable, 1 otherwise, with a message that
# says what is missing and how to get it (README.md "Install").
set -u

MIN_P4C=1.2.5
MIN_BMV2=1.15.1
prefix=${P4_TOOLCHAIN_PREFIX:-}
[ -n "$prefix" ] && export PATH="$prefix/bin:$PATH"

fail=0
say_missing() { echo "mmaqm: $1" >&2; fail=1; }

how_to_get() {
  cat >&2 <<MSG
  The P4 toolchain is a prerequisite (no Debian or PyPI package ships it):
    p4c >= $MIN_P4C, BMv2 simple_switch_grpc >= $MIN_BMV2 built with PI (P4Runtime).
  Get it from the upstream p4lang packages (Ubuntu 20.04+/Debian 11:
  p4lang-p4c, p4lang-bmv2, p4lang-pi), the p4lang Docker images
  (p4lang/p4c, p4lang/behavioral-model), or build from source at the tested
  revisions: PI v0.1.2-8-gf96af95, BMv2 1.15.5 (./configure --with-pi --with-thrift),
  p4c v1.2.5.16. See README.md, section "Install".
  If it is installed under a prefix that is not on PATH, set
  P4_TOOLCHAIN_PREFIX=/that/prefix (binaries in \$P4_TOOLCHAIN_PREFIX/bin).
MSG
}

# version_ge A B: true when dotted version A >= B
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

check_libs() {  # a binary whose shared libraries are missing cannot run
  local missing
  missing=$(ldd "$1" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' ')
  if [ -n "$missing" ]; then
    say_missing "$1 cannot run: missing shared libraries: $missing"
    return 1
  fi
}

p4c=$(command -v p4c-bm2-ss || true)
if [ -z "$p4c" ]; then
  say_missing "p4c-bm2-ss not found"
elif check_libs "$p4c"; then
  v=$("$p4c" --version 2>&1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+(\.[0-9]+)?' | head -n1)
  if [ -z "$v" ] || ! version_ge "$v" "$MIN_P4C"; then
    say_missing "p4c-bm2-ss at $p4c is version '${v:-unknown}', need >= $MIN_P4C"
  else
    echo "ok: p4c-bm2-ss $v ($p4c)"
  fi
fi

ss=$(command -v simple_switch_grpc || true)
if [ -z "$ss" ]; then
  say_missing "simple_switch_grpc not found (BMv2 must be built with --with-pi)"
elif check_libs "$ss"; then
  v=$("$ss" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n1)
  if [ -z "$v" ] || ! version_ge "$v" "$MIN_BMV2"; then
    say_missing "simple_switch_grpc at $ss is version '${v:-unknown}', need >= $MIN_BMV2"
  else
    echo "ok: simple_switch_grpc $v ($ss)"
    # Queue rates and depths are set over Thrift (simple_switch_CLI); simple_switch_grpc
    # serves Thrift only when BMv2 was configured --with-thrift (its default is no).
    if ldd "$ss" 2>/dev/null | grep -q 'libsimpleswitch_thrift'; then
      echo "ok: simple_switch_grpc serves Thrift"
    else
      say_missing "simple_switch_grpc at $ss has no Thrift server (configure BMv2 with --with-pi --with-thrift)"
    fi
    # BMv2 installs its build configuration as bm/config.h next to its binaries.
    # Logging macros and the event logger cost packet rate (bench/README.md).
    cfg="$(dirname "$ss")/../include/bm/config.h"
    if [ -r "$cfg" ]; then
      macros=no; elog=no
      grep -q '^#define BM_LOG_DEBUG_ON' "$cfg" && macros=yes
      grep -q '^#define BM_ELOG_ON' "$cfg" && elog=yes
      kind=fast
      [ "$macros" = yes ] || [ "$elog" = yes ] && kind="slower (configure with --disable-logging-macros --disable-elogger for speed)"
      echo "ok: BMv2 build: logging macros $macros, event logger $elog: $kind"
    else
      echo "note: BMv2 build options unknown ($cfg not found)"
    fi
  fi
fi

cli=$(command -v simple_switch_CLI || true)
if [ -z "$cli" ]; then
  say_missing "simple_switch_CLI not found (installed with BMv2)"
else
  # It must run under the project's Python (bmv2_tm.py runs it that way).
  py=${MMAQM_PYTHON:-python3}
  if out=$("$py" "$cli" --help 2>&1); then
    echo "ok: simple_switch_CLI ($cli, run with $py)"
  else
    say_missing "simple_switch_CLI at $cli does not run under $py: $(echo "$out" | tail -n1)"
  fi
fi

[ "$fail" = 0 ] || how_to_get
# Optional: the Tofino compiler (make build-tna). Reported, never required.
"$(dirname "$0")/build-tna.sh" --check || true
exit $fail
