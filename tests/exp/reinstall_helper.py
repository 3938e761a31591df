"""Run inside a switch namespace by test_reinstall.py: install a controller config on
the switch, N times, and count the P4Runtime updates each install wrote.

    python reinstall_helper.py CONFIG BMV2_JSON P4INFO --times N [--pause-s S] [--same]

Each install is a new SwitchController (as another `mmaqm-ctl install` would be; --same:
one controller installs N times) on one connection. The updates are counted where finsy
sends them (Switch._write_request), below SwitchController.install, so the count does not
trust the code it measures. Prints one JSON line: {"installs": [{"updates": {type: n},
"write_rpcs": n, "seconds": s}, ...], "counters": {...}, "mmaqm": path}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import finsy as fy
from finsy.proto import p4r

import mmaqm
from mmaqm.config import load_config
from mmaqm.controller import SwitchController
from mmaqm.driver import SwitchDriver

UPDATE_NAMES = {p4r.Update.INSERT: "INSERT", p4r.Update.MODIFY: "MODIFY",
                p4r.Update.DELETE: "DELETE"}
COUNTERS = ("ingress_discards", "queue_arrivals", "queue_drops")


async def main(args: argparse.Namespace) -> dict[str, Any]:
    config = load_config(args.config)
    [sw] = config.switches.values()
    updates: Counter[str] = Counter()
    rpcs = [0]
    original = fy.Switch._write_request

    async def counting(self: fy.Switch, msgs: list[p4r.Update], *a: Any, **kw: Any) -> Any:
        rpcs[0] += 1
        updates.update(UPDATE_NAMES.get(m.type, str(m.type)) for m in msgs)
        return await original(self, msgs, *a, **kw)

    fy.Switch._write_request = counting   # type: ignore[method-assign]
    installs = []
    async with SwitchDriver(sw.name, sw.p4runtime_addr, device_id=sw.device_id,
                            p4info=args.p4info, bmv2_json=args.bmv2_json) as driver:
        controller = SwitchController(config, sw, driver)
        for i in range(args.times):
            if i:
                await asyncio.sleep(args.pause_s)
            if not args.same:
                controller = SwitchController(config, sw, driver)
            updates.clear()
            rpcs[0] = 0
            t0 = time.monotonic()
            await controller.install()
            installs.append({"updates": dict(updates), "write_rpcs": rpcs[0],
                             "seconds": round(time.monotonic() - t0, 4)})
        values = await driver.read_counters(COUNTERS)
    counters = {name: {str(i): v.packets for i, v in sorted(per.items()) if v.packets}
                for name, per in values.items()}
    return {"installs": installs, "counters": counters, "mmaqm": str(Path(mmaqm.__file__))}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("config", type=Path)
    parser.add_argument("bmv2_json", type=Path)
    parser.add_argument("p4info", type=Path)
    parser.add_argument("--times", type=int, default=1)
    parser.add_argument("--pause-s", type=float, default=0.0)
    parser.add_argument("--same", action="store_true")
    print(json.dumps(asyncio.run(main(parser.parse_args()))), flush=True)
    sys.exit(0)
