"""A blocking facade over SwitchDriver (or another async client with __aenter__ and
__aexit__, such as p4rt.bfrt.BfrtClient), for synchronous callers (PTF tests, scripts).

It forwards each call to an asyncio event loop in a background thread, so a
unittest-style test can write entries and read counters in line. Every
BlockingSwitch of the process shares that one loop, which is never closed:
gRPC's asyncio layer hands its completion events to the loop of the channel,
and some arrive after the channel closed, so a loop closed with its switch
logged "Event loop is closed" and "Task was destroyed but it is pending"
tracebacks (tests/controller/test_blocking.py opens and closes 30 in a row).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from .driver import SwitchDriver

T = TypeVar("T")


_LOOP_LOCK = threading.Lock()
_LOOP: tuple[asyncio.AbstractEventLoop, threading.Thread] | None = None


def background_loop() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    """The process's one background event loop and its (daemon) thread, started on
    first use."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or not _LOOP[1].is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="mmaqm-blocking",
                                      daemon=True)
            thread.start()
            _LOOP = (loop, thread)
        return _LOOP


class BlockingSwitch:
    def __init__(self, driver: SwitchDriver | Any) -> None:
        self.driver = driver
        self._loop, self._thread = background_loop()
        self.run(driver.__aenter__())

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float = 60.0) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:   # TimeoutError itself from 3.11 on
            future.cancel()       # the loop is shared: leave nothing of this call running
            raise

    def close(self) -> None:
        self.run(self.driver.__aexit__(None, None, None))

    def __getattr__(self, name: str) -> Any:
        """driver.<coroutine method>(...) becomes a blocking call."""
        attr = getattr(self.driver, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            if asyncio.iscoroutine(result):
                return self.run(result)
            return result

        return call
