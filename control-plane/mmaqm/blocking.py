"""A blocking facade over SwitchDriver, for synchronous callers (PTF tests, scripts).

It runs one asyncio event loop in a background thread and forwards each call
to it, so a unittest-style test can write entries and read counters in line.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from .driver import SwitchDriver

T = TypeVar("T")


class BlockingSwitch:
    def __init__(self, driver: SwitchDriver) -> None:
        self.driver = driver
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        try:
            self.run(driver.__aenter__())
        except BaseException:
            self._stop_loop()  # a failed connection leaves no thread behind
            raise

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def close(self) -> None:
        try:
            self.run(self.driver.__aexit__(None, None, None))
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

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
