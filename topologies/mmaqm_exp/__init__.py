"""Experiment tooling for mmaqm (see topologies/README.md and topologies/README-tools.md).

Modules:
    lab          -- the one namespace/veth/BMv2 lifecycle: create, stop processes, clean up
    netns        -- test bed: two namespaces and one veth, no switch (tests, dry runs)
    topology     -- topology files: validation, addresses, routes, controller config
    topology_cli -- mmaqm-topo: check, configure, bring up and clean topologies
    network      -- a topology brought up for real: namespaces, BMv2, delay elements
    scenario     -- scenario YAML: phases and flow groups, validation, time scaling
    traffic      -- run_scenario: receivers, senders, raw files of one run
    mmapp        -- MM_APP flow-controlled multimedia sender/receiver and CBR mode
    tcpbulk      -- pre-connected bulk TCP flows with exact start times
    probes       -- small raw-socket ICMP echo probe (ping without iputils)
    cpu          -- CPU use of processes and of the machine, from /proc
    samples      -- readers for the CSV files the tools write
    metrics      -- pure metric functions over raw samples (no I/O)
    analysis     -- per-phase metrics of one run -> summary.json, flows.csv
    report       -- comparison table and plots over several runs
    experiment   -- mmaqm-exp: one scenario on one topology under several AQM algorithms
"""
