"""The namespace test bed cleans up after itself, also when the body fails."""

from __future__ import annotations

import subprocess

import pytest

import mmt_testenv  # noqa: F401  (first: puts topologies/ on sys.path)

from mmaqm_exp.netns import missing_prereqs, ns_pair

SKIP = missing_prereqs()


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
def test_ns_pair_cleans_up_on_exception():
    seen = {}
    with pytest.raises(RuntimeError, match="boom"):
        with ns_pair("cln") as net:
            seen["names"] = (net.ns_a, net.ns_b)
            # the pair is configured: IPv6 off, a route to the peer
            assert net.run(net.ns_a, ["sysctl", "-n", f"net.ipv6.conf.{net.if_a}.disable_ipv6"]).stdout.strip() == "1"
            net.run(net.ns_a, ["ip", "route", "get", net.ip_b])
            seen["proc"] = net.popen(net.ns_b, ["sleep", "60"])
            net.run(net.ns_b, ["iptables", "-A", "INPUT", "-j", "ACCEPT"])
            assert all(n in _namespaces() for n in seen["names"])
            raise RuntimeError("boom")
    assert seen["proc"].poll() is not None  # the started process was stopped
    left = _namespaces()
    assert all(n not in left for n in seen["names"])
