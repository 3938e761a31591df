"""The flow reports (flow_report.p4's digest), decoded fast and acknowledged
(a mixin of driver.SwitchDriver)."""

from __future__ import annotations

import asyncio
import ipaddress
from operator import ge
from collections.abc import AsyncIterator

import finsy as fy

from .. import p4constants as C
from .. import reconcile as R
from .codec import FlowReport, _already_exists, to_finsy

# The classes a flow report may carry (defines.p4's CLASS_*); any other is malformed.
REPORTED_CLASSES = frozenset(C.CLASSES.values())

# Flow digest lists that may wait for the controller (flow_reports; finsy's own
# queue, 50 lists of up to 64 reports, overflowed under 100 000 flows).
DIGEST_QUEUE_LISTS = 2048


class FlowReportStream:
    # ---- digests ------------------------------------------------------
    async def enable_flow_reports(self, *, max_list_size: int = 64, max_timeout_ms: int = 10) -> None:
        """Configure the flow digest: insert it, or, when an earlier controller left it
        configured (clear() keeps it), modify it to these settings (a MODIFY never
        resets PI's digest state, unlike a DELETE)."""
        config = R.flow_digest_config(max_list_size, max_timeout_ms,
                                      digest=self.flow_digest)
        try:
            await self.write([+to_finsy(config)])
        except fy.P4ClientError as err:
            if err.code != fy.GRPCStatusCode.UNKNOWN or not _already_exists(err):
                raise
            await self.write([~to_finsy(config)])

    async def flow_reports(self) -> AsyncIterator[list[FlowReport]]:
        """Digest lists as FlowReports, each list acknowledged as soon as it is taken.

        finsy (0.30) decodes every digest member through its P4Info type as the
        stream delivers it, about 50-90 us per report on this machine, in the task
        that also reads the stream: that capped the controller near 10 000 reports/s.
        Here the flow digest's lists bypass it: the stream task only
        queues the raw DigestList (other digests still go to finsy's handler);
        this iterator acks each list, then decodes its bitstrings directly (about
        10 us per report). At most DIGEST_QUEUE_LISTS lists wait; one arriving
        beyond them is dropped unacknowledged and counted in digest_lists_dropped."""
        schema = self.switch.p4info
        digest = schema.digests[self.flow_digest]
        names = list(digest.type_spec.members)
        index = {name: names.index(name) for name in (
            "egress_port", "class_id", "src_addr", "dst_addr", "protocol", "src_port",
            "dst_port")}
        ts_index = names.index("ingress_ts_us") if "ingress_ts_us" in names else None
        # v1model's digest carries either family (128-bit addresses, an IPv4 one
        # zero-extended, and ip_version 4 or 6); TNA's is IPv4's (32-bit addresses)
        ver_index = names.index("ip_version") if "ip_version" in names else None
        # every member's bit width: a member wider than it, a missing one or an item
        # that is not a struct is malformed (counted, the item dropped, the list goes on)
        structs = schema.p4info.type_info.structs
        widths = [member.type_spec.bitstring.bit.bitwidth or
                  member.type_spec.bitstring.varbit.max_bitwidth or 64
                  for member in structs[digest.pbuf.type_spec.struct.name].members]
        limits = [1 << w for w in widths]
        count = len(names)
        malformed = self.malformed.add
        to_us = self.target.ts_to_us          # the target's clock unit -> us
        queue: asyncio.Queue = asyncio.Queue(DIGEST_QUEUE_LISTS)
        switch = self.switch
        finsy_handler = switch._stream_digest_message

        def on_digest(msg) -> None:     # in finsy's stream task: no decoding here
            if msg.digest.digest_id != digest.id:
                finsy_handler(msg)
            elif queue.full():
                self.digest_lists_dropped += 1
            else:
                queue.put_nowait(msg.digest)

        switch._stream_digest_message = on_digest
        port_i, class_i, src_i, dst_i, proto_i, sport_i, dport_i = index.values()
        from_bytes = int.from_bytes
        ipv6 = ipaddress.IPv6Address
        try:
            while True:
                digest_list = await queue.get()
                await self.send_stream(fy.P4DigestListAck(self.flow_digest, digest_list.list_id))
                reports = []
                for item in digest_list.data:
                    members = item.struct.members     # none when the item is not a struct
                    if len(members) != count:
                        malformed("malformed flow report", f"{item.WhichOneof('data')} of "
                                  f"{len(members)} members, the digest has {count}")
                        continue
                    bitstrings = [member.bitstring for member in members]
                    m = [from_bytes(b, "big") for b in bitstrings]
                    # a member that is not a bitstring has an empty one (BMv2 sends
                    # every member at its full width); a value wider than its member
                    if not all(bitstrings) or any(map(ge, m, limits)) \
                            or m[class_i] not in REPORTED_CLASSES:
                        malformed("malformed flow report", _describe(names, members, m))
                        continue
                    src, dst = m[src_i], m[dst_i]
                    if ver_index is not None:
                        version = m[ver_index]
                        if version == 6:
                            # IPv6Address objects: never equal to an IPv4 flow's
                            # ints, so the two families never share a key
                            src, dst = ipv6(src), ipv6(dst)
                        elif version != 4 or src >> 32 or dst >> 32:
                            malformed("malformed flow report", _describe(names, members, m))
                            continue
                    reports.append(FlowReport(
                        m[port_i], m[class_i],
                        (src, dst, m[proto_i], m[sport_i], m[dport_i]),
                        None if ts_index is None else to_us(m[ts_index])))
                yield reports
        finally:
            switch._stream_digest_message = finsy_handler


    async def enable_digest(self, alias: str, *, max_list_size: int = 64,
                            max_timeout_ms: int = 10) -> None:
        """Configure another digest of the program (C-UPTA's bfd_spec_digest_t and
        bfd_report_digest_t) as enable_flow_reports the flow digest."""
        if self.switch.p4info.digests.get(alias) is None:
            raise RuntimeError(f"the P4 program has no digest {alias!r}")
        config = R.flow_digest_config(max_list_size, max_timeout_ms, digest=alias)
        try:
            await self.write([+to_finsy(config)])
        except fy.P4ClientError as err:
            if err.code != fy.GRPCStatusCode.UNKNOWN or not _already_exists(err):
                raise
            await self.write([~to_finsy(config)])

    async def digest_items(self, alias: str) -> AsyncIterator[list[dict[str, int]]]:
        """The lists of another digest of the program (not the flow digest: flow_reports),
        each acknowledged, then its items as {member: value} (the caller checks them;
        upta_control.decode_spec_digest). The digest's configuration is part of the
        controller's desired state (controller.desired_state: the switch loops' digests)."""
        digest = self.switch.p4info.digests.get(alias)
        if digest is None:
            raise RuntimeError(f"the P4 program has no digest {alias!r}")
        if digest.id in self.digest_queues:
            raise RuntimeError(f"the digest {alias!r} already has a reader")
        type_spec = digest.type_spec
        queue: asyncio.Queue = asyncio.Queue(DIGEST_QUEUE_LISTS)
        self.digest_queues[digest.id] = queue
        try:
            while True:
                digest_list = await queue.get()
                await self.send_stream(fy.P4DigestListAck(alias, digest_list.list_id))
                out = []
                for item in digest_list.data:
                    try:
                        value = type_spec.decode_data(item)
                    except (ValueError, TypeError, KeyError) as err:
                        self.malformed.add(f"malformed {alias}", str(err))
                        continue
                    if isinstance(value, dict):
                        out.append({k: int(v) for k, v in value.items()})
                    else:
                        self.malformed.add(f"malformed {alias}", repr(value))
                yield out
        finally:
            del self.digest_queues[digest.id]

def _describe(names: list[str], members, values: list[int]) -> str:
    """A malformed flow report's members, each shortened."""
    parts = []
    for name, member, value in zip(names, members, values):
        kind = member.WhichOneof("data")
        shown = str(value) if value < 1 << 64 else f"{len(member.bitstring)}-byte value"
        parts.append(f"{name}={shown}" if kind == "bitstring" else f"{name}: a {kind}")
    return ", ".join(parts)
