#!/usr/bin/env bash
# Verify (never build or install) the P4 toolchain mmaqm needs:
#   p4c-bm2-ss >= 1.2.5, simple_switch_grpc (BMv2 with P4Runtime) >= 1.15.1,
#   simple_switch_CLI (Thrift CLI, for per-port queue rate and depth), and that
#   simple_switch_grpc serves Thrift: it starts one briefly (no interfaces, no program,
#   127.0.0.1 only) and asks it `show_ports` with simple_switch_CLI, so a BMv2 built
#   with autotools or CMake, Thrift linked shared or static, is judged by what it does.
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
ss_ok=0
if [ -z "$ss" ]; then
  say_missing "simple_switch_grpc not found (BMv2 must be built with --with-pi)"
elif check_libs "$ss"; then
  v=$("$ss" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n1)
  if [ -z "$v" ] || ! version_ge "$v" "$MIN_BMV2"; then
    say_missing "simple_switch_grpc at $ss is version '${v:-unknown}', need >= $MIN_BMV2"
  else
    echo "ok: simple_switch_grpc $v ($ss)"
    ss_ok=1
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
cli_ok=0
py=${MMAQM_PYTHON:-python3}
if [ -z "$cli" ]; then
  say_missing "simple_switch_CLI not found (installed with BMv2)"
else
  # It must run under the project's Python (bmv2_tm.py runs it that way).
  if out=$("$py" "$cli" --help 2>&1); then
    echo "ok: simple_switch_CLI ($cli, run with $py)"
    cli_ok=1
  else
    say_missing "simple_switch_CLI at $cli does not run under $py: $(echo "$out" | tail -n1)"
  fi
fi

# Queue rates and depths are set over Thrift (simple_switch_CLI). simple_switch_grpc
# serves Thrift only when BMv2 was built with it (autotools: --with-thrift, off by
# default; CMake: WITH_THRIFT, on by default), linked shared or static: so ask it.
# A switch started here is always stopped (trap), and it binds nothing outside 127.0.0.1
# for gRPC; its Thrift server is only ever contacted on 127.0.0.1.
THRIFT_WAIT_S=${MMAQM_THRIFT_WAIT_S:-15}
probe_pid=""; probe_dir=""
stop_probe() {
  if [ -n "$probe_pid" ]; then
    kill -TERM "$probe_pid" 2>/dev/null
    for _ in $(seq 1 30); do kill -0 "$probe_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$probe_pid" 2>/dev/null
    wait "$probe_pid" 2>/dev/null
    probe_pid=""
  fi
  [ -n "$probe_dir" ] && rm -rf "$probe_dir"
  probe_dir=""
}
trap stop_probe EXIT
trap 'stop_probe; exit 130' INT
trap 'stop_probe; exit 143' TERM

free_ports() {  # two free TCP ports on 127.0.0.1
  "$py" -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))'
}

check_thrift() {  # start simple_switch_grpc briefly, ask it show_ports over Thrift
  local ports tport gport out deadline
  if ! ports=$(free_ports) || [ -z "$ports" ]; then
    say_missing "cannot pick free ports on 127.0.0.1 with $py to test simple_switch_grpc's Thrift"
    return 1
  fi
  read -r tport gport <<<"$ports"
  probe_dir=$(mktemp -d)
  "$ss" --no-p4 --device-id 1 --thrift-port "$tport" --log-level off \
      -- --grpc-server-addr "127.0.0.1:$gport" >"$probe_dir/switch.log" 2>&1 </dev/null &
  probe_pid=$!
  deadline=$((SECONDS + THRIFT_WAIT_S))
  while :; do
    if ! kill -0 "$probe_pid" 2>/dev/null; then
      wait "$probe_pid" 2>/dev/null; local rc=$?
      probe_pid=""
      say_missing "simple_switch_grpc at $ss exited ($rc) when started with --no-p4 --thrift-port $tport: $(tail -n 3 "$probe_dir/switch.log" | tr '\n' ' ')"
      stop_probe; return 1
    fi
    out=$(printf 'show_ports\n' | timeout 10 "$py" "$cli" --thrift-ip 127.0.0.1 \
          --thrift-port "$tport" 2>&1)
    if grep -q 'port #' <<<"$out"; then
      echo "ok: simple_switch_grpc serves Thrift (simple_switch_CLI show_ports answered on 127.0.0.1:$tport)"
      stop_probe; return 0
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      say_missing "simple_switch_grpc at $ss does not answer Thrift: started with --thrift-port $tport, simple_switch_CLI got no answer on 127.0.0.1:$tport in ${THRIFT_WAIT_S} s (BMv2 built without Thrift? autotools: ./configure --with-pi --with-thrift; CMake: -DWITH_PI=ON -DWITH_THRIFT=ON). simple_switch_CLI said: $(tail -n 2 <<<"$out" | tr '\n' ' ')"
      stop_probe; return 1
    fi
    sleep 0.3
  done
}

if [ "$ss_ok" = 1 ] && [ "$cli_ok" = 1 ]; then
  check_thrift
elif [ "$ss_ok" = 1 ]; then
  say_missing "cannot test whether simple_switch_grpc serves Thrift without a working simple_switch_CLI"
fi

[ "$fail" = 0 ] || how_to_get
# Optional: the Tofino compiler (make build-tna). Reported, never required.
"$(dirname "$0")/build-tna.sh" --check || true
exit $fail
