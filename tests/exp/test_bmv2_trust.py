"""On a real simple_switch_grpc (no program, no interfaces, 127.0.0.1; no root needed):
what the controller trusts and what it enforces.

* a foreign `install --election-id 11` under `run` (election id 10) with another
  queue_limit_pkts is repaired (a `repaired` event naming the change) within the
  enforce interval; `stats` beside it never arbitrates; an operator's later
  `install --election-id 20` is still accepted (no election id drifted upward) and
  repaired in turn; `run` stays at election id 10 throughout;
* TLS with client authentication (mutual TLS): an install with the CA, a client
  certificate and the server name works; a wrong CA, no client certificate, an
  expired switch certificate and an expired client certificate each exit 1 with one
  line naming the switch.

Skipped without simple_switch_grpc, openssl or `make build`'s output.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

import bmv2_switch as B

pytestmark = pytest.mark.skipif(B.skip_reason() is not None, reason=B.skip_reason() or "")

ENFORCE_INTERVAL_S = 1.0
REPAIR_BOUND_S = 3.0          # a foreign write -> repaired (measured: about 0.02 s)


def _config(address: str, limit: int = 64, tls: dict[str, str] | None = None) -> dict[str, Any]:
    sw: dict[str, Any] = {
        "p4runtime_addr": address,
        "ports": {1: {"mac": "02:00:00:00:00:01"}, 2: {"mac": "02:00:00:00:00:02"}},
        "routes": [{"prefix": "10.0.2.0/24", "port": 2, "next_hop_mac": "02:00:00:02:00:01"}],
        "policies": {"default": {"algorithm": "DROP_TAIL", "queue_limit_pkts": limit}}}
    if tls is not None:
        sw["tls"] = tls
    return {"switches": {"s1": sw}}


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def _pipeline() -> list[str]:
    return ["--p4info", str(B.P4INFO), "--bmv2-json", str(B.BMV2_JSON)]


def _queue_limits(address: str) -> dict[int, int]:
    """port_policy's queue_limit_pkts per port, read without arbitrating."""
    from mmaqm.driver import SwitchDriver

    async def read() -> dict[int, int]:
        async with SwitchDriver("s1", address, p4info=B.P4INFO, push_pipeline=False,
                                read_only=True, require_primary=False) as d:
            limits = {}
            for port in (1, 2):
                action = await d.read_port_policy(port)
                if action is not None:
                    limits[port] = action.params["queue_limit_pkts"]
            return limits
    return asyncio.run(asyncio.wait_for(read(), 10))


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait(condition, what: str, proc: subprocess.Popen, timeout_s: float = 10.0) -> float:
    started = time.monotonic()
    while not condition():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - started < timeout_s, f"timed out: {what}"
        time.sleep(0.01)
    return time.monotonic() - started


