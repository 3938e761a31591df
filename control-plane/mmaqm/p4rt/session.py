"""One P4Runtime connection to a switch, over finsy: arbitration, the pipeline
check or push, deadlines, and noticing a lost stream or a lost primary role."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import finsy as fy
import finsy.p4client as fy_p4client
from finsy import p4entity
from finsy.proto import p4r
from google.protobuf import text_format
from google.protobuf.empty_pb2 import Empty

from .. import reconcile as R
from .. import targets
from .codec import TABLE_POLICY, describe_error, flow_digest_alias, policy_actions_missing
from .guard import (ElectionIdInUse, FixedElectionArbitrator, MalformedCounter, clip,
                    quiet_known_failures)

LOG = logging.getLogger("mmaqm.driver")

# Every network wait has a deadline; cli.py's flags override the first two.
GRPC_WAIT_TIMEOUT_S = 20.0     # wait_for_grpc: a switch just started may not listen yet
CONNECT_TIMEOUT_S = 20.0       # channel, arbitration, pipeline check or push: SwitchDriver entry
TCP_CONNECT_TIMEOUT_S = 2.0    # one TCP connect of wait_for_grpc (a SYN-dropping address)
# Each Write and Read has its own deadline, request_timeout_s (cli.py: --timeout-s too).
# finsy bounds every RPC at its module's _DEFAULT_RPC_TIMEOUT (10 s, p4client.py): it is
# raised above ours (RPC_TIMEOUT_MARGIN_S) so that ours, which names the switch, fires.
REQUEST_TIMEOUT_S = CONNECT_TIMEOUT_S
RPC_TIMEOUT_MARGIN_S = 1.0
# Election ids (P4Runtime spec "Client Arbitration"): the highest connected one is
# primary and alone may write; a Read needs none ("Read RPC").
CONTROLLER_ELECTION_ID = 10    # run, install
# stats reads without arbitrating (read_only: no stream, no election id): it never
# bids to be primary, so it can neither take the role nor move anyone's id.


@dataclass(frozen=True)
class TlsConfig:
    """TLS for a P4Runtime channel (gRPC's ssl_channel_credentials): ca_cert verifies
    the switch's certificate (None: the system's roots); cert and key are this
    client's, for a switch that requires client authentication (mutual TLS);
    server_name: the name to verify in the switch's certificate instead of the
    address's host."""

    ca_cert: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    server_name: str = ""

    def credentials(self) -> fy.GRPCCredentialsTLS:
        for path in (self.ca_cert, self.cert, self.key):
            if path is not None and not Path(path).is_file():
                raise FileNotFoundError(f"TLS file {path} not found")
        if (self.cert is None) != (self.key is None):
            raise ValueError("a TLS client certificate needs its key, and a key its certificate")
        return fy.GRPCCredentialsTLS(cacert=self.ca_cert, cert=self.cert,
                                     private_key=self.key,
                                     target_name_override=self.server_name)

# The compiled program, relative to the working directory (make build writes it
# there in a checkout; an installed package is given --p4info and --bmv2-json).
DEFAULT_P4INFO = Path("build") / "main.p4info.txtpb"
DEFAULT_BMV2_JSON = Path("build") / "main.json"


class SwitchConnectionError(RuntimeError):
    """The P4Runtime server could not be reached or refused the connection."""


class SwitchNotAnswering(SwitchConnectionError):
    """The switch accepted the connection but did not answer a request in time."""


class PrimaryLostError(RuntimeError):
    """A higher election id took the primary role from this connection (it still
    reads, and may become primary again)."""


