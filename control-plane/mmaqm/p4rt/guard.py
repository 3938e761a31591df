"""What arrives from a switch is checked before it is used: malformed messages are
counted and logged (at most once a second per kind) and dropped, never raised into
a loop; and the arbitration keeps this client's own election id.

Arbitration (P4Runtime spec "Client Arbitration"): finsy's Arbitrator, when the
switch names a new primary below the highest id it has seen, bids again with that
highest id (p4arbitrator.py update/_request_primary), and on an election id in use
bids one lower. A controller then holds another client's id after that client left
(a one-off client with 2^128-1 left the controller at 2^128-1, and an operator's
later id 20 was refused). FixedElectionArbitrator bids only with its own id: the
switch's answer decides who is primary, and a backup becomes primary only when the
switch says so (OK with this client's id)."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

import finsy.switch as fy_switch
from finsy.p4arbitrator import Arbitrator
from finsy.grpcutil import GRPCStatusCode
from finsy.p4client import P4RpcStatus
from finsy.proto import U128, p4r

LOG = logging.getLogger("mmaqm.driver")
MALFORMED_LOG_INTERVAL_S = 1.0     # one log line per kind of malformed message at most this often
MAX_DETAIL_CHARS = 200             # of a malformed message's description in the log


def clip(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """One line, control characters escaped, at most limit characters."""
    text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= limit else text[:limit] + "..."


class MalformedCounter:
    """Messages from one switch dropped (malformed, or not asked for), counted per
    kind; each kind is logged at most once per MALFORMED_LOG_INTERVAL_S (with the
    count so far)."""

    def __init__(self, switch: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.switch = switch
        self.counts: Counter[str] = Counter()
        self._clock = clock
        self._logged_at: dict[str, float] = {}

    def add(self, kind: str, detail: str) -> None:
        self.counts[kind] += 1
        now = self._clock()
        last = self._logged_at.get(kind)
        if last is None or now - last >= MALFORMED_LOG_INTERVAL_S:
            self._logged_at[kind] = now
            LOG.warning("%s: dropped from the switch: %s (%s); %d so far",
                        self.switch, kind, clip(detail), self.counts[kind])

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class ElectionIdInUse(RuntimeError):
    """Another client of the switch holds this election id."""


class _QuietKnownFailures(logging.Filter):
    """finsy logs a task that failed with an exception as CRITICAL, with its
    traceback; an ElectionIdInUse is reported once by the session instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, ElectionIdInUse)


_QUIET = _QuietKnownFailures()


def quiet_known_failures() -> None:
    """Install the filter on finsy's logger (idempotent)."""
    logger = logging.getLogger("finsy")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)


class FixedElectionArbitrator(Arbitrator):
    """finsy's Arbitrator, bidding only with its own election id (module docstring).
    Arbitration updates are checked (device id, status); a malformed one is counted
    in `malformed` and ignored."""

    def __init__(self, election_id: int, role_name: str, role_config, *,
                 switch_name: str, malformed: MalformedCounter) -> None:
        super().__init__(election_id, role_name, role_config)
        self.switch_name = switch_name
        self.malformed = malformed

    async def handshake(self, switch: "fy_switch.Switch", *, conflict: bool = False) -> None:
        if conflict:        # the switch said our id is in use, after the first answer
            raise ElectionIdInUse(self._in_use_message())
        self.is_primary = False
        response = await self._arbitration_request(switch)
        code = self._status(response)
        if code is None:
            raise RuntimeError(f"{self.switch_name}: the switch answered the arbitration "
                               f"with an unknown status {response.status.code}")
        self.primary_id = U128.decode(response.election_id)
        self.is_primary = code == GRPCStatusCode.OK and self.primary_id == self.election_id

    async def _arbitration_request(self, switch: "fy_switch.Switch") -> p4r.MasterArbitrationUpdate:
        await self._send(switch)
        response = await self._receive(switch)
        if response is None:
            raise ElectionIdInUse(self._in_use_message())
        return response

    def _in_use_message(self) -> str:
        return (f"{self.switch_name}: election id {self.election_id} is in use by another "
                f"client of the switch; choose another (--election-id)")

    def _status(self, msg: p4r.MasterArbitrationUpdate) -> GRPCStatusCode | None:
        try:
            return P4RpcStatus.from_status(msg.status).code
        except (ValueError, TypeError):
            return None

    async def update(self, switch: "fy_switch.Switch", msg: p4r.MasterArbitrationUpdate) -> None:
        code = self._status(msg)
        if code is None or code not in (GRPCStatusCode.OK, GRPCStatusCode.ALREADY_EXISTS,
                                        GRPCStatusCode.NOT_FOUND):
            self.malformed.add("arbitration", f"status {msg.status.code}")
            return
        if msg.device_id != switch.device_id:
            self.malformed.add("arbitration", f"device id {msg.device_id}, this switch's "
                                              f"is {switch.device_id}")
            return
        primary_id = U128.decode(msg.election_id)
        if code == GRPCStatusCode.OK and primary_id != self.election_id:
            self.malformed.add("arbitration", f"OK for election id {primary_id}, this "
                                              f"client's is {self.election_id}")
            return
        self.primary_id = primary_id
        if code == GRPCStatusCode.OK:
            if not self.is_primary:
                self.is_primary = True
                switch._become_primary()
            return
        if self.is_primary:
            self.is_primary = False
            switch._become_backup()
        if code == GRPCStatusCode.NOT_FOUND:
            await self._send(switch)     # no primary: bid again, with our own id

    def _check_invariant(self) -> None:      # the switch's answer decides (update)
        return
