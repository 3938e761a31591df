"""One P4Runtime connection to a switch, over finsy: arbitration, the pipeline
check or push, deadlines, and noticing a lost stream or a lost primary role."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import finsy as fy
from google.protobuf import text_format
from google.protobuf.empty_pb2 import Empty

from .. import reconcile as R
from .. import targets
from .codec import TABLE_POLICY, describe_error, flow_digest_alias, policy_actions_missing

LOG = logging.getLogger("mmaqm.driver")

# Every network wait has a deadline; cli.py's flags override the first two.
GRPC_WAIT_TIMEOUT_S = 20.0     # wait_for_grpc: a switch just started may not listen yet
CONNECT_TIMEOUT_S = 20.0       # channel, arbitration, pipeline check or push: SwitchDriver entry
TCP_CONNECT_TIMEOUT_S = 2.0    # one TCP connect of wait_for_grpc (a SYN-dropping address)
# finsy bounds every unary RPC (Write, Read, pipeline) at 10 s itself (p4client.py).
# Election ids (P4Runtime spec "Client Arbitration"): the highest connected one is
# primary and alone may write; a Read needs none ("Read RPC").
CONTROLLER_ELECTION_ID = 10    # run, install
READER_ELECTION_ID = 1         # stats: below the controller's, so a backup beside it

# The compiled program, relative to the working directory (make build writes it
# there in a checkout; an installed package is given --p4info and --bmv2-json).
DEFAULT_P4INFO = Path("build") / "main.p4info.txtpb"
DEFAULT_BMV2_JSON = Path("build") / "main.json"


class SwitchConnectionError(RuntimeError):
    """The P4Runtime server could not be reached or refused the connection."""


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
    ) -> None:
        for path in (p4info, bmv2_json) if push_pipeline else (p4info,):
            if not Path(path).exists():
                raise FileNotFoundError(f"{path} not found: run 'make build' first")
        # the device config: BMv2's JSON file, or a Tofino build directory (make
        # build-tna) packed as Stratum's BfPipelineConfig (targets.device_config)
        device_config: Path | bytes | None = None
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
        )
        self.name = name
        self.address = address
        self.require_primary = require_primary
        self.digest_lists_dropped = 0    # flow digest lists dropped: the queue was full
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
        # IPv6 flows' reports (flow6_digest_t): BMv2 programs only
        self.flow6_digest = (R.DIGEST_FLOW6 if self.switch.p4info.digests.get(R.DIGEST_FLOW6)
                             is not None else None)
        self._open = False
        self._local_addrs: set[int] = set()     # a target's upta_local_addr value set
        # finsy announces the pipeline ready (CHANNEL_READY) after its arbitration and,
        # when primary, its pipeline check or push (switch.py Switch._ready); it runs
        # that again after a backup connection becomes primary (BECOME_PRIMARY).
        self._ready_as_primary = asyncio.Event()
        self.switch.ee.on(fy.SwitchEvent.CHANNEL_READY, self._on_ready)
        for event in (fy.SwitchEvent.BECOME_PRIMARY, fy.SwitchEvent.BECOME_BACKUP,
                      fy.SwitchEvent.CHANNEL_DOWN):
            self.switch.ee.on(event, self._on_not_ready)

    def _on_ready(self, switch: fy.Switch) -> None:
        if switch.is_primary:
            self._ready_as_primary.set()

    def _on_not_ready(self, _switch: fy.Switch) -> None:
        self._ready_as_primary.clear()

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
        try:
            await asyncio.wait_for(self.switch.__aenter__(), self.connect_timeout_s)
        except TimeoutError:     # finsy's __aenter__ cleans up on the cancellation
            raise TimeoutError(
                f"{self.name}: no P4Runtime answer from {self.address} within "
                f"{self.connect_timeout_s:g} s (connect, arbitration, pipeline)") from None
        except fy.P4ClientError as err:
            raise SwitchConnectionError(
                f"{self.name}: P4Runtime at {self.address} failed: {describe_error(err)}"
            ) from None

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Leave the connection (its finsy tasks and gRPC channel); idempotent."""
        if self._open:
            self._open = False
            self._ready_as_primary.clear()
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
        answer within finsy's 10 s (a stopped switch keeps its TCP connections)."""
        if not self.switch.is_up:
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
                await asyncio.wait_for(self._ready_as_primary.wait(), 0.1)
            except TimeoutError:
                pass
        self.check_connected_stream()

    def check_connected_stream(self) -> None:
        """SwitchConnectionError once the P4Runtime stream is gone."""
        if not self.switch.is_up:
            raise SwitchConnectionError(f"{self.name}: lost the P4Runtime connection to "
                                        f"{self.address}")

async def wait_for_grpc(address: str, timeout_s: float = GRPC_WAIT_TIMEOUT_S,
                        attempt_timeout_s: float = TCP_CONNECT_TIMEOUT_S) -> None:
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
                raise TimeoutError(f"no P4Runtime server at {address} after {timeout_s:g} s") \
                    from None
            await asyncio.sleep(min(0.1, max(deadline - loop.time(), 0)))


async def tcp_connect_once(address: str, timeout_s: float = TCP_CONNECT_TIMEOUT_S) -> None:
    """One TCP connect to host:port within timeout_s (OSError or TimeoutError)."""
    host, _, port = address.rpartition(":")
    _, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)),
                                       timeout_s)
    writer.close()
    await writer.wait_closed()
