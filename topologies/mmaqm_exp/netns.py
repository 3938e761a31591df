"""Test bed: two network namespaces joined by one veth pair, no switch (built on :mod:`lab`).

    with ns_pair("demo") as net:
        rx = net.popen(net.ns_b, ["python3", "-m", "mmaqm_exp.mmapp", "recv"])
        net.run(net.ns_a, ["python3", "-m", "mmaqm_exp.mmapp", "send", "--dst", net.ip_b])

    with ns_pair_net() as net:                 # the same pair as a traffic.Net
        traffic.run_scenario(net, scenario, out_dir)

    python -m mmaqm_exp.netns run SCENARIO --out DIR [--duration S] [--bottleneck-kbps R]

Namespaces ``mmt-<tag>-<pid>-a`` / ``-b``, veth ``mmt-<pid>a`` / ``b`` (both host ends:
IPv6 off, TX checksum, TSO and GSO offload off; see lab), addresses ``<subnet>.1`` /
``.2`` (/24). With ``ipv6=True`` also ``2001:db8:<third byte of subnet>::1`` / ``::2``
(/64), brought up quiet as the experiment hosts' (lab.host_ipv6_script: no link-local
address, no DAD or router solicitations, multicast dropped, each end the other's
static neighbour); ``run`` turns it on for a scenario with ipv6 flows. On leaving the ``with`` block (also on an exception) every process started
through :meth:`NsPair.popen` is stopped and both namespaces are deleted, taking the veth
and any iptables rule inside along. Entering first removes the pairs of processes that
are gone (killed before their teardown). Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .lab import (HOST_PORT, STOP_TIMEOUT_S, Lab, StopRequested, VethEnd, catch_stop_signals,
                  clean_leftovers, host_ipv6_script, missing_prereqs, namespaces)

PREFIX = "mmt-"
PAIR_NS_RE = re.compile(r"^mmt-.+-(?P<pid>[0-9]+)-[ab]$")
DEFAULT_SUBNET = "10.199.1"
DEFAULT_HOSTS_A = ("tcp1", "mm1", "cbr1")
DEFAULT_HOSTS_B = ("tcp2", "mm2", "cbr2")

__all__ = ["DEFAULT_HOSTS_A", "DEFAULT_HOSTS_B", "NsPair", "NsPairNet", "missing_prereqs",
           "ns_pair", "ns_pair_net", "remove_dead_pairs"]


@dataclass
class NsPair:
    lab: Lab
    ns_a: str
    ns_b: str
    if_a: str
    if_b: str
    ip_a: str
    ip_b: str
    ip6_a: str = ""             # ns_pair(ipv6=True) only
    ip6_b: str = ""

    @property
    def procs(self) -> list[subprocess.Popen]:
        """Processes started through popen and not stopped through stop."""
        return self.lab.procs

    def run(self, ns: str, argv: Sequence[object], check: bool = True, timeout: float = 30.0,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run argv inside ns (output captured as text); check: raise if it fails."""
        return self.lab.run(ns, argv, timeout_s=timeout, check=check, env=env)

    def popen(self, ns: str, argv: Sequence[object], **popen_kwargs: Any) -> subprocess.Popen:
        """Start argv inside ns (stdout/stderr piped as text unless given); stopped at exit."""
        popen_kwargs.setdefault("stdout", subprocess.PIPE)
        popen_kwargs.setdefault("stderr", subprocess.PIPE)
        popen_kwargs.setdefault("text", True)
        return self.lab.popen(ns, argv, **popen_kwargs)

    def stop(self, p: subprocess.Popen, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """Stop p (SIGTERM, then SIGKILL after timeout seconds); its exit status."""
        self.lab.stop([p], timeout)
        return p.returncode


def remove_dead_pairs() -> list[str]:
    """Remove the namespaces of pairs whose creating process is gone; return them."""
    dead = sorted({ns[:-len("-a")] for ns in namespaces(PREFIX.rstrip("-"))
                   if (m := PAIR_NS_RE.match(ns)) and not os.path.exists(f"/proc/{m['pid']}")})
    return [ns for prefix in dead for ns in clean_leftovers(prefix)]


@contextmanager
def ns_pair(tag: str = "t", subnet: str = DEFAULT_SUBNET, ipv6: bool = False
            ) -> Iterator[NsPair]:
    """A fresh pair; see the module docstring."""
    remove_dead_pairs()
    pid = os.getpid()
    with Lab(f"{PREFIX}{tag}-{pid}") as lab:
        pair = NsPair(lab, ns_a=lab.add_namespace(f"{lab.prefix}-a"),
                      ns_b=lab.add_namespace(f"{lab.prefix}-b"),
                      if_a=f"{PREFIX}{pid % 1000000}a", if_b=f"{PREFIX}{pid % 1000000}b",
                      ip_a=f"{subnet}.1", ip_b=f"{subnet}.2")
        if ipv6:
            site = f"2001:db8:{int(subnet.split('.')[-1]):x}"
            pair.ip6_a, pair.ip6_b = f"{site}::1", f"{site}::2"
        lab.add_veths([(VethEnd(pair.ns_a, pair.if_a, HOST_PORT),
                        VethEnd(pair.ns_b, pair.if_b, HOST_PORT))])
        for ns, ifname, ip in ((pair.ns_a, pair.if_a, pair.ip_a),
                               (pair.ns_b, pair.if_b, pair.ip_b)):
            lab.run(ns, ["ip", "addr", "add", f"{ip}/24", "dev", ifname])
        if ipv6:
            mac = {ns: lab.run(ns, ["cat", f"/sys/class/net/{ifname}/address"]).stdout.strip()
                   for ns, ifname in ((pair.ns_a, pair.if_a), (pair.ns_b, pair.if_b))}
            for ns, ifname, ip6, peer_ns, peer6 in (
                    (pair.ns_a, pair.if_a, pair.ip6_a, pair.ns_b, pair.ip6_b),
                    (pair.ns_b, pair.if_b, pair.ip6_b, pair.ns_a, pair.ip6_a)):
                lab.run(ns, ["sh", "-c", host_ipv6_script(ifname, f"{ip6}/64", peer6,
                                                          mac[peer_ns], default_route=False)])
        yield pair


class NsPairNet:
    """The traffic.Net protocol over an NsPair: hosts_a live in namespace a, hosts_b in b."""

    def __init__(self, pair: NsPair, hosts_a: Sequence[str] = DEFAULT_HOSTS_A,
                 hosts_b: Sequence[str] = DEFAULT_HOSTS_B) -> None:
        self.pair = pair
        self.ns = {**{h: pair.ns_a for h in hosts_a}, **{h: pair.ns_b for h in hosts_b}}
        self.ips = {**{h: pair.ip_a for h in hosts_a}, **{h: pair.ip_b for h in hosts_b}}
        self.ips6 = {**{h: pair.ip6_a for h in hosts_a}, **{h: pair.ip6_b for h in hosts_b}}

    @property
    def hosts(self) -> list[str]:
        return list(self.ns)

    def popen(self, host: str, argv: list[str], **popen_kwargs: Any) -> subprocess.Popen:
        return self.pair.popen(self.ns[host], argv, **popen_kwargs)

    def run(self, host: str, argv: list[str], timeout: float = 30.0) -> subprocess.CompletedProcess:
        return self.pair.run(self.ns[host], argv, check=False, timeout=timeout)

    def host_ip(self, host: str, family: str = "ipv4") -> str:
        if family == "ipv4":
            return self.ips[host]
        if family == "ipv6" and self.ips6[host]:
            return self.ips6[host]
        raise ValueError(f"host {host!r} has no {family} address (ns_pair_net(ipv6=True))")


@contextmanager
def ns_pair_net(tag: str = "trf", hosts_a: Sequence[str] = DEFAULT_HOSTS_A,
                hosts_b: Sequence[str] = DEFAULT_HOSTS_B, ipv6: bool = False
                ) -> Iterator[NsPairNet]:
    """``with ns_pair_net() as net:`` -- a fresh namespace pair wrapped as a traffic.Net."""
    with ns_pair(tag, ipv6=ipv6) as pair:
        yield NsPairNet(pair, hosts_a, hosts_b)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mmaqm_exp.netns",
                                description="run a scenario between two namespaces (no switch)")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("scenario")
    r.add_argument("--out", required=True)
    r.add_argument("--duration", type=float, default=None, help="shorten to this many seconds")
    r.add_argument("--bottleneck-kbps", type=float, default=None)
    a = p.parse_args(argv)
    from .scenario import load_scenario     # PyYAML: only this command needs it
    from .traffic import run_scenario

    sc = load_scenario(a.scenario, duration_s=a.duration)

    def show(el: float, ph: str | None, rates: dict[str, float]) -> None:
        print(f"{el:6.1f} s  {ph or '-':12s} "
              + "  ".join(f"{k} {v:.0f} kbit/s" for k, v in rates.items()), flush=True)

    catch_stop_signals(interrupt=True)
    try:
        with ns_pair_net(ipv6="ipv6" in sc.families()) as net:
            res = run_scenario(net, sc, a.out, progress=show,
                               bottleneck_rate_kbps=a.bottleneck_kbps)
    except StopRequested as stop:
        print("interrupted; namespaces removed", file=sys.stderr)
        return stop.exit_status
    print(json.dumps({"t0_ns": res.t0_ns, "cpu_s": res.cpu_s, "warnings": res.warnings,
                      "max_late_ms": max((s["late_ms"] for s in res.starts.values()),
                                         default=None)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
