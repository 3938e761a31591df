"""Write the hostile config corpus: tests/controller/hostile_configs/*.yaml.

Every file is a config that `mmaqm-ctl check` must refuse with exit 2, at once,
without a traceback and in little memory: wrong numbers and ranges, ports in
forms YAML 1.1 reads differently, control characters that would forge output
lines, YAML alias and merge-key bombs, deep nesting, broken encodings. The
larger or special cases (files of megabytes, a FIFO, /dev/zero) are made at
test time by tools/run_hostile_configs.py instead of being committed.

    .venv/bin/python tools/gen_hostile_configs.py          # rewrite the corpus
    .venv/bin/python tools/gen_hostile_configs.py --check  # exit 1 if it differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "controller" / "hostile_configs"

MAC1 = '"02:00:00:00:00:01"'
RED = "{algorithm: RED, min_th_pkts: 5, max_th_pkts: 15, max_p: 0.1}"


def switch(addr: str = '"127.0.0.1:9559"', ports: str = f"{{1: {{mac: {MAC1}}}}}",
           policy: str = "{algorithm: DROP_TAIL}", extra: str = "", name: str = "s1") -> str:
    """A one-switch config with the given parts (YAML text)."""
    return (f"switches:\n  {name}:\n    p4runtime_addr: {addr}\n    ports: {ports}\n"
            f"    policies: {{default: {policy}}}\n{extra}")


def policy(**params: str) -> str:
    """A switch whose default policy is the given YAML key: value pairs."""
    return switch(policy="{" + ", ".join(f"{k}: {v}" for k, v in params.items()) + "}")


def red(**params: str) -> str:
    base = {"algorithm": "RED", "min_th_pkts": "5", "max_th_pkts": "15", "max_p": "0.1"}
    base.update(params)
    return policy(**base)


def merge_bomb(depth: int, fan: int = 9) -> str:
    """m{i}: &m{i} {<<: [*m{i-1} x fan]}: fan^depth keys once merged."""
    lines = ["m0: &m0 {a: 1, b: 2}"]
    lines += [f"m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * fan)}]}}"
              for i in range(1, depth + 1)]
    return "\n".join(lines) + "\n"


def alias_bomb(depth: int, fan: int = 10) -> str:
    """The billion laughs: lists of lists of aliases."""
    lines = ['a0: &a0 ["lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan)}]" for i in range(1, depth + 1)]
    return "\n".join(lines) + "\n"


def cases() -> dict[str, bytes | str]:
    """name -> file content (str: written as UTF-8)."""
    c: dict[str, bytes | str] = {}
    # --- the P4Runtime address: ASCII decimal ports only
    for name, addr in {
        "addr-superscript-port": '"127.0.0.1:²"',
        "addr-5000-digit-port": '"127.0.0.1:' + "9" * 5000 + '"',
        "addr-fullwidth-port": '"127.0.0.1:９５５９"',
        "addr-arabic-indic-port": '"127.0.0.1:٩٥٥٩"',
        "addr-port-0": '"127.0.0.1:0"',
        "addr-port-65536": '"127.0.0.1:65536"',
        "addr-port-negative": '"127.0.0.1:-1"',
        "addr-port-plus": '"127.0.0.1:+9559"',
        "addr-port-space": '"127.0.0.1: 9559"',
        "addr-port-trailing-newline": '"127.0.0.1:9559\\n"',
        "addr-port-hex": '"127.0.0.1:0x2537"',
        "addr-port-underscore": '"127.0.0.1:9_559"',
        "addr-no-port": '"127.0.0.1"',
        "addr-empty": '""',
        "addr-ipv6-unbracketed": '"::1:9559"',
        "addr-ipv6-open-bracket": '"[::1:9559"',
        "addr-host-newline": '"local\\nhost:9559"',
        "addr-host-trailing-newline": '"localhost\\n:9559"',
        "addr-host-unicode": '"lоcalhost:9559"',          # a Cyrillic o
        "addr-host-300-chars": '"' + "a" * 300 + ':9559"',
        "addr-bad-ipv4": '"999.1.1.1:9559"',
        "addr-as-int": "9559",
        "addr-as-list": "[127.0.0.1, 9559]",
        "addr-escape-codes": '"\\e[2J\\e[Hlocalhost:9559"',
    }.items():
        c[name] = switch(addr=addr)
    # --- numbers YAML 1.1 reads in other bases, as port keys and values
    for name, key in {"port-key-sexagesimal": "1:00", "port-key-binary": "0b111111",
                      "port-key-octal": "010", "port-key-hex": "0x3f",
                      "port-key-fullwidth": "１", "port-key-string": '"1"',
                      "port-key-float": "1.0", "port-key-bool": "true",
                      "port-key-null": "null", "port-key-negative": "-1",
                      "port-key-64": "64", "port-key-huge": "9" * 200}.items():
        c[name] = switch(ports=f"{{{key}: {{mac: {MAC1}}}}}")
    c["route-port-sexagesimal"] = switch(extra="    routes: [{prefix: 10.0.0.0/8, port: 1:00, "
                                               f"next_hop_mac: {MAC1}}}]\n")
    c["device-id-hex"] = switch(extra="    device_id: 0x10\n")
    c["device-id-2-64"] = switch(extra=f"    device_id: {2**64}\n")
    c["device-id-negative"] = switch(extra="    device_id: -1\n")
    c["device-id-float"] = switch(extra="    device_id: 1.5\n")
    c["device-id-129-bits"] = switch(extra=f"    device_id: {2**129}\n")
    c["queue-limit-octal"] = policy(algorithm="DROP_TAIL", queue_limit_pkts="0100")
    c["queue-limit-sexagesimal-float"] = policy(algorithm="DROP_TAIL", queue_limit_pkts="1:30.5")
    c["dscp-binary"] = switch(extra="classifier: {tagged_dscp: [0b101110]}\n")
    c["unquoted-mac"] = switch(ports="{1: {mac: 12:00:00:00:00:01}}")   # base 60 to YAML
    c["mac-trailing-newline"] = switch(ports='{1: {mac: "02:00:00:00:00:01\\n"}}')
    c["mac-multicast"] = switch(ports='{1: {mac: "01:00:00:00:00:01"}}')
    # --- numbers out of range, not finite, or whose derived values overflow
    c["gentle-max-th-1e-305"] = red(min_th_pkts="0", max_th_pkts="1.0e-305", gentle="true")
    c["gentle-max-th-5e-324"] = red(min_th_pkts="0", max_th_pkts="5.0e-324", gentle="true")
    c["upta-capacity-1e308"] = policy(algorithm="UPTA", capacity_mbps="1.0e+308")
    c["upta-capacity-over-k17"] = policy(algorithm="UPTA", capacity_mbps="16384")
    c["upta-capacity-over-k24"] = policy(algorithm="UPTA", capacity_mbps="128",
                                         upta_k_shift="24")
    c["upta-capacity-zero"] = policy(algorithm="UPTA", capacity_mbps="0")
    c["upta-capacity-inf"] = policy(algorithm="UPTA", capacity_mbps=".inf")
    c["upta-k-shift-25"] = policy(algorithm="UPTA", upta_k_shift="25")
    c["upta-loss-threshold-1.5"] = policy(algorithm="UPTA", upta_tagged_loss_threshold="1.5")
    c["upta-slots-not-power-of-two"] = policy(algorithm="UPTA", upta_flow_slots="3")
    for key in ("min_th_pkts", "max_th_pkts", "max_p", "ewma_weight", "bandwidth_pps"):
        for label, value in (("nan", ".nan"), ("inf", ".inf"), ("neg-inf", "-.inf"),
                             ("1e308", "1.0e+308")):
            if key == "bandwidth_pps" and label == "1e308":
                value = "1.0e+300"
            c[f"red-{key.replace('_', '-')}-{label}"] = red(**{key: value})
    c["red-max-p-tiny-slope"] = red(max_p="1.0e-300")
    c["red-ewma-weight-tiny"] = red(ewma_weight="1.0e-300")
    c["red-ewma-weight-not-power-of-two"] = red(ewma_weight="0.3")
    c["red-burst-1e308"] = policy(algorithm="RED", min_th_pkts="5", max_th_pkts="15",
                                  max_p="0.1", burst_pkts="1.0e+308")
    c["red-bandwidth-1e300-weight-half"] = red(bandwidth_pps="1.0e+300", ewma_weight="0.5")
    c["red-min-th-equals-max-th"] = red(min_th_pkts="15")
    c["red-exponent-without-dot"] = red(max_p="1e-1")
    c["red-number-as-string"] = red(max_p='"0.1"')
    c["red-number-as-bool"] = red(max_p="true")
    c["red-max-th-over-limit"] = red(max_th_pkts="100000")
    c["red-harddrop-without-ecn"] = red(harddrop="true")
    c["red-adaptive"] = red(adaptive="true")
    c["queue-limit-zero"] = policy(algorithm="DROP_TAIL", queue_limit_pkts="0")
    c["queue-limit-65536"] = policy(algorithm="DROP_TAIL", queue_limit_pkts="65536")
    c["queue-limit-1e308"] = policy(algorithm="DROP_TAIL", queue_limit_pkts="1.0e+308")
    c["cbt-threshold-inf"] = policy(algorithm="CBT_RED_ALL", min_th_pkts="5", max_th_pkts="15",
                                    max_p="0.1", tagged_th_pkts=".inf", untagged_th_pkts="5")
    c["chips-ratio-zero"] = policy(algorithm="DCBT_CHIPS", min_th_pkts="5", max_th_pkts="15",
                                   max_p="0.1", chips_max_tagged_ratio="0")
    c["chips-weight-tiny"] = policy(algorithm="DCBT_CHIPS", min_th_pkts="5", max_th_pkts="15",
                                    max_p="0.1", chips_ewma_weight="1.0e-300")
    c["mcdt-period-zero"] = policy(algorithm="MCDT", mcdt_period_ms="0")
    c["mcdt-period-nan"] = policy(algorithm="MCDT", mcdt_period_ms=".nan")
    c["fred-minq-65536"] = policy(algorithm="FRED", min_th_pkts="5", max_th_pkts="15",
                                  max_p="0.1", fred_minq_pkts="65536")
    c["fred-slots-huge"] = policy(algorithm="FRED", min_th_pkts="5", max_th_pkts="15",
                                  max_p="0.1", fred_flow_slots=str(2**40))
    for label, body in {"expiry-zero": "expiry_interval_ms: 0",
                        "expiry-nan": "expiry_interval_ms: .nan",
                        "expiry-inf": "expiry_interval_ms: .inf",
                        "update-over-expiry": "expiry_interval_ms: 10, update_interval_ms: 20",
                        "update-zero": "update_interval_ms: 0",
                        "max-flows-zero": "max_flows: 0",
                        "max-flows-2-25": f"max_flows: {2**25}"}.items():
        c[f"active-flows-{label}"] = switch(extra=f"active_flows: {{{body}}}\n")
    # --- control characters and long text echoed back
    c["key-newline-forges-ok"] = switch(extra='    "x\\nswitches.s1: ok (1 switches)": 1\n')
    c["key-esc-nul"] = switch(extra='    "\\e[31mred\\0": 1\n')
    c["key-bidi-override"] = switch(extra='    "abc\\u202edcba": 1\n')
    c["key-line-separator"] = switch(extra='    "a\\u2028b\\u2029c\\x85d": 1\n')
    c["key-10k-chars"] = switch(extra=f"    {'k' * 10_000}: 1\n")
    c["value-esc-codes"] = switch(policy='{algorithm: "\\e[2J\\e[HRED"}')
    c["value-60k-chars"] = switch(policy='{algorithm: "' + "R" * 60_000 + '"}')
    c["switch-name-newline"] = switch(name='"s1\\ns2"')
    c["switch-name-trailing-newline"] = switch(name='"s1\\n"')
    c["switch-name-100-chars"] = switch(name="s" * 100)
    c["prefix-newline"] = switch(extra='    routes: [{prefix: "10.0.0.0/8\\n", port: 1, '
                                       f'next_hop_mac: {MAC1}}}]\n')
    c["prefix-long"] = switch(extra=f'    routes: [{{prefix: "{"1" * 5000}", port: 1, '
                                    f'next_hop_mac: {MAC1}}}]\n')
    # --- YAML bombs and structure
    for depth in (5, 6, 7, 8, 9, 12):
        c[f"merge-bomb-depth-{depth}"] = merge_bomb(depth)
    c["merge-bomb-fan-30"] = merge_bomb(5, fan=30)
    for depth in (5, 7, 9):
        c[f"alias-bomb-depth-{depth}"] = alias_bomb(depth)
    c["alias-bomb-in-switches"] = alias_bomb(6) + "switches: {s1: {p4runtime_addr: *a6}}\n"
    c["alias-bomb-keys"] = ("a0: &a0 {" + ", ".join(f"k{i}: {i}" for i in range(100)) + "}\n"
                            + "".join(f"b{i}: {{<<: *a0}}\n" for i in range(600)))
    c["alias-recursive-list"] = "a: &a [1, *a]\n"
    c["alias-recursive-merge"] = "a: &a {b: 1, <<: *a}\n"
    c["alias-undefined"] = "a: *nothing\n"
    c["nesting-40-flow"] = "a: " + "[" * 40 + "]" * 40 + "\n"
    c["nesting-40-block"] = "".join("  " * i + f"k{i}:\n" for i in range(40)) + "  " * 40 + "v\n"
    c["nesting-1000-flow"] = "a: " + "{a: " * 1000 + "1" + "}" * 1000 + "\n"
    c["duplicate-keys-300"] = "".join(f"switches: {i}\n" for i in range(300))
    c["duplicate-key-switch"] = switch() + switch().split("\n", 1)[1]
    c["python-object-tag"] = "!!python/object/apply:os.system ['echo pwned']\n"
    c["python-name-tag"] = "switches: !!python/name:os.system\n"
    c["custom-tag"] = "switches: !foo {s1: 1}\n"
    c["binary-tag"] = "switches: !!binary aGVsbG8=\n"
    c["set-tag"] = "switches: !!set {a, b}\n"
    c["timestamp-invalid"] = "switches: 2001-02-30\n"
    c["complex-key"] = "? [a, b]\n: 1\n"
    c["unhashable-merge"] = "a: {<<: [1, 2]}\n"
    c["two-documents"] = switch() + "---\n" + switch()
    c["empty"] = ""
    c["only-comment"] = "# nothing here\n"
    c["top-level-list"] = "- switches\n"
    c["top-level-scalar"] = "switches\n"
    c["top-level-null"] = "null\n"
    c["switches-null"] = "switches: null\n"
    c["switches-empty-list"] = "switches: []\n"
    c["tab-indent"] = "switches:\n\ts1: {}\n"
    c["unclosed-quote"] = 'switches: "s1\n'
    c["unclosed-bracket"] = "switches: [s1\n"
    c["bad-escape"] = 'switches: "\\q"\n'
    c["control-char-raw"] = b"switches: \x1b[31m\n"
    c["nul-bytes"] = b"switches:\x00\x00\n"
    c["utf16-bom"] = "switches: {}\n".encode("utf-16")
    c["latin1"] = "switches: {caf\xe9: 1}\n".encode("latin-1")
    c["invalid-utf8"] = b"switches: \xff\xfe\xfd\n"
    c["surrogate-escape"] = 'switches: "\\ud800"\n'
    c["65-switches"] = "switches:\n" + "".join(
        f"  s{i}: {{p4runtime_addr: \"127.0.0.1:{10000 + i}\", ports: {{1: {{mac: {MAC1}}}}}, "
        f"policies: {{default: {{algorithm: DROP_TAIL}}}}}}\n" for i in range(65))
    c["65-ports"] = switch(ports="{" + ", ".join(
        f'{i}: {{mac: "02:00:00:00:{i // 256:02x}:{i % 256:02x}"}}' for i in range(65)) + "}")
    c["1025-routes"] = switch(extra="    routes:\n" + "".join(
        f"      - {{prefix: 10.{i // 256}.{i % 256}.0/24, port: 1, next_hop_mac: {MAC1}}}\n"
        for i in range(1025)))
    c["200-dscps"] = switch(extra=f"classifier: {{tagged_dscp: {list(range(200))}}}\n")
    c["unknown-algorithm"] = policy(algorithm="REDD")
    c["unknown-top-level-key"] = switch(extra="switchs: {}\n")
    c["same-endpoint-twice"] = switch() + switch(name="s2").split("\n", 1)[1]
    return c


def write(corpus: Path = CORPUS) -> list[Path]:
    corpus.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in cases().items():
        path = corpus / f"{name}.yaml"
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        written.append(path)
    return written


def differences(corpus: Path = CORPUS) -> list[str]:
    """Files that are missing, stale or extra in corpus."""
    want = {f"{name}.yaml": (content.encode("utf-8") if isinstance(content, str) else content)
            for name, content in cases().items()}
    have = {p.name: p.read_bytes() for p in corpus.glob("*.yaml")}
    return sorted({n for n in want if have.get(n) != want[n]} | (set(have) - set(want)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the corpus differs")
    args = parser.parse_args(argv)
    if args.check:
        diff = differences()
        for name in diff:
            print(f"hostile configs: {name} differs from the generator", file=sys.stderr)
        return 1 if diff else 0
    print(f"wrote {len(write())} files to {CORPUS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
