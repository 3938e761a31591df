"""The PTF suite against a BMv2 profile (run_ptf.py --profile NAME; make build
PROFILE=NAME): the program has one algorithm and DROP_TAIL
(p4src/v1model/profile.p4), so the suite's own DROP_TAIL baseline policy
(ptf-config.yaml) holds, and a test that installs another algorithm is skipped.
No ptf import: run_ptf.py reads this too."""

from __future__ import annotations

# The suite's modules of each algorithm (run by default with --profile); test_ipv6
# in every profile: each program parses, routes and manages IPv6 (docs/ipv6.md).
MODULES: dict[str, tuple[str, ...]] = {
    "DROP_TAIL": ("test_droptail", "test_ipv6"),
    "RED": ("test_red", "test_red_options", "test_ipv6"),
    "CBT_RED_ALL": ("test_cbt", "test_tag_guard", "test_ipv6"),
    "CBT_RED_TCP_ONLY": ("test_cbt", "test_tag_guard", "test_ipv6"),
    "DCBT": ("test_dcbt", "test_tag_guard", "test_ipv6"),
    "DCBT_CHIPS": ("test_chips", "test_tag_guard", "test_ipv6"),
    "MCDT": ("test_mcdt", "test_ipv6"),
    "FRED": ("test_fred", "test_ipv6"),
    "UPTA": ("test_upta", "test_bfd", "test_ipv6"),
}
