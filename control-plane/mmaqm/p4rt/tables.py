"""Table and clone-session writes, and the switch's state as reconcile
reads it (a mixin of driver.SwitchDriver: it uses the session's finsy Switch
and target)."""

from __future__ import annotations

import time
from collections.abc import Iterable

import finsy as fy
from finsy.proto import p4r

from .. import reconcile as R
from ..algorithms.base import PortPolicy
from ..encoding import PolicyAction, policy_epoch_from_clock
from .codec import (TABLE_POLICY, _UPDATE, _check_port, _replicas, check_action,
                    check_policy_in_program, from_finsy_entry, packet_out_metadata,
                    to_finsy)


class TableWrites:
    # ---- table writes -------------------------------------------------
    async def clear(self) -> None:
        """Delete every table entry and clone session this program has (not the
        pipeline), and reset the tables' default actions: finsy's delete_all, except
        that the digest configuration stays. Deleting it while PI is building a digest
        list aborts simple_switch_grpc (PI digest_mgr.cpp DigestData::reset():
        `assert(cache.empty())` fails while entries of the unsent list are cached),
        which a controller restarted under traffic did to a switch. The digest config
        is rewritten by enable_flow_reports."""
        await self._request("Write", self.switch.delete_many(
            [fy.P4TableEntry(), fy.P4MulticastGroupEntry(), fy.P4CloneSessionEntry()]))
        defaults = [fy.P4TableEntry(table.alias, is_default_action=True)
                    for table in self.switch.p4info.tables
                    if table.const_default_action is None and table.action_profile is None]
        if defaults:
            await self.modify(defaults)

    async def install_classifier(self, tagged_dscp: Iterable[int]) -> None:
        """(IP protocol, DSCP) -> class (cbt §3): TCP, tagged UDP, else untagged."""
        await self.write([+to_finsy(e) for e in R.classifier_entries(tagged_dscp)])

    async def install_route(self, prefix: str, port: int, src_mac: str, next_hop_mac: str) -> None:
        route = R.route_entry(prefix, port, src_mac, next_hop_mac)
        await self.write([+to_finsy(e) for e in self.route_entries(route)])

    def route_entries(self, route: R.TableEntry) -> list[R.TableEntry]:
        """A route's entries: itself, and on a program with ipv4_answer_lpm (Tofino's
        UPTA build, which routes packets to this router's addresses there) an IPv4
        route's copy in it."""
        if route.table == R.TABLE_ROUTES and R.TABLE_ANSWER_ROUTES in self.table_aliases:
            return [route, R.answer_route_entry(route)]
        return [route]

    async def install_upta_edge_port(self, port: int, *, cpu: bool = False) -> None:
        await self.write([+to_finsy(R.upta_edge_port_entry(port, cpu=cpu))])

    async def install_upta_local_addr(self, addr: str) -> None:
        """One of this router's addresses (BFD endpoint): an entry of the table
        upta_local_addr on every target."""
        await self.write([+to_finsy(R.upta_local_addr_entry(addr))])

    async def install_upta_bfd_path(self, prefix: str, path: int) -> None:
        await self.write([+to_finsy(R.upta_bfd_path_entry(prefix, path))])

    async def send_probe(self, port: int, datagram: bytes) -> None:
        """C-UPTA ingress edge: one QoS Probe (an IPv4 datagram, upta_control.probe_datagrams)
        as a P4Runtime PacketOut. Its metadata is the P4Info's packet_out header, filled
        by the target (Target.packet_out_metadata): none on v1model, where BMv2
        (--cpu-port) injects the payload as a frame arriving on its CPU port, an
        `upta_cpu` entry of upta_edge_port; on Tofino the egress port and the
        PacketOut ether type, by which the parser marks the probe as the
        controller's. The P4 routes it like data (port is the path's output port:
        routing decides) and lowers it on every upta port (eqs. 25-26). finsy's
        P4PacketOut (which requires metadata) is bypassed. The Ethernet addresses are
        placeholders: the route rewrites them."""
        _check_port(port)
        metadata = packet_out_metadata(self.switch.p4info.p4info,
                                       self.target.packet_out_metadata(port))
        frame = b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02" + b"\x08\x00" + datagram
        await self._request("Write", self.send_stream(p4r.StreamMessageRequest(
            packet=p4r.PacketOut(payload=frame, metadata=metadata))))

    async def install_cut_in_slot_session(self, port: int) -> None:
        """The clone session of ChIPS's FIFO slot clones for one port (chips.p4):
        session CHIPS_CLONE_SESSION_BASE + port replicates to the port itself."""
        await self.write([+to_finsy(R.cut_in_slot_session(port))])

    def clone_sessions(self, cut_in_ports: Iterable[int]) -> list[R.CloneSession]:
        """The clone sessions this program needs (ChIPS's slot sessions of these
        ports, and whatever else the target needs: targets)."""
        return self.target.clone_sessions(cut_in_ports)

    # ---- reconciling (install) ---------------------------------------
    async def read_state(self) -> R.SwitchState:
        """Every table entry, clone session and multicast group of the program in ONE
        ReadRequest (a wildcard read of each kind), then each digest config in one
        more (they cannot be read by wildcard, and simple_switch_grpc fails a whole
        ReadRequest with NOT_FOUND when one is not configured), as reconcile's data."""
        wanted: list[fy.P4Entity] = [fy.P4TableEntry(), fy.P4CloneSessionEntry(),
                                     fy.P4MulticastGroupEntry()]
        entries, clones, groups, digests = [], [], [], []
        for entity in await self.read(wanted):
            if isinstance(entity, fy.P4TableEntry):
                if not entity.is_default_action and not entity.is_const:
                    try:
                        entries.append(from_finsy_entry(entity))
                    except (ValueError, TypeError) as exc:
                        self.malformed.add("read table_entry", str(exc))
            elif isinstance(entity, fy.P4CloneSessionEntry):
                try:
                    clones.append(R.CloneSession(entity.session_id, _replicas(entity.replicas),
                                                 entity.class_of_service,
                                                 entity.packet_length_bytes))
                except (ValueError, TypeError, AttributeError) as exc:
                    self.malformed.add("read clone_session_entry", str(exc))
            elif isinstance(entity, fy.P4MulticastGroupEntry):
                try:
                    groups.append(R.MulticastGroup(entity.multicast_group_id,
                                                   _replicas(entity.replicas)))
                except (ValueError, TypeError, AttributeError) as exc:
                    self.malformed.add("read multicast_group_entry", str(exc))
        for digest in self.switch.p4info.digests:
            try:
                for entity in await self.read(fy.P4DigestEntry(digest.alias)):
                    digests.append(R.DigestConfig(str(entity.digest_id), entity.max_list_size,
                                                  entity.max_timeout_ns, entity.ack_timeout_ns))
            except fy.P4ClientError as err:
                if err.code != fy.GRPCStatusCode.NOT_FOUND:
                    raise
        return R.SwitchState(tuple(digests), tuple(clones), tuple(groups), tuple(entries))

    def check_ipv6_routes(self) -> None:
        """Refuse (ValueError), before any write, an IPv6 route on a program without
        the ipv6_lpm table (the Tofino build; docs/ipv6.md)."""
        if R.TABLE_ROUTES6 not in self.table_aliases:
            raise ValueError(f"switch {self.name}: the loaded program has no {R.TABLE_ROUTES6} "
                             "table, so it cannot take IPv6 routes (only the BMv2 programs "
                             "route IPv6; docs/ipv6.md)")

    async def apply_writes(self, plan: R.WritePlan) -> None:
        """Send each batch of the plan as one Write RPC, in order (each must succeed
        before the next is sent). Port policies are checked against the P4Info first."""
        for write in plan.writes:       # a profile lacks the other algorithms: say which has it
            entity = write.entity
            if write.type != R.DELETE and isinstance(entity, R.TableEntry) \
                    and entity.table == TABLE_POLICY:
                check_policy_in_program(self.switch.p4info, self.name, dict(entity.match)["port"],
                                        PolicyAction(entity.action, dict(entity.params)))
            if write.type != R.DELETE and isinstance(entity, R.TableEntry) \
                    and entity.table == R.TABLE_ROUTES6:
                self.check_ipv6_routes()
        for write in plan.writes:
            entity = write.entity
            if write.type != R.DELETE and isinstance(entity, R.TableEntry) \
                    and entity.table == TABLE_POLICY:
                action = PolicyAction(entity.action, dict(entity.params))
                check_action(self.switch.p4info, TABLE_POLICY, action)
                self.target.check_action(action)
        for batch in plan.batches:
            updates = [_UPDATE[w.type](to_finsy(w.entity)) for w in batch]
            if updates:
                await self.write(updates)

    async def reset_defaults(self) -> int:
        """Reset the default action of every table whose default is not const (P4Info
        does not say what its initial one is, so this cannot tell whether it changed:
        it resets them all; the mmaqm program has none). Returns how many."""
        defaults = [fy.P4TableEntry(table.alias, is_default_action=True)
                    for table in self.switch.p4info.tables
                    if table.const_default_action is None and table.action_profile is None]
        if defaults:
            await self.modify(defaults)
        return len(defaults)

    async def read_port_policy(self, port: int) -> PolicyAction | None:
        """The port's installed port_policy action, or None."""
        _check_port(port)
        for entry in await self.read(
            fy.P4TableEntry(TABLE_POLICY, match=fy.Match(port=port))
        ):
            action = entry.action
            if not isinstance(action, fy.P4TableAction):
                self.malformed.add("read table_entry", f"{TABLE_POLICY} without a direct action")
                return None
            return PolicyAction(action.name, {k: int(v) for k, v in (action.args or {}).items()})
        return None

    async def write_port_policy(self, port: int, action: PolicyAction,
                                policy: PortPolicy | None = None) -> None:
        """Insert or modify the port's policy entry (one atomic table write); then,
        on a target with range tables, the port's entries that encode it
        (targets: old ones deleted first, so that no two overlap; meanwhile the
        tables' defaults hold: no RED drop, no class test). With the port's
        policy (its configuration), the target checks it first as well
        (Target.check_policy: on Tofino, its Lpf filters' time constants)."""
        _check_port(port)
        check_policy_in_program(self.switch.p4info, self.name, port, action)
        check_action(self.switch.p4info, TABLE_POLICY, action)
        self.target.check_action(action)
        if policy is not None:
            self.target.check_policy(port, policy, action)
        ranges = self.range_entries(port, action)
        exists = await self.read_port_policy(port) is not None
        entry = fy.P4TableEntry(
            TABLE_POLICY,
            match=fy.Match(port=port),
            action=fy.Action(action.name, **dict(action.params)),
        )
        await self.write([~entry if exists else +entry])
        if self.target.range_tables:
            await self._write_range_entries(port, ranges)

    def range_entries(self, port: int, action: PolicyAction) -> list[R.TableEntry]:
        """The target's range-table entries of the port's policy, for the range
        tables this program has (none on v1model)."""
        return [e for e in self.target.range_entries(port, action)
                if e.table in self.table_aliases]

    async def _write_range_entries(self, port: int, desired: list[R.TableEntry]) -> None:
        tables = [t for t in self.target.range_tables if t in self.table_aliases]
        current = []
        for entity in await self.read([fy.P4TableEntry(t) for t in tables]):
            try:
                entry = from_finsy_entry(entity)
            except (ValueError, TypeError) as exc:
                self.malformed.add("read table_entry", str(exc))
                continue
            if dict(entry.match).get("port") == port:
                current.append(entry)
        upserts, deletes = R.diff_entities(current, desired)
        if deletes:
            await self.write([-to_finsy(w.entity) for w in deletes])
        if upserts:
            await self.write([_UPDATE[w.type](to_finsy(w.entity)) for w in upserts])

    def new_policy_epoch(self, port: int, installed: int | None) -> int:
        """A new epoch for the port, whose installed entry has epoch `installed` (None:
        no entry or no epoch); see encoding.policy_epoch_from_clock."""
        _check_port(port)
        return policy_epoch_from_clock(time.time_ns(), installed)

    async def next_policy_epoch(self, port: int) -> int:
        """An epoch that the port's packets have never carried, so a new policy
        resets its averages (red.p4 red_on_policy_epoch); see
        encoding.policy_epoch_from_clock."""
        current = await self.read_port_policy(port)
        installed = None if current is None else current.params.get("policy_epoch")
        return policy_epoch_from_clock(time.time_ns(), installed)
