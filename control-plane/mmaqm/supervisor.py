"""Keeping every switch of a configuration connected: one SwitchController per
switch, reconnecting after a lost switch, waiting as a backup while another
controller is primary, and the CLI's entry point ``run_switches``."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import finsy as fy

from .config import Config, SwitchConfig
from .controller import ENFORCE_INTERVAL_S, SwitchController
from .driver import (CONNECT_TIMEOUT_S, CONTROLLER_ELECTION_ID, DEFAULT_BMV2_JSON,
                     DEFAULT_P4INFO, TCP_CONNECT_TIMEOUT_S, PrimaryLostError,
                     SwitchConnectionError, SwitchDriver, TlsConfig, describe_error,
                     tcp_connect_once, wait_for_grpc)
from .stats_loop import StatsSink

LOG = logging.getLogger("mmaqm.controller")
# Reconnecting after a lost switch (SwitchSupervisor): the first attempt 0.1 s after
# the loss, then doubling up to 1 s between attempts (a restarted BMv2 is back within
# 1 s of listening; an attempt costs one TCP connect).
RECONNECT_INITIAL_S = 0.1
RECONNECT_MAX_S = 1.0


def jsonl_sink(stream: TextIO) -> StatsSink:
    """A stats sink writing one JSON object per line, flushed at once."""
    def write(sample: dict[str, Any]) -> None:
        stream.write(json.dumps(sample, separators=(",", ":")) + "\n")
        stream.flush()
    return write


@dataclass(frozen=True)
class ReconnectPolicy:
    """How a controller run comes back after its switch went away: attempts
    (a TCP connect within TCP_CONNECT_TIMEOUT_S, then the P4Runtime connection within
    connect_timeout_s) with a backoff from initial_s doubling up to max_s; give_up_s:
    the time without a connection after which the switch is given up (None: never)."""

    initial_s: float = RECONNECT_INITIAL_S
    max_s: float = RECONNECT_MAX_S
    give_up_s: float | None = None

    def delays(self) -> Iterator[float]:
        delay = self.initial_s
        while True:
            yield delay
            delay = min(delay * 2, self.max_s)


class SwitchRequestError(RuntimeError):
    """The switch refused a request (its P4Runtime error, with the switch's name)."""


class SwitchGivenUp(SwitchConnectionError):
    """A lost switch did not come back within ReconnectPolicy.give_up_s."""


class SwitchSupervisor:
    """One switch's whole run: connect, (as a backup: wait to become primary),
    install, run the loops; when the P4Runtime connection goes down (the switch
    restarted or the channel broke), reconnect with backoff, let finsy push the
    pipeline again if the switch has lost it (it compares the P4Info cookie on
    every connection), reinstall and resume the loops; when another controller
    takes the primary role, stop writing and wait as its backup.

    Why not finsy's own Switch.run() loop: it waits a fixed 10 s after a connection
    that failed within 2 s (switch.py _throttle_failure), has no deadline on its
    connection steps and no give-up bound; its per-connection lifecycle (arbitration,
    pipeline by cookie, BECOME_PRIMARY/CHANNEL_READY events) is what this uses."""

    def __init__(self, controller: SwitchController, driver: SwitchDriver, *,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 reconnect: ReconnectPolicy = ReconnectPolicy(),
                 install_only: bool = False, wait_as_backup: bool = True,
                 event_sink: StatsSink | None = None) -> None:
        self.controller = controller
        self.driver = driver
        self.connect_timeout_s = connect_timeout_s
        self.reconnect = reconnect
        self.install_only = install_only
        self.wait_as_backup = wait_as_backup
        self.event_sink = event_sink
        self.installs = 0                 # completed installs (the first one, then each recovery)
        self.name = controller.switch.name
        # since when the switch has not been served: a connection lost, or one that
        # came back but did not answer (a wedged switch), until an install completes;
        # ReconnectPolicy.give_up_s counts from here
        self._trouble_since: float | None = None

    def _event(self, event: str, **fields: Any) -> None:
        LOG.debug("%s: %s %s", self.name, event, fields)
        if self.event_sink is not None:
            self.event_sink({"event": event, "t_ns": time.time_ns(), "switch": self.name,
                             **fields})

    async def run(self) -> None:
        """Until cancelled (run) or installed once (install_only). The first
        connection has connect_timeout_s, as `install`; errors other than a lost
        connection (a request the switch refused) end it."""
        address = self.driver.address
        await wait_for_grpc(address, timeout_s=self.connect_timeout_s, name=self.name)
        await self.driver.open()
        reason: str | None = None     # why the next install is a reinstall (repairs)
        try:
            while True:
                try:
                    await self._serve(reason)
                    return                                     # install_only: done
                except Exception as exc:     # noqa: BLE001 - sorted below
                    if self.install_only:
                        if self.driver.connection_lost(exc) \
                                and not isinstance(exc, SwitchConnectionError):
                            # e.g. finsy's bare AssertionError once its channel is closed
                            raise SwitchConnectionError(
                                f"{self.name}: lost the P4Runtime connection to {address} "
                                f"({_why(exc)})") from exc
                        raise
                    if not self.driver.connection_lost(exc) and (
                            isinstance(exc, PrimaryLostError)
                            or not self.driver.switch.is_primary):
                        # a write can fail (PERMISSION_DENIED) before the check sees it
                        if self.driver.switch.is_primary:
                            LOG.warning("%s: was a backup for a moment (another controller "
                                        "was primary and may have written); primary again, "
                                        "checking the switch", self.name)
                        else:
                            LOG.warning("%s: another controller became primary (election id "
                                        "%d); stopped writing, waiting as its backup",
                                        self.name, self.driver.switch.primary_id)
                        self._event("primary_lost", error=_why(exc),
                                    regained=self.driver.switch.is_primary)
                        reason = "primary regained"
                        continue
                    if not self.driver.connection_lost(exc):
                        raise
                    if self._trouble_since is None:
                        self._trouble_since = time.monotonic()
                    lost_at = self._trouble_since
                    reason = None       # a restarted switch is empty: an install, no repair
                    why = _why(exc) if isinstance(exc, SwitchConnectionError) else \
                        f"{self.name}: lost the P4Runtime connection to {address} ({_why(exc)})"
                    LOG.warning("%s; reconnecting", why)
                    self._event("connection_lost", error=why)
                await self.driver.close()
                await self._reconnect(lost_at)
        finally:
            await self.driver.close()

    async def _serve(self, reason: str | None = None) -> None:
        """On an open connection: wait to be primary, install (reason: why again),
        run the loops."""
        d = self.driver
        if not d.ready_as_primary and d.switch.is_primary:
            await d.wait_primary()       # primary again: finsy's pipeline check first
        if not d.ready_as_primary:
            if not self.wait_as_backup:
                raise RuntimeError(f"{self.name}: another controller is primary "
                                   f"(election id {d.switch.primary_id})")
            LOG.warning("%s: another controller is primary (election id %d > %d); waiting "
                        "as its backup", self.name, d.switch.primary_id, d.switch.election_id)
            self._event("backup_waiting", primary_election_id=d.switch.primary_id)
            await d.wait_primary()
            LOG.warning("%s: now primary (election id %d); installing", self.name,
                        d.switch.election_id)
            self._event("became_primary", election_id=d.switch.election_id)
        started = time.monotonic()
        await self.controller.install(reason if self.installs else None)
        self._trouble_since = None
        self.installs += 1
        LOG.info("%s: installed in %.2f s (install %d)", self.name,
                 time.monotonic() - started, self.installs)
        self._event("installed", install=self.installs,
                    duration_s=round(time.monotonic() - started, 4),
                    election_id=self.driver.switch.election_id)
        if self.install_only:
            return
        LOG.info("%s: running the D-CBT/MCDT%s loops", self.name,
                 "/stats" if self.controller.stats_sink is not None else "")
        await self.controller.run()

    async def _reconnect(self, lost_at: float) -> None:
        """Attempts with backoff until one connects; SwitchGivenUp after give_up_s."""
        address = self.driver.address
        give_up_s = self.reconnect.give_up_s
        for attempt, delay in enumerate(self.reconnect.delays(), start=1):
            waited = time.monotonic() - lost_at
            if give_up_s is not None and waited >= give_up_s:
                raise SwitchGivenUp(f"{self.name}: no working P4Runtime connection to "
                                    f"{address} for {waited:.1f} s after it was lost (or "
                                    f"stopped answering); giving up "
                                    f"(--reconnect-timeout-s {give_up_s:g})")
            if give_up_s is not None:
                delay = min(delay, max(give_up_s - waited, 0))
            await asyncio.sleep(delay)
            LOG.info("%s: reconnect attempt %d to %s (%.1f s after the loss)", self.name,
                     attempt, address, time.monotonic() - lost_at)
            try:
                await tcp_connect_once(address, TCP_CONNECT_TIMEOUT_S)
                await self.driver.open()
            except (OSError, SwitchConnectionError, RuntimeError, ValueError,
                    fy.P4ClientError) as exc:
                LOG.info("%s: attempt %d failed: %s", self.name, attempt, _why(exc))
                continue
            LOG.warning("%s: reconnected to %s after %.2f s (%d attempts), %s; pipeline "
                        "checked by its cookie (finsy logs a push); reinstalling", self.name,
                        address, time.monotonic() - lost_at, attempt,
                        "primary" if self.driver.switch.is_primary else "backup")
            self._event("reconnected", attempts=attempt,
                        after_s=round(time.monotonic() - lost_at, 4),
                        primary=self.driver.switch.is_primary)
            return


def switch_tls(sw: SwitchConfig) -> TlsConfig | None:
    """The switch's TLS settings from its config (switches.<name>.tls), or None."""
    tls = getattr(sw, "tls", None)
    if tls is None:
        return None
    return TlsConfig(ca_cert=tls.ca_cert, cert=tls.cert, key=tls.key,
                     server_name=tls.server_name)


def _why(exc: BaseException) -> str:
    if isinstance(exc, fy.P4ClientError):
        return describe_error(exc)
    return str(exc) or type(exc).__name__


async def run_switches(config: Config, *, p4info: Path = DEFAULT_P4INFO,
                       bmv2_json: Path = DEFAULT_BMV2_JSON, install_only: bool = False,
                       names: list[str] | None = None, stats_sink: StatsSink | None = None,
                       stats_interval_ms: float = 100,
                       event_sink: StatsSink | None = None,
                       election_id: int = CONTROLLER_ELECTION_ID, role: str = "",
                       timeout_s: float = CONNECT_TIMEOUT_S,
                       reconnect: ReconnectPolicy = ReconnectPolicy(),
                       tls: dict[str, TlsConfig] | None = None,
                       enforce_interval_s: float = ENFORCE_INTERVAL_S) -> None:
    """Connect to every (or the named) switch, install it, then run the loops, each
    switch under its own SwitchSupervisor: a switch that fails (its first connection
    within timeout_s, a refused request, a lost switch given up after
    reconnect.give_up_s) is logged and the others go on; once every switch has ended
    (install: all installed), the first failure is raised. timeout_s bounds each
    connection step: the switch listening, then the P4Runtime connection
    (arbitration, pipeline). `install` never waits as a backup: another primary is
    an error; `run` waits as its backup and takes over when it goes. timeout_s is
    also each Write's and Read's deadline. tls: per switch name (absent: the
    switch's own config, else plaintext). enforce_interval_s: how often `run`
    repairs the switch from its desired state (0: only on regaining primary)."""
    selected = [config.switches[n] for n in (names or sorted(config.switches))]

    async def one(sw: SwitchConfig) -> None:
        driver = SwitchDriver(sw.name, sw.p4runtime_addr, device_id=sw.device_id,
                              p4info=p4info, bmv2_json=bmv2_json, election_id=election_id,
                              role=role, connect_timeout_s=timeout_s,
                              request_timeout_s=timeout_s, require_primary=install_only,
                              tls=(tls or {}).get(sw.name, switch_tls(sw)))
        controller = SwitchController(config, sw, driver, stats_sink=stats_sink,
                                      stats_interval_ms=stats_interval_ms,
                                      event_sink=event_sink,
                                      enforce_interval_s=enforce_interval_s)
        supervisor = SwitchSupervisor(controller, driver, connect_timeout_s=timeout_s,
                                      reconnect=reconnect, install_only=install_only,
                                      wait_as_backup=not install_only, event_sink=event_sink)
        try:
            try:
                await supervisor.run()
            except fy.P4ClientError as err:      # a request the switch refused: name it
                raise SwitchRequestError(f"{sw.name}: a P4Runtime request failed: "
                                         f"{driver.explain_error(err)}") from None
        except Exception as exc:
            if len(selected) > 1:
                LOG.error("%s: stopped: %s; the other switches go on", sw.name, _why(exc))
            raise

    results = await asyncio.gather(*(one(sw) for sw in selected), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
