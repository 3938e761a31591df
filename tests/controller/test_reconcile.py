"""reconcile: the desired entries and the diff (plan_writes), with exact write lists
worked out by hand (the reinstall gap)."""

from __future__ import annotations

import pytest

from mmaqm import reconcile as R
from mmaqm.encoding import PolicyAction

DIGEST = R.flow_digest_config()
TCP_RULE, EF_RULE, AF41_RULE = R.classifier_entries([46, 34])
ROUTE_1 = R.route_entry("10.0.1.0/24", 1, "02:00:00:00:00:01", "02:00:00:01:00:01")
ROUTE_2 = R.route_entry("10.0.2.0/24", 2, "02:00:00:00:00:02", "02:00:00:02:00:01")
DROP_TAIL = PolicyAction("drop_tail", {"queue_limit_pkts": 64, "flow_epoch_shift": 17})
RED = PolicyAction("red", {"queue_limit_pkts": 60, "flow_epoch_shift": 17, "policy_epoch": 7,
                           "ewma_shift": 9, "min_th_scaled": 5 << 16, "max_th_scaled": 15 << 16,
                           "red_slope_q24": 167772, "idle_decay_q32": 0, "gentle": 0,
                           "max_p_q16": 0, "gentle_slope_q24": 0, "ecn": 0, "harddrop": 0,
                           "wait": 0})
DCBT = PolicyAction("dcbt", {**RED.params, "tagged_share_q16": 65536,
                             "untagged_th_scaled": 6 << 16})
CHIPS = PolicyAction("dcbt_chips", {**DCBT.params, "chips_ewma_shift": 9,
                                    "chips_tagged_share_limit_q16": 21845})
POLICY_1 = R.policy_entry(1, DROP_TAIL)
POLICY_2 = R.policy_entry(2, CHIPS)
SESSION_2 = R.cut_in_slot_session(2)
INSTALLED = R.SwitchState(digests=(DIGEST,), clone_sessions=(SESSION_2,),
                          entries=(TCP_RULE, EF_RULE, AF41_RULE, ROUTE_1, ROUTE_2,
                                   POLICY_1, POLICY_2))


def desired(**changes: object) -> R.SwitchState:
    from dataclasses import replace
    return replace(INSTALLED, **changes)


def test_the_entries_are_finsys_decoded_form() -> None:
    assert ROUTE_2 == R.TableEntry(
        "ipv4_lpm", (("ipv4_dst", (0x0A000200, 24)),), "route",
        (("dst_mac", 0x020000020001), ("port", 2), ("src_mac", 0x020000000002)), 0)
    assert TCP_RULE == R.TableEntry("classifier", (("ip_proto", (6, 0xFF)),), "set_class",
                                    (("class_id", 0),), 100)
    assert EF_RULE.match == (("dscp", (46, 0x3F)), ("ip_proto", (17, 0xFF)))
    assert EF_RULE.priority == 50 and dict(EF_RULE.params) == {"class_id": 1}
    assert SESSION_2 == R.CloneSession(102, ((2, 0),))
    assert DIGEST == R.DigestConfig("flow_digest_t", 64, 10_000_000, 1_000_000_000)
    assert INSTALLED.port_policies() == {1: DROP_TAIL, 2: CHIPS}


@pytest.mark.parametrize("bad, message", [
    (lambda: R.classifier_entries([46, 64]), "DSCP 64 outside 0..63"),
    (lambda: R.route_entry("10.0.2.0/24", 64, "02:00:00:00:00:02", "02:00:00:02:00:01"),
     "port 64 outside 0..63"),
    (lambda: R.route_entry("10.0.2.1/24", 2, "02:00:00:00:00:02", "02:00:00:02:00:01"),
     "host bits set"),
    (lambda: R.route_entry("10.0.2.0/24", 2, "02:00:00:00:00", "02:00:00:02:00:01"),
     "bad MAC"),
    (lambda: R.policy_entry(-1, DROP_TAIL), "port -1 outside"),
])
def test_bad_input_raises(bad, message) -> None:
    with pytest.raises(ValueError, match=message):
        bad()