def _run_installed(config: Path, events_path: Path) -> subprocess.Popen:
    """`mmaqm-ctl run` on config with its events in events_path, once it reported
    `installed` (killed if it did not)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mmaqm.cli", "run", "-c", str(config), *_pipeline(),
         "--events-out", str(events_path),
         "--enforce-interval-s", str(ENFORCE_INTERVAL_S)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: any(e["event"] == "installed" for e in _events(events_path)),
              "run installed", proc)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc


def test_a_foreign_install_under_run_is_repaired_and_no_election_id_drifts(
        tmp_path: Path) -> None:
    events_path = tmp_path / "events.jsonl"
    with B.bmv2(tmp_path) as address:
        ours = _write(tmp_path / "ours.yaml", _config(address, limit=64))
        foreign = _write(tmp_path / "foreign.yaml", _config(address, limit=7))
        proc = _run_installed(ours, events_path)
        try:
            assert _queue_limits(address) == {1: 64, 2: 64}
            repair_latencies = []
            for election_id in (11, 20):
                done = B.ctl(["install", "-c", str(foreign), *_pipeline(),
                              "--election-id", str(election_id)])
                assert done.returncode == 0, done.stderr    # the operator's id is accepted
                installed_at_ns = _logged_ns(done.stderr, "s1: installed in")
                _wait(lambda: sum(e["event"] == "repaired" for e in _events(events_path))
                      == (1 if election_id == 11 else 2), f"repair after id {election_id}",
                      proc, timeout_s=REPAIR_BOUND_S)
                repair = [e for e in _events(events_path) if e["event"] == "repaired"][-1]
                repair_latencies.append((repair["t_ns"] - installed_at_ns) / 1e9)
                assert {(w["type"], w["table"], w["match"]["port"],
                         tuple(w["changed"]["queue_limit_pkts"])) for w in repair["writes"]} \
                    == {("MODIFY", "port_policy", 1, (7, 64)),
                        ("MODIFY", "port_policy", 2, (7, 64))}
                assert _queue_limits(address) == {1: 64, 2: 64}
                stats = B.ctl(["stats", "-c", str(ours), "--p4info", str(B.P4INFO), "--json"])
                assert stats.returncode == 0, stats.stderr
            # run kept its own election id each time it installed (and repaired)
            installs = [e for e in _events(events_path) if e["event"] == "installed"]
            assert len(installs) == 3 and {e["election_id"] for e in installs} == {10}
            # with nothing foreign, the periodic check finds nothing to repair
            before = len(_events(events_path))
            time.sleep(2.5 * ENFORCE_INTERVAL_S)
            assert _events(events_path)[before:] == []
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=10)
        finally:
            proc.kill()
            proc.wait()
        assert proc.returncode == 128 + signal.SIGTERM, stderr
        assert "Traceback" not in stderr, stderr
    print(f"repaired {repair_latencies[0]:.3f} s and {repair_latencies[1]:.3f} s after the "
          f"foreign install's writes")
    assert all(0 < latency < REPAIR_BOUND_S for latency in repair_latencies)


def _logged_ns(stderr: str, text: str) -> int:
    """The time (ns since the epoch) of the log line containing text (ms resolution)."""
    line = next(line for line in stderr.splitlines() if text in line)
    stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    return int(stamp.timestamp() * 1e9)


def test_a_write_no_arbitration_announced_is_repaired_by_the_periodic_check(
        tmp_path: Path) -> None:
    """BMv2's Thrift (simple_switch_CLI) changes port 2's queue limit behind
    P4Runtime's back: no primary change tells the controller; its periodic read does."""
    import shutil
    if shutil.which("simple_switch_CLI") is None:
        pytest.skip("simple_switch_CLI is not installed")
    events_path = tmp_path / "events.jsonl"
    thrift_port = B.free_port()
    with B.bmv2(tmp_path, thrift_port=thrift_port) as address:
        ours = _write(tmp_path / "ours.yaml", _config(address, limit=64))
        proc = _run_installed(ours, events_path)
        try:
            dump = B.switch_cli(thrift_port, "table_dump port_policy\n")
            assert dump.count("drop_tail - 40, 11") == 2, dump    # 64 packets, shift 17
            handle = dump.split("EXACT     0002")[0].rsplit("Dumping entry ", 1)[1].split()[0]
            B.switch_cli(thrift_port, f"table_modify port_policy drop_tail {int(handle, 16)} "
                                      f"7 17\n")
            changed_ns = time.time_ns()
            _wait(lambda: any(e["event"] == "repaired" for e in _events(events_path)),
                  "periodic repair", proc, timeout_s=ENFORCE_INTERVAL_S + REPAIR_BOUND_S)
            [repair] = [e for e in _events(events_path) if e["event"] == "repaired"]
            assert repair["reason"] == "periodic"
            assert repair["writes"] == [{"type": "MODIFY", "table": "port_policy",
                                         "match": {"port": 2},
                                         "changed": {"queue_limit_pkts": [7, 64]}}]
            assert _queue_limits(address) == {1: 64, 2: 64}
        finally:
            proc.terminate()
            proc.communicate(timeout=10)
    latency = (repair["t_ns"] - changed_ns) / 1e9
    print(f"a Thrift write repaired {latency:.3f} s later (--enforce-interval-s "
          f"{ENFORCE_INTERVAL_S:g})")
    assert latency < ENFORCE_INTERVAL_S + 0.5


# ------------------------------------------------------------------ TLS
@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> B.Certificates:
    return B.certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls_switch(certs: B.Certificates, tmp_path_factory: pytest.TempPathFactory):
    with B.bmv2(tmp_path_factory.mktemp("bmv2"), B.tls_server_args(certs)) as address:
        yield address