class P4RuntimeSession:
    """One P4Runtime connection to an mmaqm switch.

    Use as an async context manager. On entry it arbitrates with election_id and,
    when primary and the switch runs a different program (P4Info cookie), pushes
    the pipeline; all of it within connect_timeout_s (TimeoutError after). With
    require_primary (writers) another primary is a RuntimeError; without it (readers:
    P4Runtime serves a Read from any client, spec "Read RPC") a backup connection is fine.
    Connection failures are SwitchConnectionError, naming the switch and address.

    open() and close() are the same steps as entering and leaving; a driver may be
    closed and opened again (reconnect: a fresh gRPC channel, arbitration and
    pipeline check on the same finsy Switch, see mmaqm.supervisor.SwitchSupervisor).
    """

    def __init__(
        self,
        name: str,
        address: str,
        *,
        device_id: int = 1,
        p4info: Path = DEFAULT_P4INFO,
        bmv2_json: Path = DEFAULT_BMV2_JSON,
        election_id: int = CONTROLLER_ELECTION_ID,
        push_pipeline: bool = True,
        require_primary: bool = True,
        role: str = "",
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        read_only: bool = False,
        tls: TlsConfig | None = None,
    ) -> None:
        for path in (p4info, bmv2_json) if push_pipeline else (p4info,):
            if not Path(path).exists():
                raise FileNotFoundError(f"{path} not found: run 'make build' first")
        # the device config: BMv2's JSON file, or a Tofino build directory (make
        # build-tna) packed as Stratum's BfPipelineConfig (targets.device_config)
        device_config: Path | bytes | None = None
        # BMv2's JSON or a Tofino build directory: the latter also holds the BfRt
        # schema of the controller's Lpf writes (targets.bfrt_schema)
        self.device_config_path = Path(bmv2_json)
        if push_pipeline:
            device_config = targets.device_config(Path(bmv2_json))
        options = fy.SwitchOptions(
            p4info=Path(p4info),
            p4blob=device_config,
            device_id=device_id,
            initial_election_id=election_id,
            # finsy sends a role name only with a role config: an empty one (the spec's
            # "Role Config": its scheme is the target's; simple_switch_grpc ignores roles)
            role_name=role,
            role_config=Empty() if role else None,
            channel_credentials=None if tls is None else tls.credentials(),
        )
        self.name = name
        self.tls = tls
        self.read_only = read_only
        self.request_timeout_s = request_timeout_s
        fy_p4client._DEFAULT_RPC_TIMEOUT = max(fy_p4client._DEFAULT_RPC_TIMEOUT,
                                               request_timeout_s + RPC_TIMEOUT_MARGIN_S,
                                               connect_timeout_s + RPC_TIMEOUT_MARGIN_S)
        self.malformed = MalformedCounter(name)
        quiet_known_failures()
        self.primary_changes = 0         # the primary role lost or regained, since the start
        self._reader: fy.P4Client | None = None     # read_only's channel
        self.address = address
        self.require_primary = require_primary
        self.digest_lists_dropped = 0    # digest lists dropped: the reader's queue was full
        self.connect_timeout_s = connect_timeout_s
        try:
            self.switch = fy.Switch(name, address, options)     # reads the P4Info
        except (text_format.ParseError, UnicodeDecodeError) as err:
            raise RuntimeError(f"{p4info}: not a P4Info text file ({err})") from None
        self.target = targets.for_p4info(self.switch.p4info)
        self.table_aliases = frozenset(t.alias for t in self.switch.p4info.tables)
        self._counter_names = frozenset({c.alias for c in self.switch.p4info.counters}
                                        | {c.name for c in self.switch.p4info.counters})
        # the flow digest's P4Info alias (v1model: its struct's name; TNA: the instance's);
        # the bench's minimal router has none, and the controller then enables no reports
        self.flow_digest = (flow_digest_alias(self.switch.p4info)
                            if self.switch.p4info.digests else R.DIGEST_FLOW)
        # C-UPTA's digests (upta.p4), where the program has them
        self.bfd_spec_digest, self.bfd_report_digest = (
            name if self.switch.p4info.digests.get(name) is not None else None
            for name in (R.DIGEST_BFD_SPEC, R.DIGEST_BFD_REPORT))
        # digest id -> the queue of its reader (digests.digest_items); the flow digest
        # has its own (digests.flow_reports)
        self.digest_queues: dict[int, asyncio.Queue] = {}
        # gRPC takes one write at a time on a stream; send_stream holds this lock
        self._stream_write_lock = asyncio.Lock()
        self._open = False
        # finsy announces the pipeline ready (CHANNEL_READY) after its arbitration and,
        # when primary, its pipeline check or push (switch.py Switch._ready); it runs
        # that again after a backup connection becomes primary (BECOME_PRIMARY).
        self._ready_as_primary = asyncio.Event()
        # finsy's arbitration and stream handling, with what arrives checked (p4rt.guard)
        self.switch._arbitrator = FixedElectionArbitrator(
            election_id, role, Empty() if role else None, switch_name=name,
            malformed=self.malformed)
        self.switch._handle_stream_message = self._on_stream_message
        self._finsy_ready = self.switch._ready
        self.switch._ready = self._guarded_ready
        self._ready_error: SwitchConnectionError | None = None
        self._ready_failed = asyncio.Event()
        self.switch._stream_digest_message = self._on_unread_digest
        self.switch.ee.on(fy.SwitchEvent.CHANNEL_READY, self._on_ready)
        for event in (fy.SwitchEvent.BECOME_PRIMARY, fy.SwitchEvent.BECOME_BACKUP,
                      fy.SwitchEvent.CHANNEL_DOWN):
            self.switch.ee.on(event, self._on_not_ready)

    def _on_ready(self, switch: fy.Switch) -> None:
        if switch.is_primary:
            self._ready_as_primary.set()

    def _on_not_ready(self, switch: fy.Switch) -> None:
        self._ready_as_primary.clear()
        if switch.is_up:          # BECOME_PRIMARY or BECOME_BACKUP
            self.primary_changes += 1

    async def _on_stream_message(self, msg: p4r.StreamMessageResponse) -> None:
        """finsy's stream handler, checked: arbitration updates (FixedElectionArbitrator
        checks them) and digests go on; anything else from the switch (packet-ins,
        idle timeouts, stream errors: this program asks for none) is counted and
        logged at most once a second per kind; no message ends the stream task."""
        kind = msg.WhichOneof("update")
        try:
            if kind == "arbitration":
                await self.switch._arbitrator.update(self.switch, msg.arbitration)
            elif kind == "digest":
                queue = self.digest_queues.get(msg.digest.digest_id)
                if queue is None:
                    self.switch._stream_digest_message(msg)
                elif queue.full():
                    self.digest_lists_dropped += 1
                else:
                    queue.put_nowait(msg.digest)
            elif kind == "error":
                self.malformed.add("stream error", f"{msg.error.canonical_code}: "
                                                   f"{msg.error.message}")
            else:
                self.malformed.add(f"stream message ({kind or 'empty'})", "not asked for")
        except (ValueError, TypeError, KeyError, IndexError, OverflowError,
                AssertionError) as exc:
            self.malformed.add(f"stream message ({kind})", f"{type(exc).__name__}: {exc}")

    def _on_unread_digest(self, msg: p4r.StreamMessageResponse) -> None:
        """A digest list while nothing reads flow reports (install, a backup): dropped
        (unacknowledged, so the switch sends it again to whoever reads)."""
        LOG.debug("%s: digest list %d dropped: no flow report reader", self.name,
                  msg.digest.list_id)

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def ready_as_primary(self) -> bool:
        """Primary, and finsy has checked (or pushed) the pipeline since it became so."""
        return self.switch.is_primary and self._ready_as_primary.is_set()

    async def __aenter__(self) -> "P4RuntimeSession":
        await self.open()
        return self

    async def open(self) -> None:
        """Connect: arbitration and, when primary, the pipeline (see the class)."""
        if self._open:
            raise RuntimeError(f"{self.name}: the driver is open already")
        # A program without port_policy (the bench's minimal router) is driven as a
        # plain router; an mmaqm program must have every algorithm's action.
        missing = policy_actions_missing(self.switch.p4info)
        if missing:
            raise RuntimeError(f"{self.name}: the P4Info's {TABLE_POLICY} lacks the actions "
                               f"{missing}: rebuild the program ('make build')")
        self._ready_as_primary.clear()
        if self.read_only:
            await self._connect_reader()
            self._open = True
            return
        await self._connect()
        self._open = True
        if self.require_primary and not self.switch.is_primary:
            ids = f"election id {self.switch.primary_id} > {self.switch.election_id}"
            await self.close()
            raise RuntimeError(f"{self.name}: another controller is primary ({ids})")
        if not self.switch.is_primary:
            LOG.info("%s: connected as a backup (primary election id %d)", self.name,
                     self.switch.primary_id)

    async def _connect(self) -> None:
        """finsy's Switch entry under a deadline: it waits for the arbitration answer
        without one (a server that accepts and never answers), and a SYN-dropping
        address takes the kernel's ~2 min of SYN retries."""
        self._ready_error = None
        self._ready_failed.clear()
        entering = asyncio.ensure_future(self.switch.__aenter__())
        failed = asyncio.ensure_future(self._ready_failed.wait())
        try:
            done, _ = await asyncio.wait([entering, failed], timeout=self.connect_timeout_s,
                                         return_when=asyncio.FIRST_COMPLETED)
            if entering in done:
                entering.result()
            else:
                entering.cancel()            # finsy's __aenter__ cleans up on the cancellation
                await asyncio.gather(entering, return_exceptions=True)
                if failed in done and self._ready_error is not None:
                    raise self._ready_error
                raise TimeoutError
        except TimeoutError:
            raise TimeoutError(
                f"{self.name}: no P4Runtime answer from {self.address} within "
                f"{self.connect_timeout_s:g} s (connect, arbitration, pipeline)") from None
        except fy.P4ClientError as err:
            raise SwitchConnectionError(
                f"{self.name}: P4Runtime at {self.address} failed: "
                f"{self.explain_error(err)}") from None
        except (ElectionIdInUse, SwitchConnectionError):
            raise
        except RuntimeError as err:      # finsy's arbitration, e.g. its invariants
            raise SwitchConnectionError(f"{self.name}: P4Runtime at {self.address}: "
                                        f"{clip(str(err))}") from None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise                        # we are being cancelled
            # finsy cancelled its own tasks after one failed
            raise SwitchConnectionError(f"{self.name}: P4Runtime at {self.address}: the "
                                        f"connection failed") from None
        finally:
            failed.cancel()
            if not entering.done():          # we were cancelled inside asyncio.wait
                entering.cancel()
                await asyncio.gather(entering, return_exceptions=True)

    async def _guarded_ready(self) -> None:
        """finsy's pipeline step after arbitration (check the cookie or push, when
        primary), its failure kept for this session instead of finsy's critical log
        and traceback: _connect and check_connected_stream raise it."""
        try:
            await self._finsy_ready()
        except fy.P4ClientError as err:
            self._ready_error = SwitchConnectionError(
                f"{self.name}: P4Runtime at {self.address}: the pipeline check or push "
                f"failed: {self.explain_error(err)}")
            self._ready_failed.set()

    async def _connect_reader(self) -> None:
        """read_only: a gRPC channel only. P4Runtime serves a Read to any client
        (spec "Read RPC"), with no stream and no arbitration, so a reader never bids
        to be primary. The first Read is the connection's test."""
        client = fy.P4Client(self.address, self.switch.options.channel_credentials,
                             wait_for_ready=False)
        # the arbitrator only adds the role to a ReadRequest (--role)
        await client.open(schema=self.switch.p4info,
                          complete_request=self.switch._arbitrator.complete_request)
        self._reader = client
        self.switch._p4client = client

    def explain_error(self, err: fy.P4ClientError) -> str:
        """describe_error, and what a TLS failure or an unknown device means."""
        text = describe_error(err)
        lowered = text.lower()
        if self.tls is not None and err.code == fy.GRPCStatusCode.UNAVAILABLE and any(
                word in lowered for word in ("ssl", "tls", "handshake", "certificate",
                                             "failed to connect", "connections to all")):
            text += (" (a TLS handshake that failed looks like this: check the CA, the "
                     "client certificate and key, their dates and the server name)")
        if "device" in lowered and (err.code == fy.GRPCStatusCode.NOT_FOUND
                                    or "assign device" in lowered):
            text += (f" (the switch has no device {self.switch.device_id}, or cannot take "
                     f"it: check device_id)")
        elif err.code == fy.GRPCStatusCode.FAILED_PRECONDITION and "pipeline" in lowered:
            text += (f" (no program on device {self.switch.device_id}: install first, or "
                     f"check device_id)")
        return clip(text, 400)

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Leave the connection (its finsy tasks and gRPC channel); idempotent."""
        if self._open:
            self._open = False
            self._ready_as_primary.clear()
            if self._reader is not None:
                reader, self._reader = self._reader, None
                self.switch._p4client = None
                await reader.close()
                return
            await self.switch.__aexit__(None, None, None)

    def check_connected(self) -> None:
        """For a writer: raise SwitchConnectionError once the P4Runtime stream is gone
        (the switch stopped: finsy notices, but a digest reader waits for digests
        forever), PrimaryLostError when the connection is no longer primary."""
        self.check_connected_stream()
        if not self.switch.is_primary:
            raise PrimaryLostError(f"{self.name}: another controller became primary "
                                   f"(election id {self.switch.primary_id})")

    def connection_lost(self, exc: BaseException | None = None) -> bool:
        """Whether the P4Runtime stream is gone, or exc says the server is unavailable
        (a request can fail before finsy has noticed that the stream ended) or did not
        answer within request_timeout_s (a stopped or wedged switch keeps its TCP
        connections), or the connection failed otherwise (SwitchConnectionError)."""
        if isinstance(exc, SwitchConnectionError):
            return True
        if not self.read_only and not self.switch.is_up:
            return True
        return isinstance(exc, fy.P4ClientError) and exc.code in (
            fy.GRPCStatusCode.UNAVAILABLE, fy.GRPCStatusCode.DEADLINE_EXCEEDED)

    async def wait_primary(self) -> None:
        """Wait, without a deadline (a backup waits as long as the primary lives),
        until this connection is primary and finsy has checked or pushed the pipeline
        for it; SwitchConnectionError if the stream goes down meanwhile."""
        while not self.ready_as_primary:
            self.check_connected_stream()
            try:
                await within(self._ready_as_primary.wait(), 0.1)
            except TimeoutError:
                pass
        self.check_connected_stream()

    def check_connected_stream(self) -> None:
        """SwitchConnectionError once the P4Runtime stream is gone."""
        if self._ready_error is not None:
            raise self._ready_error
        if not self.switch.is_up:
            raise SwitchConnectionError(f"{self.name}: lost the P4Runtime connection to "
                                        f"{self.address}")

    # ---- requests: each with request_timeout_s, what comes back checked ----
    def _not_answering(self, rpc: str) -> SwitchNotAnswering:
        return SwitchNotAnswering(
            f"{self.name}: the switch at {self.address} did not answer a {rpc} within "
            f"{self.request_timeout_s:g} s (--timeout-s); its connection is up")

    async def _request(self, rpc: str, coro: Any) -> Any:
        try:
            return await within(coro, self.request_timeout_s)
        except TimeoutError:
            raise self._not_answering(rpc) from None
        except fy.P4ClientError as err:
            if err.code == fy.GRPCStatusCode.DEADLINE_EXCEEDED:
                raise self._not_answering(rpc) from None
            raise

    async def write(self, updates: Any) -> None:
        """finsy's Switch.write within request_timeout_s."""
        await self._request("Write", self.switch.write(updates))

    async def send_stream(self, message: Any) -> None:
        """One message on the P4Runtime stream (a PacketOut, a DigestListAck). gRPC
        allows one write in flight per stream: a second task writing meanwhile (a
        C-UPTA edge acks digests while it sends probes) fails with INTERNAL
        ("Internal error from Core"), which ends the switch's controller, and BMv2
        then stalls its pipeline on the digests nobody reads. So every stream write
        of this session takes one lock."""
        async with self._stream_write_lock:
            await self.switch.write([message])

    async def modify(self, entities: Any) -> None:
        await self._request("Write", self.switch.modify(entities))

    async def read(self, entities: Any) -> list[Any]:
        """finsy's Switch.read within request_timeout_s (the whole answer), each
        entity decoded on its own: one the P4Info does not know (an unknown table or
        counter id, a bad value) is counted as malformed and left out."""
        return await self._request("Read", self._read_all(entities))

    async def _read_all(self, entities: Any) -> list[Any]:
        if isinstance(entities, p4entity.P4Entity):
            entities = [entities]
        schema = self.switch.p4info
        request = p4r.ReadRequest(device_id=self.switch.device_id,
                                  entities=p4entity.encode_entities(entities, schema))
        client = self.switch._p4client
        if client is None:
            raise SwitchConnectionError(f"{self.name}: not connected to {self.address}")
        result = []
        async for reply in client.request_iter(request):
            for entity in reply.entities:
                try:
                    result.append(p4entity.decode_entity(entity, schema))
                except (ValueError, TypeError, KeyError, IndexError, OverflowError,
                        AssertionError) as exc:
                    self.malformed.add(f"read {entity.WhichOneof('entity') or 'entity'}",
                                       f"{type(exc).__name__}: {exc}")
        return result


