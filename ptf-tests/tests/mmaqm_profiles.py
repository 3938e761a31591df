"""The PTF suite against a BMv2 profile (run_ptf.py --profile NAME; make build
PROFILE=NAME): the program has one algorithm and DROP_TAIL
(p4src/v1model/profile.p4), so the suite's own DROP_TAIL baseline policy
(ptf-config.yaml) holds, and a test that installs another algorithm is skipped.
No ptf import: run_ptf.py reads this too."""

from __future__ import annotations

# The tests run on each profile (run_ptf.py --profile NAME; tools/run_tests.py runs
# them all in make test): a module, or module.Class for one test of a module shared by
# several algorithms, so that no test is started only to skip itself. Every profile
# also takes IPv6 (docs/ipv6.md) under its own algorithm and DROP_TAIL: admitted
# (Ipv6EveryAlgorithmTest) and dropped by its rule (Ipv6BurstTest). The rest of
# test_ipv6 (routing, parser discards, flow reports) is the shared pipeline's, run on
# the all-in-one program.
IPV6 = ("test_ipv6.Ipv6EveryAlgorithmTest", "test_ipv6.Ipv6BurstTest")
TESTS: dict[str, tuple[str, ...]] = {
    "DROP_TAIL": ("test_droptail", *IPV6),
    "RED": ("test_red", "test_red_options", "test_ipv6.Ipv6RedEcnTest", *IPV6),
    "CBT_RED_ALL": ("test_cbt.CbtClassThresholdTest", "test_cbt.CbtRedVariantTest",
                    "test_cbt.CbtClassAverageTest", "test_tag_guard.TagGuardCbtRedAllTest",
                    *IPV6),
    "CBT_RED_TCP_ONLY": ("test_cbt", "test_tag_guard.TagGuardCbtRedTcpOnlyTest", *IPV6),
    "DCBT": ("test_dcbt", "test_tag_guard.TagGuardDcbtTest", *IPV6),
    "DCBT_CHIPS": ("test_chips", "test_tag_guard.TagGuardDcbtChipsTest", *IPV6),
    "MCDT": ("test_mcdt", *IPV6),
    "FRED": ("test_fred", "test_ipv6.Ipv6FredMaxqStrikeTest", *IPV6),
    "UPTA": ("test_upta", "test_bfd", *IPV6),
}


def in_program(algorithms: tuple[str, ...], profile: str | None) -> tuple[str, ...]:
    """Those of algorithms that the program under test has: all on the all-in-one
    program (profile None), else the profile's own and DROP_TAIL."""
    return tuple(a for a in algorithms if profile is None or a in (profile, "DROP_TAIL"))
