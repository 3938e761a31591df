"""Experiment tooling for mmaqm: traffic generators, metrics, namespace helpers.

Modules:
    metrics  -- pure metric functions over raw samples (no I/O)
    samples  -- readers for the CSV files the tools write
    mmapp    -- MM_APP flow-controlled multimedia sender/receiver and CBR mode
    netns    -- two-namespace veth test bed (used by the tests)
    probes   -- small raw-socket ICMP echo probe (ping without iputils)

See topologies/README-tools.md.
"""
