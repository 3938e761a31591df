"""Per-algorithm arithmetic (pure functions, no switch): configuration -> action parameters.

One module per algorithm family; each cites its paper section. ``ALGORITHMS``
maps the configuration name of every algorithm the controller supports to the
name of its action in the P4 table ``port_policy`` (aqm.p4). The driver checks
at connect time that the switch's P4Info has every one of those actions, with
the parameters the encoding sends, by name.
"""

from . import cbt, chips, dcbt, fred, mcdt, red, upta

# config name -> P4 action of table port_policy
ALGORITHMS: dict[str, str] = {
    "DROP_TAIL": "drop_tail",
    "RED": "red",
    "CBT_RED_ALL": "cbt_red_all",          # cbt §3 "CBT with RED for all"
    "CBT_RED_TCP_ONLY": "cbt_red_tcp_only",  # cbt §3 "CBT with RED only for TCP"
    "DCBT": "dcbt",                        # dcbt §3.1
    "DCBT_CHIPS": "dcbt_chips",            # dcbt §3.1 + §3.2 (ChIPS)
    "MCDT": "mcdt",                        # mcdt §II.2, mode A
    "FRED": "fred",                        # Lin & Morris 1997; cbt §2.3
    "UPTA": "upta",                        # upta Fig. 7, §4 (P-UPTA), §5 (C-UPTA); modes B, P, C
}
CBT_ALGORITHMS = frozenset({"CBT_RED_ALL", "CBT_RED_TCP_ONLY"})
# Algorithms whose class thresholds follow the active-flow shares (dcbt §3.1).
DCBT_ALGORITHMS = frozenset({"DCBT", "DCBT_CHIPS"})
# Algorithms without RED (no RED thresholds, average or options).
NON_RED_ALGORITHMS = frozenset({"DROP_TAIL", "MCDT", "UPTA"})
# RED options FRED's rules do not include (fred.p4 has no gentle ramp, ECN or wait).
FRED_UNSUPPORTED_RED_OPTIONS = ("gentle", "ecn", "harddrop", "wait")
ALGORITHM_OF_ACTION: dict[str, str] = {action: name for name, action in ALGORITHMS.items()}

__all__ = ["ALGORITHMS", "ALGORITHM_OF_ACTION", "CBT_ALGORITHMS", "DCBT_ALGORITHMS",
           "FRED_UNSUPPORTED_RED_OPTIONS", "NON_RED_ALGORITHMS", "cbt", "chips", "dcbt", "fred",
           "mcdt", "red", "upta"]