async def within(awaitable: Any, timeout_s: float) -> Any:
    """await awaitable, TimeoutError after timeout_s. Not asyncio.wait_for: on
    Python 3.11 it returns the result and drops a cancellation that arrives in the
    same loop step as the result (CPython gh-86296), so a cancelled controller loop
    could run on; asyncio.timeout keeps the cancellation."""
    async with asyncio.timeout(timeout_s):
        return await awaitable


async def wait_for_grpc(address: str, timeout_s: float = GRPC_WAIT_TIMEOUT_S,
                        attempt_timeout_s: float = TCP_CONNECT_TIMEOUT_S, *,
                        name: str = "") -> None:
    """Wait until a TCP connect to the P4Runtime address succeeds, at most timeout_s
    (each connect attempt at most attempt_timeout_s: an address that drops SYNs
    would otherwise hold one attempt for the kernel's ~2 min of SYN retries)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        remaining = deadline - loop.time()
        try:
            await tcp_connect_once(address, max(min(attempt_timeout_s, remaining), 0.001))
            return
        except (OSError, TimeoutError):
            if loop.time() >= deadline:
                who = f"{name}: " if name else ""
                raise TimeoutError(f"{who}no P4Runtime server at {address} after "
                                   f"{timeout_s:g} s") from None
            await asyncio.sleep(min(0.1, max(deadline - loop.time(), 0)))


async def tcp_connect_once(address: str, timeout_s: float = TCP_CONNECT_TIMEOUT_S) -> None:
    """One TCP connect to host:port within timeout_s (OSError or TimeoutError)."""
    host, _, port = address.rpartition(":")
    _, writer = await within(asyncio.open_connection(host.strip("[]"), int(port)), timeout_s)
    writer.close()
    await writer.wait_closed()
