"""P4Runtime access to one mmaqm switch, over finsy.

The driver hides how each input arrives (counters, digests) and how each
output leaves (table entries). BMv2's P4Runtime server cannot read or write
registers (docs/design.md): only the Tofino target's occupancy audit
(p4rt.registers) touches one.

Names are the P4Info aliases of p4src/v1model/main.p4; the programs of other
targets keep them, and where their P4Info differs (the digest's name,
port_policy's action list) the driver resolves it by name, never by id or
position (p4rt.codec); what a target lays out differently, its ``Target`` says
(mmaqm.targets).

``SwitchDriver`` is made of one part per concern, each in its own module of
mmaqm.p4rt: the connection (session), table writes and reads (tables),
counters (counters), the occupancy audit's registers (registers) and flow
reports (digests).
"""

from __future__ import annotations

from .p4rt.codec import (CounterValue, FlowReport, check_action, describe_error, flow_digest_alias,
                         from_finsy_entry, policy_actions_missing, to_finsy)
from .p4rt.counters import CounterReads
from .p4rt.registers import OccupancyRegisters
from .p4rt.digests import DIGEST_QUEUE_LISTS, FlowReportStream
from .p4rt.session import (CONNECT_TIMEOUT_S, CONTROLLER_ELECTION_ID, DEFAULT_BMV2_JSON,
                           DEFAULT_P4INFO, GRPC_WAIT_TIMEOUT_S, REQUEST_TIMEOUT_S,
                           TCP_CONNECT_TIMEOUT_S, P4RuntimeSession, PrimaryLostError,
                           SwitchConnectionError, SwitchNotAnswering, TlsConfig,
                           tcp_connect_once, wait_for_grpc)
from .p4rt.tables import TableWrites


class SwitchDriver(TableWrites, CounterReads, OccupancyRegisters, FlowReportStream,
                   P4RuntimeSession):
    """One P4Runtime connection to an mmaqm switch and everything done over it
    (see P4RuntimeSession for connecting, arbitration and deadlines)."""


__all__ = ["CONNECT_TIMEOUT_S", "CONTROLLER_ELECTION_ID", "DEFAULT_BMV2_JSON", "DEFAULT_P4INFO",
           "DIGEST_QUEUE_LISTS", "GRPC_WAIT_TIMEOUT_S", "REQUEST_TIMEOUT_S", "SwitchNotAnswering",
           "TlsConfig",
           "TCP_CONNECT_TIMEOUT_S", "CounterValue", "FlowReport", "PrimaryLostError",
           "SwitchConnectionError", "SwitchDriver", "check_action", "describe_error",
           "flow_digest_alias", "from_finsy_entry", "policy_actions_missing", "tcp_connect_once",
           "to_finsy", "wait_for_grpc"]
