"""Two network namespaces joined by one veth pair: a minimal test bed.

    with ns_pair("demo") as net:
        rx = net.popen(net.ns_b, ["python3", "-m", "mmaqm_exp.mmapp", "recv"])
        net.run(net.ns_a, ["python3", "-m", "mmaqm_exp.mmapp", "send", "--dst", net.ip_b])

Everything created is named with the prefix ``mmt-`` and the creating process's
pid. On leaving the ``with`` block (also on an exception) every process started
through :meth:`NsPair.popen` is stopped by its pid (SIGTERM, then SIGKILL) and
both namespaces are deleted, which also removes the veth pair and any iptables
rule inside them. The veths get IPv6 disabled and TX checksum offload off
(shared/DESIGN.md section 1: router solicitations; bad UDP/TCP checksums).
Needs root.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

PREFIX = "mmt-"


def missing_prereqs() -> Optional[str]:
    """Why a namespace test bed cannot be built here, or None if it can."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth, iptables)"
    for tool in ("ip", "ethtool", "sysctl"):
        if shutil.which(tool) is None:
            return f"needs the {tool!r} command"
    return None


def _run(argv: Sequence[str], check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess:
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


@dataclass
class NsPair:
    ns_a: str
    ns_b: str
    if_a: str
    if_b: str
    ip_a: str
    ip_b: str
    procs: list[subprocess.Popen] = field(default_factory=list)

    @staticmethod
    def cmd(ns: str, argv: Sequence[str]) -> list[str]:
        """argv prefixed with ``ip netns exec ns``."""
        return ["ip", "netns", "exec", ns, *argv]

    def run(self, ns: str, argv: Sequence[str], check: bool = True, timeout: float = 30.0,
            env: Optional[dict] = None) -> subprocess.CompletedProcess:
        r = subprocess.run(self.cmd(ns, argv), capture_output=True, text=True, timeout=timeout, env=env)
        if check and r.returncode != 0:
            raise RuntimeError(f"[{ns}] {' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def popen(self, ns: str, argv: Sequence[str], **kw) -> subprocess.Popen:
        """Start argv inside ns (stdout/stderr piped unless given); tracked for cleanup."""
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("text", True)
        p = subprocess.Popen(self.cmd(ns, argv), start_new_session=True, **kw)
        self.procs.append(p)
        return p

    @staticmethod
    def stop(p: subprocess.Popen, timeout: float = 5.0) -> Optional[int]:
        """SIGTERM the process by its pid, wait, SIGKILL if it does not exit."""
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=timeout)
            except ProcessLookupError:
                pass
        return p.returncode

    def close(self) -> None:
        for p in self.procs:
            try:
                self.stop(p)
            except Exception:  # noqa: BLE001 - cleanup must go on
                pass
            for s in (p.stdout, p.stderr):
                if s is not None:
                    s.close()
        self.procs.clear()
        for ns in (self.ns_a, self.ns_b):
            _run(["ip", "netns", "del", ns], check=False)


@contextmanager
def ns_pair(tag: str = "t", subnet: str = "10.199.1") -> Iterator[NsPair]:
    """Create namespaces ``mmt-<tag>-<pid>-a`` / ``-b`` with veth ``<subnet>.1/.2``."""
    pid = os.getpid()
    pair = NsPair(
        ns_a=f"{PREFIX}{tag}-{pid}-a",
        ns_b=f"{PREFIX}{tag}-{pid}-b",
        if_a=f"{PREFIX}{pid % 1000000}a",
        if_b=f"{PREFIX}{pid % 1000000}b",
        ip_a=f"{subnet}.1",
        ip_b=f"{subnet}.2",
    )
    try:
        for ns in (pair.ns_a, pair.ns_b):
            _run(["ip", "netns", "del", ns], check=False)  # leftover of a killed run
            _run(["ip", "netns", "add", ns])
        _run(["ip", "link", "add", "name", pair.if_a, "netns", pair.ns_a, "type", "veth",
              "peer", "name", pair.if_b, "netns", pair.ns_b])
        for ns, ifn, ip in ((pair.ns_a, pair.if_a, pair.ip_a), (pair.ns_b, pair.if_b, pair.ip_b)):
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            pair.run(ns, ["sysctl", "-qw", f"net.ipv6.conf.{ifn}.disable_ipv6=1"])
            _run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", ifn])
            _run(["ip", "-n", ns, "link", "set", ifn, "up"])
            pair.run(ns, ["ethtool", "-K", ifn, "tx", "off"])
        yield pair
    finally:
        pair.close()
