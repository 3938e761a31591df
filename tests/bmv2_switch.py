"""A real simple_switch_grpc for the control-plane tests: started with no program
and no interfaces on 127.0.0.1 (no root, no namespace), optionally serving TLS,
stopped (and reaped) on leaving, also on a failure. Certificates for it are made
with the openssl command line (certificates())."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BMV2_JSON = REPO / "build" / "main.json"
P4INFO = REPO / "build" / "main.p4info.txtpb"
LISTEN_TIMEOUT_S = 10.0
SERVER_NAME = "s1.switch.test"          # the name in the switch's certificate (no IP in it)


def skip_reason() -> str | None:
    if shutil.which("simple_switch_grpc") is None:
        return "simple_switch_grpc (BMv2 with PI) is not installed"
    if shutil.which("openssl") is None:
        return "the openssl command is not installed"
    if not (BMV2_JSON.exists() and P4INFO.exists()):
        return f"needs {BMV2_JSON} and {P4INFO}: run 'make build'"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def bmv2(log_dir: Path, grpc_args: Sequence[str] = (), device_id: int = 1,
         thrift_port: int | None = None) -> Iterator[str]:
    """simple_switch_grpc --no-p4 on a free 127.0.0.1 port; yields its gRPC address
    once it listens. thrift_port: its Thrift port (simple_switch_CLI) [a free one]."""
    address = f"127.0.0.1:{free_port()}"
    log = (log_dir / f"bmv2-{address.rsplit(':', 1)[1]}.log").open("w")
    proc = subprocess.Popen(
        ["simple_switch_grpc", "--no-p4", "--device-id", str(device_id), "--thrift-port",
         str(thrift_port or free_port()), "--log-level", "off", "--", "--grpc-server-addr", address,
         *grpc_args],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while True:
            assert proc.poll() is None, (log_dir / log.name).read_text()
            try:
                with socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1])),
                                              timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "simple_switch_grpc did not listen"
                time.sleep(0.05)
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def alive(proc_address: str) -> bool:
    """Whether something still listens on the address."""
    host, _, port = proc_address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class Certificates:
    ca: Path                  # the CA both sides trust
    other_ca: Path            # a CA that signed nothing here
    server_cert: Path
    server_key: Path
    expired_server_cert: Path
    client_cert: Path
    client_key: Path
    expired_client_cert: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def certificates(directory: Path) -> Certificates:
    """A CA, a server certificate for SERVER_NAME (DNS name only) and a client
    certificate, each also expired (valid in 2020 only); and a second, unrelated CA.
    RSA 2048, made with the openssl command."""
    d = directory
    d.mkdir(parents=True, exist_ok=True)
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key",
                 "-out", f"{ca}.crt", "-days", "2", "-subj", f"/CN=mmaqm test {ca}", cwd=d)
    (d / "server.ext").write_text(f"subjectAltName=DNS:{SERVER_NAME}\n"
                                  "extendedKeyUsage=serverAuth\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    (d / "index.txt").write_text("")
    (d / "serial").write_text("01\n")
    (d / "ca.cnf").write_text(
        "[ca]\ndefault_ca = ca_default\n[ca_default]\n"
        f"dir = {d}\ndatabase = {d}/index.txt\nnew_certs_dir = {d}\nserial = {d}/serial\n"
        "default_md = sha256\npolicy = any\nunique_subject = no\n"
        "[any]\ncommonName = supplied\n")
    for side, cn in (("server", SERVER_NAME), ("client", "mmaqm-controller")):
        _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{side}.key",
                 "-out", f"{side}.csr", "-subj", f"/CN={cn}", cwd=d)
        _openssl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.crt", "-keyfile", "ca.key",
                 "-in", f"{side}.csr", "-out", f"{side}.crt", "-days", "2",
                 "-extfile", f"{side}.ext", cwd=d)
        _openssl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.crt", "-keyfile", "ca.key",
                 "-in", f"{side}.csr", "-out", f"{side}-expired.crt",
                 "-startdate", "20200101000000Z", "-enddate", "20200102000000Z",
                 "-extfile", f"{side}.ext", cwd=d)
    return Certificates(ca=d / "ca.crt", other_ca=d / "other-ca.crt",
                        server_cert=d / "server.crt", server_key=d / "server.key",
                        expired_server_cert=d / "server-expired.crt",
                        client_cert=d / "client.crt", client_key=d / "client.key",
                        expired_client_cert=d / "client-expired.crt")


def tls_server_args(certs: Certificates, *, expired: bool = False) -> list[str]:
    """simple_switch_grpc's TLS with client authentication (mutual TLS)."""
    return ["--grpc-server-ssl", "--grpc-server-cacert", str(certs.ca),
            "--grpc-server-cert", str(certs.expired_server_cert if expired
                                      else certs.server_cert),
            "--grpc-server-key", str(certs.server_key), "--grpc-server-with-client-auth"]


def switch_cli(thrift_port: int, commands: str) -> str:
    """simple_switch_CLI's output for the commands (BMv2's Thrift: no P4Runtime, no
    arbitration)."""
    # run by this Python: the virtualenv has thrift (requirements.in)
    cli = shutil.which("simple_switch_CLI")
    assert cli is not None
    return subprocess.run([sys.executable, cli, "--thrift-port", str(thrift_port)],
                          input=commands, capture_output=True, text=True, check=True,
                          timeout=30).stdout


def ctl(args: Sequence[str], timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    """mmaqm-ctl as a process."""
    return subprocess.run([sys.executable, "-m", "mmaqm.cli", *args], capture_output=True,
                          text=True, timeout=timeout_s)


def require_bmv2() -> None:
    why = skip_reason()
    if why:
        pytest.skip(why)
