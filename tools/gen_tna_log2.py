#!/usr/bin/env python3
"""Generate p4src/tna/log2_tna.p4: log2 in Q4 (16 steps an octave) by ternary
const entries, for FRED on Tofino (docs/tofino.md: no multiplies, so
qlen * nactive >= avg is compared as lg qlen + lg nactive >= lg avg).

For x >= 1 with its leading one at bit p and the next (up to) four bits m,
lg(x) = 16 p + round(16 log2(1 + (m + 1/2) / 16)) (the middle of the mantissa
interval; exact below 2^4): within 1.5 steps of 16 log2(x), i.e. within 7 %
of x. x = 0 matches nothing and gets the default 0 (= lg 1).

FRED's three controls: TnaLog2Q4W16 (lg qlen), TnaLog2Q4W16Share (lg nactive
+ lg qlen + 256, the add in the table's action) and TnaLog2Q4W32Compare (lg
avg against that share, for avgcq and R2's 2 avgcq, the saturating
differences in the table's action), so that FRED's test takes one stage a
table. UPTA's four (upta_tna.p4): TnaLog2Q4W16PlusOne (lg(2^16 - q) from
~q), TnaLog2Q4W32FairShare (lg fs + 256; UPTA_FS_NONE never exceeded),
TnaLog2Q4W32Sums (lg R added to both), TnaUptaAntilog (eq. 17's q' from the
headroom). Each build declares only its own (#ifdef).

  tools/gen_tna_log2.py > p4src/tna/log2_tna.p4
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
import sys

WIDTHS = (16, 32)


def entries(width: int) -> list[tuple[int, int, int]]:
    """(value, mask, lg) of every ternary entry for bit<width>."""
    out = []
    for p in range(width):
        nbits = min(4, p)
        for m in range(1 << nbits):
            value = (1 << p) | (m << (p - nbits))
            mask = ((1 << width) - 1) & ~((1 << (p - nbits)) - 1)
            if nbits < 4:       # every bit of x is in the pattern: exact
                lg = round(16 * math.log2(value))
            else:
                lg = 16 * p + round(16 * math.log2(1 + (m + 0.5) / 16))
            out.append((value, mask, lg))
    return out


# FRED's share (fred_tna.p4): lg nactive + lg qlen + SHARE_OFFSET, where the
# offset is lg 2^AVG_FRAC_BITS in Q4 (the average is scaled by 2^16: 16 * 16)
SHARE_OFFSET = 16 * 16
# FRED's R2 compares against 2 avgcq: lg avg + one octave
TWICE_OFFSET = 16


def lg_of(width: int, x: int) -> int:
    """What the generated table gives for x (x = 0: the default, 0 = lg 1)."""
    for value, mask, lg in entries(width):
        if x & mask == value:
            return lg
    return 0


def _table_control(signature: list[str], action: list[str], table: str, width: int,
                   args: Callable[[int], str], default_args: str,
                   first: tuple[int, str] | None = None) -> str:
    """A control of one ternary const table on x (bit<width>): an entry per
    mantissa pattern (entries()), its action called with args(lg); first: an
    exact (x, args) entry placed before them (it wins: the first match does)."""
    call = action[0].split("action ")[1].split("(")[0]
    lines = [*signature, *action,
             "    @hidden",
             f"    table {table} {{",
             "        key = { x : ternary; }",
             f"        actions = {{ {call}; }}",
             "        const entries = {"]
    if first is not None:
        ones = (1 << width) - 1
        lines.append(f"            {width}w{first[0]:#x} &&& {width}w{ones:#x} : {call}({first[1]});")
    for value, mask, lg in entries(width):
        lines.append(f"            {width}w{value:#x} &&& {width}w{mask:#x} : {call}({args(lg)});")
    lines += ["        }",
              f"        const default_action = {call}({default_args});",
              f"        size = {len(entries(width)) + (first is not None)};",
              "    }",
              f"    apply {{ {table}.apply(); }}",
              "}",
              ""]
    return "\n".join(lines)


def share_control() -> str:
    """lg x + addend + SHARE_OFFSET for bit<16> x, as one table: the add is the
    action's (action data + a PHV field), so the sum costs no stage of its own.
    x = 0 gets lg 1 (FRED: a port with no active flow counts one)."""
    return _table_control(
        ["control TnaLog2Q4W16Share(in bit<16> x, in bit<16> addend, out bit<16> sum) {"],
        ["    action add_lg(bit<16> value) { sum = addend + value; }"],
        "log2_q4_share", 16, lambda lg: f"{lg + SHARE_OFFSET}", f"{SHARE_OFFSET}")


def compare_control() -> str:
    """FRED's two share tests against lg x for bit<32> x (x: the average), in
    the table's action (action data |-| PHV field), so that they cost no stage
    of their own: avgcq_short = lg x |-| share (0: share >= lg x) and
    over_twice_short = (lg x + TWICE_OFFSET + 1) |-| share (0: share > lg 2x;
    the action data must be the first operand of a subtraction)."""
    return _table_control(
        ["control TnaLog2Q4W32Compare(in bit<32> x, in bit<16> share,",
         "                              out bit<16> avgcq_short, out bit<16> over_twice_short) {"],
        ["    action compare_lg(bit<16> value, bit<16> value_twice) {",
         "        avgcq_short = value |-| share;",
         "        over_twice_short = value_twice |-| share;",
         "    }"],
        "log2_q4_compare", 32, lambda lg: f"{lg}, {lg + TWICE_OFFSET + 1}",
        f"0, {TWICE_OFFSET + 1}")


# UPTA (upta_tna.p4): Fig. 7's R (2^16 - x) > fs 2^16 as lg R + lg(2^16 - x) >
# lg fs + FS_OFFSET (lg 2^16 in Q4); UPTA_FS_NONE (2^32 - 1, "no fair share")
# gets LG_NEVER, above any lg R + lg(2^16 - x) (at most 16 * 32 + 16 * 16).
FS_OFFSET = 16 * 16
UPTA_FS_NONE = 0xFFFFFFFF
LG_NEVER = 0x3FF


def fair_share_control() -> str:
    """lg fs + FS_OFFSET for a fair share fs (bit<32>), LG_NEVER for
    UPTA_FS_NONE; fs = 0 gets 0, which every packet exceeds (as R (2^16 - x) >
    0 on v1model)."""
    return _table_control(
        ["control TnaLog2Q4W32FairShare(in bit<32> x, out bit<16> lg_plus) {"],
        ["    action set_lg_plus(bit<16> value) { lg_plus = value; }"],
        "log2_q4_fair_share", 32, lambda lg: f"{lg + FS_OFFSET}", "0",
        first=(UPTA_FS_NONE, f"{LG_NEVER}"))


def plus_one_control() -> str:
    """lg(x + 1) for bit<16> x (UPTA: x = 2^16 - 1 - q, so x + 1 = 2^16 - q):
    exact below 2^4 (where the +1 is 7 % and more), entries() above it."""
    def args(lg: int) -> str:
        return f"{lg}"
    lines = _table_control(
        ["control TnaLog2Q4W16PlusOne(in bit<16> x, out bit<16> lg) {"],
        ["    action set_lg(bit<16> value) { lg = value; }"],
        "log2_q4_plus_one", 16, args, "0")
    # the exact entries (no mantissa bits dropped) take lg(x + 1)
    out = []
    for line in lines.split("\n"):
        m = re.match(r"(\s*16w(0x[0-9a-f]+) &&& 16w0xffff : set_lg\()(\d+)(\);)", line)
        if m:
            line = f"{m.group(1)}{round(16 * math.log2(int(m.group(2), 16) + 1))}{m.group(4)}"
        out.append(line)
    return "\n".join(out)


def sums_control() -> str:
    """lg x + add_a and lg x + add_b for bit<32> x (UPTA: lg R plus lg(2^16 - q)
    and lg(2^16 - u)), both adds in the table's action."""
    return _table_control(
        ["control TnaLog2Q4W32Sums(in bit<32> x, in bit<16> add_a, in bit<16> add_b,",
         "                         out bit<16> sum_a, out bit<16> sum_b) {"],
        ["    action add_lg(bit<16> value) {",
         "        sum_a = add_a + value;",
         "        sum_b = add_b + value;",
         "    }"],
        "log2_q4_sums", 32, lambda lg: f"{lg}", "0")


