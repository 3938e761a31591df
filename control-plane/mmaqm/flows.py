"""Active-flow counting for D-CBT (dcbt §3.1 "active flow counting unit").

A flow is active if a packet of it arrived in the last expiry interval (300 ms
in the paper). The switch reports each flow at least twice per interval
(flow_report.p4, config.flow_epoch_shift_for); the controller feeds every
report to :meth:`ActiveFlowTable.observe`, calls :meth:`expire` at its update
interval, and reads :meth:`counts` to compute the class shares
(algorithms.dcbt.class_shares). Flows are kept per egress port: the same
5-tuple on two ports is two flows. A flow belongs to one class: a report with
another class moves it there.

A report is timed by when its packet arrived at the switch (the digest's
ingress_ts_us), mapped to the controller's clock by :class:`SwitchClock`, not
by when the controller got to it: a backlog of reports must not make old
flows look active, nor a stalled loop expire flows that are still sending.

The table holds at most max_flows flows (config active_flows.max_flows): a
report of a new flow beyond it is refused and counted (:attr:`refused`); its
flow is not counted until an old one expires.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Hashable
from dataclasses import dataclass

from . import p4constants as C

# The classes counted (CLASS_TCP, CLASS_TAGGED, CLASS_UNTAGGED of defines.p4).
COUNTED_CLASSES: tuple[int, ...] = tuple(sorted(C.CLASSES.values()))


# Default cap on the flows the controller tracks (config active_flows.max_flows):
# 4 x the data plane's FLOW_SLOTS, 2.5 x the 100 000 active flows the controller
# is measured to track (docs/reliability.md); about 300 bytes of Python objects per flow (key tuple, entry), so
# ~80 MB at the cap.
DEFAULT_MAX_FLOWS = 262_144


@dataclass(frozen=True)
class FlowEntry:
    class_id: int
    last_seen_ms: float


class ActiveFlowTable:
    """Last report time and class of every flow, per egress port, at most
    max_flows flows in all.

    Each port's flows are kept in the order of their last report, so expire()
    only looks at the oldest ones and counts() is kept current as flows come and
    go: both stay cheap at 100 000 flows. Reports timed out of order (a time
    earlier than the newest one already seen) keep their own time but not their
    place: such a flow is forgotten at most that much later.
    """

    def __init__(self, max_flows: int = DEFAULT_MAX_FLOWS) -> None:
        if isinstance(max_flows, bool) or not isinstance(max_flows, int) or max_flows < 1:
            raise ValueError(f"max_flows must be an int >= 1, got {max_flows!r}")
        self.max_flows = max_flows
        # port -> {flow key: [class_id, last_seen_ms]}, oldest report first
        self._flows: dict[int, dict[Hashable, list]] = {}
        self._counts: dict[int, dict[int, int]] = {}
        # the IPv6 flows among _counts (a key whose source is an IPv6Address,
        # p4rt.codec.FlowReport): the IPv4 ones are the rest
        self._counts6: dict[int, dict[int, int]] = {}
        self._size = 0
        self.refused = 0          # reports of new flows refused because the table was full

    def observe(self, port: int, class_id: int, flow_key: tuple[Hashable, ...],
                now_ms: float) -> bool:
        """A report of flow_key, class class_id, on egress port, made at now_ms.

        The class is replaced by the latest report's; the time never moves
        backwards (a late, reordered report does not shorten the flow's life).
        False (and counted in refused) when the flow is new and the table holds
        max_flows flows already.
        """
        if class_id not in COUNTED_CLASSES:
            raise ValueError(f"class_id {class_id!r} is not one of {C.CLASSES}")
        flows = self._flows.get(port)
        if flows is None:
            if self._size >= self.max_flows:
                self.refused += 1
                return False
            flows = self._flows[port] = {}
            self._counts[port] = dict.fromkeys(COUNTED_CLASSES, 0)
            self._counts6[port] = dict.fromkeys(COUNTED_CLASSES, 0)
        counts = self._counts[port]
        old = flows.get(flow_key)
        if old is None:
            if self._size >= self.max_flows:
                self.refused += 1
                return False
            flows[flow_key] = [class_id, now_ms]
            counts[class_id] += 1
            if _is_ipv6(flow_key):
                self._counts6[port][class_id] += 1
            self._size += 1
            return True
        if old[0] != class_id:
            counts[old[0]] -= 1
            counts[class_id] += 1
            if _is_ipv6(flow_key):
                counts6 = self._counts6[port]
                counts6[old[0]] -= 1
                counts6[class_id] += 1
            old[0] = class_id
        if now_ms > old[1]:
            old[1] = now_ms
            del flows[flow_key]          # to the end: the newest report
            flows[flow_key] = old
        return True

    def expire(self, now_ms: float, expiry_interval_ms: float) -> int:
        """Forget flows whose last report is older than expiry_interval_ms; return how many."""
        if not expiry_interval_ms > 0:
            raise ValueError(f"expiry_interval_ms must be > 0, got {expiry_interval_ms!r}")
        removed = 0
        for port in list(self._flows):
            flows = self._flows[port]
            counts = self._counts[port]
            counts6 = self._counts6[port]
            stale = []
            for key, entry in flows.items():          # oldest first
                if not now_ms - entry[1] > expiry_interval_ms:
                    break
                stale.append(key)
            for key in stale:
                class_id = flows.pop(key)[0]
                counts[class_id] -= 1
                if _is_ipv6(key):
                    counts6[class_id] -= 1
            removed += len(stale)
            if not flows:
                del self._flows[port], self._counts[port], self._counts6[port]
        self._size -= removed
        return removed

    def counts(self, port: int) -> dict[int, int]:
        """{class_id: active flows} for TCP, TAGGED and UNTAGGED, zeros included."""
        counts = self._counts.get(port)
        return dict(counts) if counts is not None else dict.fromkeys(COUNTED_CLASSES, 0)

    def counts_by_family(self, port: int) -> dict[str, dict[int, int]]:
        """{"ipv4": {class_id: n}, "ipv6": {class_id: n}}: counts() split by the
        flows' address family (an IPv6 report's addresses are IPv6Address,
        an IPv4 one's integers; docs/ipv6.md). The two add up to counts()."""
        total = self.counts(port)
        six = self._counts6.get(port)
        six = dict(six) if six is not None else dict.fromkeys(COUNTED_CLASSES, 0)
        return {"ipv4": {c: total[c] - six[c] for c in total}, "ipv6": six}

    def flow_keys(self, port: int) -> list[Hashable]:
        """The active flows' keys on port (5-tuples, as the reports carry them)."""
        return list(self._flows.get(port, {}))

    def ports(self) -> set[int]:
        """Ports with at least one active flow."""
        return set(self._flows)

    def flow_class(self, port: int, flow_key: tuple[Hashable, ...]) -> int | None:
        entry = self._flows.get(port, {}).get(flow_key)
        return None if entry is None else entry[0]

    def entry(self, port: int, flow_key: tuple[Hashable, ...]) -> FlowEntry | None:
        """The flow's class and last report time, or None."""
        entry = self._flows.get(port, {}).get(flow_key)
        return None if entry is None else FlowEntry(class_id=entry[0], last_seen_ms=entry[1])

    def __len__(self) -> int:
        return self._size


class SwitchClock:
    """Maps a switch's report times to the controller's clock.

    A report's time counts microseconds since the switch started and wraps at
    modulus_us (the target's report_ts_modulus_us: 2^48 on BMv2, 8.9 years; 2^32
    units of 1.024 us on Tofino, 73.3 minutes): a time that is less than half a
    wrap after the newest one is later than it. The offset between the two clocks is
    estimated as the smallest (controller time at receipt - switch time) seen:
    the report that reached the controller fastest. That estimate may rise by
    at most max_drift_ppm of the time elapsed (the clocks drift, or the switch
    clock was set back), so a backlog of late reports, however long, moves it
    by no more than that. A time more than restart_us before the newest one is a
    restarted switch (its clock began again at 0): the mapping starts afresh, as
    it does after reset() (the controller calls it when it installs a switch).
    A mapped time is never later than the controller's now.
    """

    def __init__(self, *, modulus_us: float = float(1 << 48), restart_us: int = 1_000_000,
                 max_drift_ppm: float = 1000.0) -> None:
        if not modulus_us > 2 * restart_us:
            raise ValueError(f"modulus_us must exceed 2 * restart_us, got {modulus_us}")
        self._modulus = modulus_us
        self._half = modulus_us / 2
        self.restart_us = restart_us
        self.max_drift = max_drift_ppm / 1e6
        self.restarts = 0            # mapping restarts on a backwards jump
        self.reset()

    def reset(self) -> None:
        self._last_raw: int | None = None
        self._last_us = 0            # the newest switch time, unwrapped
        self._offset_ms = 0.0        # controller ms - switch ms
        self._offset_at_ms = 0.0

    def to_local_ms(self, ts_us: int, now_ms: float) -> float:
        """The controller time (ms) of switch time ts_us, a report received at now_ms."""
        if self._last_raw is None:
            return self._start(ts_us, now_ms)
        delta = (ts_us - self._last_raw) % self._modulus
        if delta >= self._half:
            delta -= self._modulus           # earlier than the newest: reordered
            if delta < -self.restart_us:
                self.restarts += 1
                return self._start(ts_us, now_ms)
            switch_us = self._last_us + delta
        else:
            switch_us = self._last_us = self._last_us + delta
            self._last_raw = ts_us
        switch_ms = switch_us / 1000
        sample = now_ms - switch_ms
        if sample <= self._offset_ms:
            self._offset_ms = sample
            self._offset_at_ms = now_ms
        else:
            rise = (now_ms - self._offset_at_ms) * self.max_drift
            if rise > 0:
                self._offset_ms = min(sample, self._offset_ms + rise)
                self._offset_at_ms = now_ms
        return min(switch_ms + self._offset_ms, now_ms)

    def _start(self, ts_us: int, now_ms: float) -> float:
        self._last_raw = ts_us
        self._last_us = ts_us
        self._offset_ms = now_ms - ts_us / 1000
        self._offset_at_ms = now_ms
        return now_ms


def _is_ipv6(flow_key: tuple[Hashable, ...]) -> bool:
    """A flow key of an IPv6 report: its source address is an IPv6Address."""
    return isinstance(flow_key[0], ipaddress.IPv6Address)
