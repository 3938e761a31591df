"""The parts of mmaqm.driver.SwitchDriver, one concern a module: session
(connection, arbitration, deadlines), tables (writes and the state reconcile
reads), counters (reads in v1model's layout), digests (flow reports), codec
(entities, types and P4Info checks)."""