def _install(tmp_path: Path, address: str, tls_flags: list[str], config_tls=None,
             timeout_s: float = 5) -> subprocess.CompletedProcess[str]:
    path = _write(tmp_path / "cfg.yaml", _config(address, tls=config_tls))
    started = time.monotonic()
    result = B.ctl(["install", "-c", str(path), *_pipeline(), "--timeout-s", str(timeout_s),
                    *tls_flags])
    print(f"install {tls_flags or config_tls}: exit {result.returncode} after "
          f"{time.monotonic() - started:.2f} s: {result.stderr.strip().splitlines()[-1:]}")
    return result


def test_mutual_tls_install_and_stats_work(tmp_path: Path, certs: B.Certificates,
                                           tls_switch: str) -> None:
    """With the flags, then with the config's switches.s1.tls."""
    flags = ["--ca-cert", str(certs.ca), "--cert", str(certs.client_cert), "--key",
             str(certs.client_key), "--tls-server-name", B.SERVER_NAME]
    result = _install(tmp_path, tls_switch, flags)
    assert result.returncode == 0, result.stderr
    result = _install(tmp_path, tls_switch, [], config_tls={
        "ca_cert": str(certs.ca), "cert": str(certs.client_cert), "key": str(certs.client_key),
        "server_name": B.SERVER_NAME})
    assert result.returncode == 0, result.stderr
    stats = B.ctl(["stats", "-c", str(tmp_path / "cfg.yaml"), "--p4info", str(B.P4INFO),
                   "--json"])
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["switch"] == "s1"


@pytest.mark.parametrize("case", ["plaintext", "wrong CA", "no client certificate",
                                  "expired client certificate", "wrong server name"])
def test_a_bad_tls_setup_exits_1_naming_the_switch(
        tmp_path: Path, certs: B.Certificates, tls_switch: str, case: str) -> None:
    flags = {
        "plaintext": [],
        "wrong CA": ["--ca-cert", str(certs.other_ca), "--cert", str(certs.client_cert),
                     "--key", str(certs.client_key), "--tls-server-name", B.SERVER_NAME],
        "no client certificate": ["--ca-cert", str(certs.ca),
                                  "--tls-server-name", B.SERVER_NAME],
        "expired client certificate": ["--ca-cert", str(certs.ca), "--cert",
                                       str(certs.expired_client_cert), "--key",
                                       str(certs.client_key), "--tls-server-name",
                                       B.SERVER_NAME],
        "wrong server name": ["--ca-cert", str(certs.ca), "--cert", str(certs.client_cert),
                              "--key", str(certs.client_key)],    # 127.0.0.1 is not in it
    }[case]
    started = time.monotonic()
    result = _install(tmp_path, tls_switch, flags, timeout_s=3)
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < 10
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"mmaqm-ctl: s1: "), result.stderr
    assert tls_switch in last, result.stderr
    assert "Traceback" not in result.stderr
    assert B.alive(tls_switch)


def test_an_expired_switch_certificate_exits_1_naming_the_switch(
        tmp_path: Path, certs: B.Certificates) -> None:
    with B.bmv2(tmp_path, B.tls_server_args(certs, expired=True)) as address:
        result = _install(tmp_path, address, [
            "--ca-cert", str(certs.ca), "--cert", str(certs.client_cert), "--key",
            str(certs.client_key), "--tls-server-name", B.SERVER_NAME], timeout_s=3)
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("mmaqm-ctl: s1: ") and address in last, result.stderr
    assert "Traceback" not in result.stderr


# ------------------------------------------------------------------ device id
def test_a_device_id_bmv2_does_not_have_is_one_line_naming_the_switch(tmp_path: Path) -> None:
    """BMv2 accepts the arbitration for any device id and refuses the pipeline
    (`Error when trying to assign device`); it was an uncaught CancelledError."""
    with B.bmv2(tmp_path, device_id=1) as address:
        data = _config(address)
        data["switches"]["s1"]["device_id"] = 2
        path = _write(tmp_path / "cfg.yaml", data)
        result = B.ctl(["install", "-c", str(path), *_pipeline(), "--timeout-s", "5"])
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"mmaqm-ctl: s1: P4Runtime at {address}: the pipeline check or "
                           f"push failed: "), result.stderr
    assert last.endswith("(the switch has no device 2, or cannot take it: check device_id)")
    assert "Traceback" not in result.stderr and "CancelledError" not in result.stderr
