"""The PTF suite on open-p4studio's Tofino model (docs/tofino-model.md): the names,
files and switch writes that run_ptf.py --target tna, tools/tofino_model_files.py
and mmaqm_base.TnaTarget share. None of it has run against a model here.

The switch is bf_switchd of an SDE built with the p4rt option: its own P4Runtime
server (p4lang/PI's frontend over the Tofino PI backend, --p4rt-server) carries
what the controller writes, and its BF Runtime gRPC server (port 50052) what
P4Runtime cannot: the traffic manager's port shaping, and register reads, which
PI's server answers with UNIMPLEMENTED ("Register reads are not supported yet",
PI proto/frontend/src/device_mgr.cpp). BF Runtime is reached with the
controller's own client, mmaqm.p4rt.bfrt (the one that writes the Lpf filters),
through mmaqm.blocking: the build's bfrt.json for the program's tables, the
server's fixed tables (GetForwardingPipelineConfig) for the traffic manager's.

No ptf import: run_ptf.py and tools/ read this too."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mmaqm.blocking import BlockingSwitch
from mmaqm.p4rt.bfrt import BfrtClient, BfrtInfo, TableWrite

P4RT_GRPC_PORT = 9559        # bf_switchd --p4rt-server=127.0.0.1:9559 (the suite's port)
BFRT_GRPC_PORT = 50052       # bf_switchd's BF Runtime gRPC server (its default)
DEVICE_ID = 0                # the model's one device; PI maps P4Runtime's device_id to it
BFRT_CLIENT_ID = 1           # BF Runtime client id of the suite (bfshell and others: 0)
PROGRAM_PREFIX = "mmaqm_"    # the program's name on the switch: mmaqm_<variant>
PIPE_NAME = "pipe"           # main.p4's Pipeline instance (targets.tna.TNA_PIPE_NAME)
PIPES = (0, 1, 2, 3)         # a Tofino 1 model has four pipes; one profile for all
DEVICE_CONFIG_FILE = "bf_switchd.device_config"   # in the build directory
# The P4Runtime server that takes the pipeline, by its device config: bf_switchd's
# own (PI's device data, DEVICE_CONFIG_FILE) or Stratum's (a BfPipelineConfig of the
# build directory, which the driver packs)
P4RT_SERVERS = ("bf_switchd", "stratum")

# The model's ports: dev port N is veth(2N) on the model's side and veth(2N+1) on
# the test's, the pairs that open-p4studio's veth_setup.sh creates (veth0..veth63
# by default). The PTF ports 1..4 are dev ports 1..4 (pipe 0, as the TNA build's
# state requires: targets.tna.check_tna_ports).
PTF_PORTS = (1, 2, 3, 4)


def model_veth(port: int) -> str:
    return f"veth{2 * port}"


def ptf_veth(port: int) -> str:
    return f"veth{2 * port + 1}"


def program_name(variant: str) -> str:
    """The program's name on the switch (bf_switchd conf and P4Runtime device data)."""
    return PROGRAM_PREFIX + variant.lower()


def build_dir(repo: Path, variant: str) -> Path:
    """make build-tna's output directory of a variant (tools/build-tna.sh)."""
    return repo / "build" / "tna" / variant.lower()


def ports_json(ports: tuple[int, ...] = PTF_PORTS) -> dict:
    """tofino-model's -f port map (the format of open-p4studio's ports.json files)."""
    return {"PortToVeth": [{"device_port": p, "veth1": 2 * p, "veth2": 2 * p + 1}
                           for p in ports]}


def switchd_conf(build: Path, variant: str) -> dict:
    """The conf file bf_switchd (--conf-file) and tofino-model (-c) read, in the
    format bf-drivers' switch_config.c documents, with absolute paths (not joined
    to --install-dir). The build's files are loaded at start; the P4Runtime push
    (DEVICE_CONFIG_FILE) then loads the same files with the P4Info."""
    build = build.resolve()
    return {
        "chip_list": [{"id": "asic-0", "chip_family": "tofino", "instance": 0}],
        "instance": 0,
        "p4_devices": [{
            "device-id": DEVICE_ID,
            "p4_programs": [{
                "program-name": program_name(variant),
                "bfrt-config": str(build / "bfrt.json"),
                "p4_pipelines": [{
                    "p4_pipeline_name": PIPE_NAME,
                    "context": str(build / PIPE_NAME / "context.json"),
                    "config": str(build / PIPE_NAME / "tofino.bin"),
                    "pipe_scope": list(PIPES),
                    "path": str(build),
                }],
            }],
        }],
    }


