#!/usr/bin/env python3
"""Generate p4src/tna/log2_tna.p4: log2 in Q4 (16 steps an octave) by ternary
const entries, for FRED on Tofino (README "Tofino (TNA)": no multiplies, so
qlen * nactive >= avg is compared as lg qlen + lg nactive >= lg avg).

For x >= 1 with its leading one at bit p and the next (up to) four bits m,
lg(x) = 16 p + round(16 log2(1 + (m + 1/2) / 16)) (the middle of the mantissa
interval; exact below 2^4): within 1.5 steps of 16 log2(x), i.e. within 7 %
of x. x = 0 matches nothing and gets the default 0 (= lg 1).

Three controls: TnaLog2Q4W16 (lg qlen), TnaLog2Q4W16Share (lg nactive + lg
qlen + 256, the add in the table's action) and TnaLog2Q4W32Compare (lg avg
against that share, for avgcq and R2's 2 avgcq, the saturating differences in
the table's action), so that FRED's test takes one stage a table.

  tools/gen_tna_log2.py > p4src/tna/log2_tna.p4
"""

from __future__ import annotations

import math
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


def share_control() -> str:
    """lg x + addend + SHARE_OFFSET for bit<16> x, as one table: the add is the
    action's (action data + a PHV field), so the sum costs no stage of its own.
    x = 0 gets lg 1 (FRED: a port with no active flow counts one)."""
    lines = ["control TnaLog2Q4W16Share(in bit<16> x, in bit<16> addend, out bit<16> sum) {",
             "    action add_lg(bit<16> value) { sum = addend + value; }",
             "    @hidden",
             "    table log2_q4_share {",
             "        key = { x : ternary; }",
             "        actions = { add_lg; }",
             "        const entries = {"]
    for value, mask, lg in entries(16):
        lines.append(f"            16w{value:#x} &&& 16w{mask:#x} : add_lg({lg + SHARE_OFFSET});")
    lines += ["        }",
              f"        const default_action = add_lg({SHARE_OFFSET});",
              f"        size = {len(entries(16))};",
              "    }",
              "    apply { log2_q4_share.apply(); }",
              "}",
              ""]
    return "\n".join(lines)


def compare_control() -> str:
    """FRED's two share tests against lg x for bit<32> x (x: the average), in
    the table's action (action data |-| PHV field), so that they cost no stage
    of their own: avgcq_short = lg x |-| share (0: share >= lg x) and
    over_twice_short = (lg x + TWICE_OFFSET + 1) |-| share (0: share > lg 2x;
    the action data must be the first operand of a subtraction)."""
    lines = ["control TnaLog2Q4W32Compare(in bit<32> x, in bit<16> share,",
             "                              out bit<16> avgcq_short, out bit<16> over_twice_short) {",
             "    action compare_lg(bit<16> value, bit<16> value_twice) {",
             "        avgcq_short = value |-| share;",
             "        over_twice_short = value_twice |-| share;",
             "    }",
             "    @hidden",
             "    table log2_q4_compare {",
             "        key = { x : ternary; }",
             "        actions = { compare_lg; }",
             "        const entries = {"]
    for value, mask, lg in entries(32):
        lines.append(f"            32w{value:#x} &&& 32w{mask:#x} : compare_lg({lg}, {lg + TWICE_OFFSET + 1});")
    lines += ["        }",
              f"        const default_action = compare_lg(0, {TWICE_OFFSET + 1});",
              f"        size = {len(entries(32))};",
              "    }",
              "    apply { log2_q4_compare.apply(); }",
              "}",
              ""]
    return "\n".join(lines)


def control(width: int) -> str:
    lines = [f"control TnaLog2Q4W{width}(in bit<{width}> x, out bit<16> lg) {{",
             "    action set_lg(bit<16> value) { lg = value; }",
             "    @hidden",
             "    table log2_q4 {",
             "        key = { x : ternary; }",
             "        actions = { set_lg; }",
             "        const entries = {"]
    for value, mask, lg in entries(width):
        lines.append(f"            {width}w{value:#x} &&& {width}w{mask:#x} : set_lg({lg});")
    lines += ["        }",
              "        const default_action = set_lg(0);",
              f"        size = {len(entries(width))};",
              "    }",
              "    apply { log2_q4.apply(); }",
              "}",
              ""]
    return "\n".join(lines)


def main() -> int:
    sys.stdout.write("// Generated by tools/gen_tna_log2.py: do not edit.\n"
                     "// log2 in Q4 by ternary const entries (see the generator's doc).\n"
                     "#ifndef MMAQM_LOG2_TNA_P4\n#define MMAQM_LOG2_TNA_P4\n\n")
    sys.stdout.write(control(16) + "\n")
    sys.stdout.write(share_control() + "\n")
    sys.stdout.write(compare_control() + "\n")
    sys.stdout.write("#endif\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
