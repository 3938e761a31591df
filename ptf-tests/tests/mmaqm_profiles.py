"""The PTF suite against a BMv2 profile (run_ptf.py --profile NAME; make build
PROFILE=NAME): the program has one algorithm (p4src/v1model/profile.p4), so the
baseline policy of every port is that algorithm's, set so that it behaves like the
suite's DROP_TAIL baseline at the suite's loads (queue limit 64, RED's early zone
at the limit), and a test that installs another algorithm is skipped. No ptf
import: run_ptf.py reads this too."""

from __future__ import annotations

RED_AT_LIMIT = {"queue_limit_pkts": 64, "min_th_pkts": 62, "max_th_pkts": 64, "max_p": 0.1}

# None: the suite's own baseline (ptf-config.yaml, DROP_TAIL).
BASELINES: dict[str, dict | None] = {
    "DROP_TAIL": None,
    "RED": {"algorithm": "RED", **RED_AT_LIMIT},
    "CBT_RED_ALL": {"algorithm": "CBT_RED_ALL", **RED_AT_LIMIT,
                    "tagged_th_pkts": 64, "untagged_th_pkts": 64},
    "CBT_RED_TCP_ONLY": {"algorithm": "CBT_RED_TCP_ONLY", **RED_AT_LIMIT,
                         "tagged_th_pkts": 64, "untagged_th_pkts": 64},
    "DCBT": {"algorithm": "DCBT", **RED_AT_LIMIT},
    "DCBT_CHIPS": {"algorithm": "DCBT_CHIPS", **RED_AT_LIMIT},
    "MCDT": {"algorithm": "MCDT", "queue_limit_pkts": 64},
    "FRED": {"algorithm": "FRED", **RED_AT_LIMIT},
    "UPTA": {"algorithm": "UPTA", "queue_limit_pkts": 64, "upta_mode": "B"},
}

# The suite's modules of each algorithm (run by default with --profile).
MODULES: dict[str, tuple[str, ...]] = {
    "DROP_TAIL": ("test_droptail",),
    "RED": ("test_red", "test_red_options"),
    "CBT_RED_ALL": ("test_cbt",),
    "CBT_RED_TCP_ONLY": ("test_cbt",),
    "DCBT": ("test_dcbt",),
    "DCBT_CHIPS": ("test_chips",),
    "MCDT": ("test_mcdt",),
    "FRED": ("test_fred",),
    "UPTA": ("test_upta", "test_bfd"),
}
