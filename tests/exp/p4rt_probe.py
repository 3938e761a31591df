"""A P4Runtime observer for test_reconnect.py, run inside the switch's namespace.

    python p4rt_probe.py ADDRESS P4INFO PORT [PORT ...]

Every PROBE_INTERVAL_S it prints one JSON line: {"t_ns" (CLOCK_REALTIME), "cookie"
(the running pipeline's, null without one), "policies": {port: {"action", params...}}}
or {"t_ns", "error"}. It never arbitrates (no stream: Reads and the pipeline query need
none, P4Runtime spec "Read RPC"), so it neither competes with the controller for the
primary role nor pushes anything; each sample opens a fresh gRPC channel, so a switch
back on its address is seen at once (a kept channel would wait out gRPC's reconnect
backoff).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import finsy as fy
from finsy import p4entity
from finsy.proto import p4r

PROBE_INTERVAL_S = 0.05
REQUEST_TIMEOUT_S = 1.0


async def sample(address: str, schema: fy.P4Schema, ports: list[int]) -> dict:
    client = fy.P4Client(address, wait_for_ready=False)
    await client.open()
    try:
        reply = await asyncio.wait_for(client.request(p4r.GetForwardingPipelineConfigRequest(
            device_id=1,
            response_type=p4r.GetForwardingPipelineConfigRequest.COOKIE_ONLY)),
            REQUEST_TIMEOUT_S)
        cookie = reply.config.cookie.cookie if reply.config.HasField("cookie") else None
        if cookie is None:
            return {"cookie": None, "policies": {}}
        request = p4r.ReadRequest(device_id=1, entities=p4entity.encode_entities(
            [fy.P4TableEntry("port_policy", match=fy.Match(port=p)) for p in ports], schema))
        policies = {}

        async def read() -> None:
            async for response in client.request_iter(request):
                for entity in response.entities:
                    entry = p4entity.decode_entity(entity, schema)
                    port = int(entry.match["port"])
                    action = entry.action
                    policies[str(port)] = {"action": action.name,
                                           **{k: int(v) for k, v in (action.args or {}).items()}}
        await asyncio.wait_for(read(), REQUEST_TIMEOUT_S)
        return {"cookie": cookie, "policies": policies}
    finally:
        await client.close()


async def main(address: str, p4info: Path, ports: list[int]) -> None:
    schema = fy.P4Schema(p4info)
    while True:
        t_ns = time.time_ns()
        try:
            line = {"t_ns": t_ns, **await sample(address, schema, ports)}
        except (fy.P4ClientError, TimeoutError, OSError, ValueError) as exc:
            line = {"t_ns": t_ns, "error": f"{type(exc).__name__}: {exc}"[:200]}
        print(json.dumps(line, separators=(",", ":")), flush=True)
        await asyncio.sleep(PROBE_INTERVAL_S)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), [int(p) for p in sys.argv[3:]]))