def test_an_unchanged_state_is_no_write() -> None:
    assert R.plan_writes(INSTALLED, INSTALLED).batches == ()
    # the order of what was read does not matter
    shuffled = desired(entries=INSTALLED.entries[::-1])
    assert R.plan_writes(shuffled, INSTALLED).writes == []


def test_an_empty_switch_gets_everything_digest_and_sessions_first() -> None:
    plan = R.plan_writes(R.SwitchState(), INSTALLED)
    assert plan.batches == (
        (R.Write("INSERT", DIGEST), R.Write("INSERT", SESSION_2)),
        tuple(R.Write("INSERT", e) for e in INSTALLED.entries),
    )


def test_a_changed_route_next_hop_is_one_modify() -> None:
    moved = R.route_entry("10.0.2.0/24", 2, "02:00:00:00:00:02", "02:00:00:02:00:99")
    plan = R.plan_writes(INSTALLED, desired(entries=(TCP_RULE, EF_RULE, AF41_RULE, ROUTE_1,
                                                     moved, POLICY_1, POLICY_2)))
    assert plan.batches == ((R.Write("MODIFY", moved),),)


def test_a_removed_route_is_one_delete() -> None:
    plan = R.plan_writes(INSTALLED, desired(entries=(TCP_RULE, EF_RULE, AF41_RULE, ROUTE_1,
                                                     POLICY_1, POLICY_2)))
    assert plan.batches == ((R.Write("DELETE", ROUTE_2),),)


def test_a_route_to_a_new_prefix_is_inserted_before_the_old_one_is_deleted() -> None:
    wider = R.route_entry("10.0.0.0/16", 2, "02:00:00:00:00:02", "02:00:00:02:00:01")
    plan = R.plan_writes(INSTALLED, desired(entries=(TCP_RULE, EF_RULE, AF41_RULE, ROUTE_1,
                                                     wider, POLICY_1, POLICY_2)))
    assert plan.batches == ((R.Write("INSERT", wider),), (R.Write("DELETE", ROUTE_2),))


def test_a_removed_policy_deletes_its_entry_then_its_clone_session() -> None:
    plan = R.plan_writes(INSTALLED, desired(clone_sessions=(),
                                            entries=(TCP_RULE, EF_RULE, AF41_RULE, ROUTE_1,
                                                     ROUTE_2, POLICY_1)))
    assert plan.batches == ((R.Write("DELETE", POLICY_2),), (R.Write("DELETE", SESSION_2),))


def test_chips_to_dcbt_modifies_the_policy_before_deleting_its_session() -> None:
    dcbt_2 = R.policy_entry(2, DCBT)
    plan = R.plan_writes(INSTALLED, desired(clone_sessions=(),
                                            entries=(TCP_RULE, EF_RULE, AF41_RULE, ROUTE_1,
                                                     ROUTE_2, POLICY_1, dcbt_2)))
    assert plan.batches == ((R.Write("MODIFY", dcbt_2),), (R.Write("DELETE", SESSION_2),))


def test_a_changed_classifier_dscp_list_inserts_the_new_dscp_then_deletes_the_old() -> None:
    """[46, 34] -> [46, 10]: AF41 (34) goes, DSCP 10 comes; TCP and EF stay."""
    rules = R.classifier_entries([46, 10])
    assert rules[:2] == [TCP_RULE, EF_RULE]
    plan = R.plan_writes(INSTALLED, desired(entries=(*rules, ROUTE_1, ROUTE_2, POLICY_1,
                                                     POLICY_2)))
    assert plan.batches == ((R.Write("INSERT", rules[2]),), (R.Write("DELETE", AF41_RULE),))


def test_a_changed_digest_config_is_modified_and_an_unwanted_one_never_deleted() -> None:
    """Deleting the digest config while PI builds a list aborts simple_switch_grpc
    (driver.clear)."""
    faster = R.flow_digest_config(max_list_size=16, max_timeout_ms=5)
    assert R.plan_writes(INSTALLED, desired(digests=(faster,))).batches == \
        ((R.Write("MODIFY", faster),),)
    assert R.plan_writes(INSTALLED, desired(digests=())).batches == ()