# P-UPTA's eq. 17 from UPTA's headroom h = (lg fs + FS_OFFSET) - (lg R + lg(2^16 - q)),
# saturating: the new margin 2^16 - q' = (2^16 - q) R / fs is 2^((FS_OFFSET - h) / 16).
ANTILOG_ENTRIES = FS_OFFSET


def rewritten_q16(h: int) -> int:
    """q' for headroom h: 2^16 - margin, 0 when the margin reaches 2^16 (h = 0),
    UPTA_Q16_ONE - 1 once the margin is below 1 (h >= FS_OFFSET)."""
    if h >= ANTILOG_ENTRIES:
        return 0xFFFF
    margin = round(2 ** ((FS_OFFSET - h) / 16))
    return max(0, 65536 - margin)


def antilog_control() -> str:
    """q' = rewritten_q16(h) by an exact const table on the headroom h."""
    lines = ["control TnaUptaAntilog(in bit<16> h, out bit<16> q16) {",
             "    action set_q16(bit<16> value) { q16 = value; }",
             "    @hidden",
             "    table upta_antilog {",
             "        key = { h : exact; }",
             "        actions = { set_q16; }",
             "        const entries = {"]
    for h in range(ANTILOG_ENTRIES):
        lines.append(f"            {h} : set_q16({rewritten_q16(h)});")
    lines += ["        }",
              f"        const default_action = set_q16({rewritten_q16(ANTILOG_ENTRIES)});",
              f"        size = {ANTILOG_ENTRIES};",
              "    }",
              "    apply { upta_antilog.apply(); }",
              "}",
              ""]
    return "\n".join(lines)


def control(width: int) -> str:
    """Plain lg x for bit<width> x."""
    return _table_control(
        [f"control TnaLog2Q4W{width}(in bit<{width}> x, out bit<16> lg) {{"],
        ["    action set_lg(bit<16> value) { lg = value; }"],
        "log2_q4", width, lambda lg: f"{lg}", "0")


def main() -> int:
    sys.stdout.write("// Generated by tools/gen_tna_log2.py: do not edit.\n"
                     "// log2 in Q4 by ternary const entries (see the generator's doc).\n"
                     "#ifndef MMAQM_LOG2_TNA_P4\n#define MMAQM_LOG2_TNA_P4\n\n")
    # each build declares only the controls it applies (an unused control is
    # a front-end warning, which make check-tna treats as a failure)
    sys.stdout.write("#ifdef MMAQM_TNA_FRED\n")
    sys.stdout.write(control(16) + "\n")
    sys.stdout.write(share_control() + "\n")
    sys.stdout.write(compare_control())
    sys.stdout.write("#endif\n\n#ifdef MMAQM_TNA_UPTA\n")
    sys.stdout.write(plus_one_control() + "\n")
    sys.stdout.write(fair_share_control() + "\n")
    sys.stdout.write(sums_control() + "\n")
    sys.stdout.write(antilog_control())
    sys.stdout.write("#endif\n\n")
    sys.stdout.write("#endif\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