# ---- the traffic manager (BF Runtime fixed-function tables of Tofino 1,
# bf-drivers src/bf_rt/bf_rt_tm/bf_rt_tm_tf1.json)
TM_PORT_SHAPING = "tf1.tm.port.sched_shaping"   # unit PPS|BPS, provisioning, max_rate, max_burst_size
TM_PORT_SCHED = "tf1.tm.port.sched_cfg"         # max_rate_enable: the shaper on or off
TM_QUEUE_BUFFER = "tf1.tm.queue.buffer"         # a queue's buffer, in 80-byte cells


def port_rate_writes(port: int, rate_pps: int) -> list[TableWrite]:
    """A port's egress rate in packets per second (0: unlimited), as BMv2's
    set_queue_rate: the port shaper in packets, a burst of one packet (so that one
    packet leaves per 1/rate after the first), rounded down ("LOWER": never
    faster than asked, which only lengthens a frozen queue's departure slot)."""
    if not 0 <= port < 512:
        raise ValueError(f"dev port {port}: 0..511")
    if rate_pps < 0:
        raise ValueError(f"rate_pps {rate_pps} < 0")
    if rate_pps == 0:
        return [TableWrite(TM_PORT_SCHED, {"dev_port": port}, {"max_rate_enable": False})]
    return [TableWrite(TM_PORT_SHAPING, {"dev_port": port},
                      {"unit": "PPS", "provisioning": "LOWER", "max_rate": rate_pps,
                       "max_burst_size": 1}),
            TableWrite(TM_PORT_SCHED, {"dev_port": port}, {"max_rate_enable": True})]


# ---- registers (names as the TNA builds' P4Info and bfrt.json give them)
OCCUPANCY_REGISTER_PREFIX = "TnaIngress.aqm.occupancy."
FLOW_SLOTS_REGISTER = "TnaIngress.aqm.flow_report.flow_slots"
STATE_PIPE = 0      # where the departure reports return (targets.tna.TNA_STATE_PIPE)


def pipe_fields(data: Mapping[str, list[int]], register: str,
                pipe: int = STATE_PIPE) -> dict[str, int]:
    """A register index as read over BF Runtime (BfrtClient.read_register:
    {field: [one value per pipe]}) as {field: value} of one pipe."""
    out = {}
    for name, values in data.items():
        if not isinstance(values, (list, tuple)) or len(values) <= pipe:
            raise ValueError(f"{register}.{name}: expected one value per pipe, got {values!r}")
        out[name] = int(values[pipe])
    if not out:
        raise ValueError(f"no field of {register} in the answer")
    return out


class BfRtSession:
    """The suite's BF Runtime connection: the controller's client
    (mmaqm.p4rt.bfrt.BfrtClient, blocking), subscribed and bound to the program,
    with the build's bfrt.json and the device's fixed tables."""

    def __init__(self, grpc_addr: str, build: Path, p4_name: str,
                 device_id: int = DEVICE_ID) -> None:
        client = BfrtClient("ptf", grpc_addr, BfrtInfo.from_file(build / "bfrt.json"), p4_name,
                            client_id=BFRT_CLIENT_ID, device_id=device_id)
        self.client = BlockingSwitch(client)          # opens: subscribe, bind
        try:
            self.client.load_fixed_tables()
        except BaseException:
            self.client.close()
            raise

    def apply(self, writes: list[TableWrite]) -> None:
        """The writes, checked against the schema, in one Write."""
        self.client.write(writes)

    def read_register(self, register: str, index: int) -> dict[str, int]:
        """{field: value} of one register index in pipe STATE_PIPE, from the switch."""
        return pipe_fields(self.client.read_register(register, index), register)

    def close(self) -> None:
        self.client.close()