def test_foreign_entries_and_groups_are_deleted_last() -> None:
    foreign = R.route_entry("192.168.0.0/16", 3, "02:00:00:00:00:03", "02:00:00:03:00:01")
    group = R.MulticastGroup(7, ((1, 0), (2, 0)))
    current = R.SwitchState(digests=(DIGEST,), clone_sessions=(SESSION_2,),
                            multicast_groups=(group,), entries=(*INSTALLED.entries, foreign))
    assert R.plan_writes(current, INSTALLED).batches == (
        (R.Write("DELETE", foreign),), (R.Write("DELETE", group),))


def test_two_desired_entries_with_one_key_are_refused() -> None:
    other = R.route_entry("10.0.1.0/24", 2, "02:00:00:00:00:02", "02:00:00:02:00:01")
    with pytest.raises(ValueError, match="two desired entities with one key"):
        R.plan_writes(R.SwitchState(), desired(entries=(ROUTE_1, other)))


def test_same_policy_ignores_the_epoch_and_what_the_loops_change() -> None:
    assert R.same_policy(RED, RED.with_params(policy_epoch=8))
    assert not R.same_policy(RED, RED.with_params(min_th_scaled=6 << 16))
    assert R.same_policy(DCBT, DCBT.with_params(tagged_share_q16=1000, untagged_th_scaled=1,
                                                policy_epoch=9))
    assert not R.same_policy(DCBT, CHIPS)               # another algorithm
    cbt = PolicyAction("cbt_red_all", {**RED.params, "tagged_th_scaled": 1,
                                       "untagged_th_scaled": 2})
    assert not R.same_policy(cbt, cbt.with_params(untagged_th_scaled=3))   # static for CBT
    mcdt = PolicyAction("mcdt", {"queue_limit_pkts": 100, "flow_epoch_shift": 17,
                                 "policy_epoch": 1, "tcp_th_pkts": 100, "tagged_th_pkts": 100,
                                 "untagged_th_pkts": 100, "mcdt_mode": 0})
    assert R.same_policy(mcdt, mcdt.with_params(tcp_th_pkts=5, policy_epoch=2))
    assert not R.same_policy(mcdt, mcdt.with_params(queue_limit_pkts=99))
    assert not R.same_policy(mcdt, mcdt.with_params(mcdt_mode=1))   # the mode is static
    assert not R.same_policy(None, RED) and not R.same_policy(RED, None)


def test_describe_writes_names_the_entity_and_the_changed_parameters() -> None:
    old = R.TableEntry.make(R.TABLE_POLICY, {"port": 2}, "drop_tail",
                            {"queue_limit_pkts": 7, "flow_epoch_shift": 17})
    new = R.TableEntry.make(R.TABLE_POLICY, {"port": 2}, "drop_tail",
                            {"queue_limit_pkts": 64, "flow_epoch_shift": 17})
    route = R.route_entry("10.0.2.0/24", 2, "02:00:00:00:00:02", "02:00:00:02:00:01")
    stray = R.TableEntry.make(R.TABLE_POLICY, {"port": 5}, "drop_tail",
                              {"queue_limit_pkts": 9, "flow_epoch_shift": 17})
    current = R.SwitchState(entries=(old, stray))
    desired = R.SwitchState(clone_sessions=(R.cut_in_slot_session(3),), entries=(new, route))
    plan = R.plan_writes(current, desired)
    assert R.describe_writes(current, plan) == [
        {"type": "INSERT", "CloneSession": R.cut_in_slot_session(3).key},
        {"type": "MODIFY", "table": "port_policy", "match": {"port": 2},
         "changed": {"queue_limit_pkts": [7, 64]}},
        {"type": "INSERT", "table": "ipv4_lpm", "match": {"ipv4_dst": [0x0A000200, 24]}},
        {"type": "DELETE", "table": "port_policy", "match": {"port": 5}},
    ]


def test_replicas_of_instance_0_decode_as_finsy_gives_them() -> None:
    """finsy decodes a replica of instance 0 as its port alone (an int). Reading such
    a clone session back once stopped a switch's controller in a soak ('int' object
    has no attribute 'port'); both forms decode to (port, instance)."""
    from finsy.p4entity import P4Replica
    from mmaqm.p4rt.codec import _replicas

    assert _replicas([5, P4Replica(6, instance=2)]) == ((5, 0), (6, 2))
