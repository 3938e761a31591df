"""UPTA's controller arithmetic (algorithms.upta_control): counter deltas -> lambda_i ->
eqs. 18-19 -> the upta action parameters, the C-UPTA core's remote U flows, and the
ingress edge's BFD paths and probes, on exact numbers.

Numbers: K = 2^17 us = 0.131072 s = T, so a slot whose IP bytes in one interval are
b has lambda = b * 8 / 0.131072 bit/s; with 512-byte packets 56 packets are exactly
1.75 Mbit/s (56 * 512 * 8 = 7 * 2^15; / 2^17 * 10^6 = 1.75 * 10^6), 40 are 1.25 Mbit/s,
300 are 9.375 Mbit/s. A fair share f bit/s is f * 0.262144 in the data plane's unit
(bytes per K * 16): 1.75 Mbit/s = 458 752 exactly. The link is l5 of upta Fig. 1,
C = 3.5 Mbit/s (§6: fair share 1.75 Mbit/s with 2 flows, 1.17 with 3).
"""

from __future__ import annotations

import ipaddress
import math
import struct

import pytest

from mmaqm.algorithms import bfd_codec as B
from mmaqm.algorithms import upta as U
from mmaqm.algorithms import upta_control as UC
from mmaqm_oracle import upta_model as UM

C_L5 = 3_500_000
FRAME = 512 + 14                   # a 512-byte IP packet as the counter counts it
TCP, VIDEO, BG, SMALL = 11, 22, 33, 44   # slots


def frames(packets: int, ip_bytes_each: int = 512) -> tuple[int, int]:
    return packets, packets * (ip_bytes_each + UC.ETH_HEADER_BYTES)


def settings(mode: int = U.MODE_B) -> UC.PortSettings:
    return UC.PortSettings(capacity_bps=C_L5, mode=mode, table_slots=1024)


# ---------------------------------------------------------------- counters -> arrivals
def test_arrival_ip_bytes_subtracts_the_ethernet_header_per_packet():
    prev = {TCP: frames(100), VIDEO: frames(10)}
    cur = {TCP: frames(140), VIDEO: frames(66), BG: frames(300)}
    assert UC.arrival_ip_bytes(prev, cur) == {TCP: 40 * 512, VIDEO: 56 * 512, BG: 300 * 512}


def test_arrival_ip_bytes_idle_and_reset_slots():
    prev = {TCP: frames(100), VIDEO: frames(50)}
    # TCP idle (no change) -> 0; VIDEO's counter went backwards (a pipeline push reset it)
    cur = {TCP: frames(100), VIDEO: frames(3)}
    assert UC.arrival_ip_bytes(prev, cur) == {TCP: 0, VIDEO: 3 * 512}


def test_arrival_ip_bytes_rejects_negative_counters():
    with pytest.raises(ValueError):
        UC.arrival_ip_bytes({}, {TCP: (-1, 0)})


# ---------------------------------------------------------------- eqs. 18-19 per interval
def test_three_flows_on_l5_background_on_video_intelligible():
    """§6 with S3 ON: N = 3, nobody below C/N = 1.167 Mbit/s (S = 0), M = 0:
    alpha = alpha' = 3.5/3 Mbit/s = 305 834.67 -> 305 835 in the data plane's unit."""
    arrivals = UC.arrival_ip_bytes({}, {TCP: frames(40), VIDEO: frames(56), BG: frames(300)})
    r = UC.port_interval(settings(), arrivals, useless=())
    assert (r.shares.n, r.shares.s, r.shares.m) == (3, 0, 0)
    assert r.shares.alpha == r.shares.alpha_prime == pytest.approx(C_L5 / 3)
    assert r.rates_bps == {TCP: 1_250_000, VIDEO: 1_750_000, BG: 9_375_000}
    assert r.params["fs_u_scaled"] == r.params["fs_i_scaled"] == 305835
    assert r.params["upta_mode"] == U.MODE_B and r.params["slot_mask"] == 1023
    assert r.params["tagged_q16"] == 7864          # q0 = 0.12 for tagged packets


def test_video_useless_gives_i_flows_half_of_l5():
    """The video in U (M = 1): alpha = 3.5/3 (a U flow readmitted would get it), alpha'
    = (C - 0)/(3 - 0 - 1) = 1.75 Mbit/s = 458 752 exactly (eq. 22's TCP gain)."""
    arrivals = {TCP: 40 * 512, VIDEO: 56 * 512, BG: 300 * 512}
    r = UC.port_interval(settings(U.MODE_C), arrivals, useless=[VIDEO])
    assert (r.shares.n, r.shares.s, r.shares.m) == (3, 0, 1)
    assert r.params["fs_u_scaled"] == 305835
    assert r.params["fs_i_scaled"] == 458752
    # reciprocals for eq. 17 (upta.reciprocal: mant in [2^31, 2^32))
    mant, shift = U.reciprocal(458752)
    assert (r.params["inv_fs_i_mant"], r.params["inv_fs_i_shift"]) == (mant, shift)
    assert 2 ** 31 <= mant < 2 ** 32
    assert r.params["upta_mode"] == U.MODE_C


def test_an_unconstrained_flow_leaves_its_rate_to_the_others():
    """A 100 kbit/s flow (< C/N = 875 kbit/s with N = 4) is in S: alpha = (3.5 - 0.1)/3,
    alpha' = 3.4/2 = 1.7 Mbit/s with the video U."""
    small = round(100_000 * 0.131072 / 8)          # 1 638.4 -> 1 638 bytes
    arrivals = {TCP: 40 * 512, VIDEO: 56 * 512, BG: 300 * 512, SMALL: small}
    r = UC.port_interval(settings(), arrivals, useless=[VIDEO])
    lam_small = small * 8 / 0.131072                # 99 975.6 bit/s
    assert (r.shares.n, r.shares.s, r.shares.m) == (4, 1, 1)
    assert r.shares.unconstrained_sum == pytest.approx(lam_small)
    assert r.shares.alpha == pytest.approx((C_L5 - lam_small) / 3)
    assert r.shares.alpha_prime == pytest.approx((C_L5 - lam_small) / 2)
    assert r.params["fs_i_scaled"] == round((C_L5 - lam_small) / 2 * 0.262144)


def test_idle_slots_are_not_flows_and_no_flow_means_no_constraint():
    r = UC.port_interval(settings(), {TCP: 0, VIDEO: 0}, useless=[VIDEO])
    assert (r.shares.n, r.shares.m) == (0, 0)
    assert r.params["fs_u_scaled"] == r.params["fs_i_scaled"] == U.FS_INFINITE
    assert r.params["inv_fs_i_mant"] == 0
    assert r.params == UC.initial_params(settings())


def test_every_flow_useless_leaves_alpha_prime_unconstrained():
    r = UC.port_interval(settings(), {VIDEO: 56 * 512}, useless=[VIDEO])
    assert (r.shares.n, r.shares.s, r.shares.m) == (1, 0, 1)
    assert r.params["fs_u_scaled"] == round(C_L5 * 0.262144)     # 917 504
    assert r.params["fs_i_scaled"] == U.FS_INFINITE


def test_measured_interval_scales_the_rates():
    """The loop passes the time between its two counter reads: 2 T of bytes in 2 T is
    the same rate as T of bytes in T."""
    r1 = UC.port_interval(settings(), {TCP: 40 * 512, BG: 300 * 512}, useless=())
    r2 = UC.port_interval(settings(), {TCP: 80 * 512, BG: 600 * 512}, useless=(),
                          interval_s=2 * 0.131072)
    assert r1.rates_bps == r2.rates_bps == {TCP: 1_250_000, BG: 9_375_000}
    assert r1.params == r2.params


def test_remote_useless_counts_in_n_and_m_at_a_core():
    """C-UPTA core at l5: the video is dropped at R1 and never arrives; its probe spec
    (S = 0) makes N = 3, M = 1: alpha = 3.5/3, alpha' = 1.75 Mbit/s, as if it arrived."""
    r = UC.port_interval(settings(U.MODE_C), {TCP: 40 * 512, BG: 300 * 512}, useless=(),
                         remote_useless=1)
    assert (r.shares.n, r.shares.s, r.shares.m) == (3, 0, 1)
    assert (r.params["fs_u_scaled"], r.params["fs_i_scaled"]) == (305835, 458752)


def test_port_settings_interval_is_k():
    assert UC.PortSettings(capacity_bps=1e6).interval_s == 0.131072
    assert UC.PortSettings(capacity_bps=1e6, k_shift=18).interval_s == 0.262144


# ---------------------------------------------------------------- remote U flows
VIDEO_KEY = (int(ipaddress.IPv4Address("10.0.2.1")), int(ipaddress.IPv4Address("10.0.5.1")),
             17, 40000, 5001)


def spec(key=VIDEO_KEY, intelligible=False) -> B.FlowSpec:
    src, dst, proto, sport, dport = key
    return B.FlowSpec(src, dst, sport, dport, proto, intelligible)


def test_remote_useless_window_and_local_arrivals():
    ru = UC.RemoteUseless(window_s=2 * 0.131072)
    ru.observe(spec(), now_s=10.0)
    assert ru.count(10.1) == 1
    assert ru.count(10.262) == 1                    # 0.262 <= 2 T = 0.262144
    # its own packets arrive here: counted from the counters, not twice
    slot = UC.flow_slot(VIDEO_KEY, 1024)
    assert ru.count(10.2, active_slots=[slot], table_slots=1024) == 0
    assert ru.count(10.2625) == 0                   # > 2 T after the last probe: forgotten
    assert ru.last_seen == {}


def test_remote_u_flows_in_eqs_18_19_by_hand():
    """A core on l5 (C = 3.5 Mbit/s, T = K): TCP 1.25 and background 9.375 Mbit/s
    arrive, the video is U at the ingress (a probe's spec, no packets here).
    Without it: N = 2, C/N = 1.75: S = 1 (TCP), alpha = alpha' = (3.5 - 1.25)/1 =
    2.25 Mbit/s. With it (eqs. 18-19, §5.3.2): N = 3, C/N = 1.1667: S = 0 (the U
    flow is never in S), M = 1: alpha = 3.5/3 = 1.1667, alpha' = 3.5/2 = 1.75 Mbit/s."""
    T = 0.131072
    arrivals = {1: round(1.25e6 * T / 8), 2: round(9.375e6 * T / 8)}   # 20 480, 153 600
    settings = UC.PortSettings(capacity_bps=3.5e6, mode=U.MODE_C)
    alone = UC.port_interval(settings, arrivals, (), interval_s=T)
    assert (alone.shares.n, alone.shares.s, alone.shares.m) == (2, 1, 0)
    assert alone.shares.alpha == pytest.approx(2.25e6, rel=1e-6)
    assert alone.shares.alpha_prime == pytest.approx(2.25e6, rel=1e-6)
    both = UC.port_interval(settings, arrivals, (), interval_s=T, remote_useless=1)
    assert (both.shares.n, both.shares.s, both.shares.m) == (3, 0, 1)
    assert both.shares.alpha == pytest.approx(3.5e6 / 3)
    assert both.shares.alpha_prime == pytest.approx(1.75e6)
    # in the data plane's unit (bytes per K * 16): fs_U 305 835, fs_I 458 752
    assert (both.params["fs_u_scaled"], both.params["fs_i_scaled"]) == (305835, 458752)


def test_decode_spec_digest():
    """bfd_spec_digest_t members -> the specs (S bit = flags bit 7); bad members raise."""
    members = {"egress_port": 3, "identifier": 1, "sequence": 8, "spec_count": 2,
               "src_addr0": VIDEO_KEY[0], "dst_addr0": VIDEO_KEY[1], "src_port0": 40000,
               "dst_port0": 5001, "protocol0": 17, "flags0": 0x00,
               "src_addr1": 1, "dst_addr1": 2, "src_port1": 3, "dst_port1": 4,
               "protocol1": 6, "flags1": 0x80,
               # spec 2 and 3: unspecified, ignored
               "src_addr2": 99, "flags2": 0x80}
    d = UC.decode_spec_digest(members)
    assert (d.egress_port, d.identifier, d.sequence) == (3, 1, 8)
    assert d.specs == (spec(), B.FlowSpec(1, 2, 3, 4, 6, True))
    for bad in ({"spec_count": 0}, {"spec_count": 5}, {"src_port0": 1 << 16},
                {"egress_port": 512}):
        with pytest.raises(ValueError):
            UC.decode_spec_digest({**members, **bad})
    with pytest.raises(ValueError, match="no member"):
        UC.decode_spec_digest({k: v for k, v in members.items() if k != "flags1"})


def test_remote_useless_an_i_spec_withdraws_the_flow():
    ru = UC.RemoteUseless(window_s=1.0)
    ru.observe(spec(), 0.0)
    ru.observe(spec(intelligible=True), 0.5)
    assert ru.count(0.6) == 0


def test_flow_slot_is_the_data_planes_crc32():
    src, dst, proto, sport, dport = VIDEO_KEY
    assert UC.flow_slot(VIDEO_KEY, 4096) == U.flow_hash(src, dst, proto, sport, dport) & 4095
    assert UC.slot_index(3, 5) == 3 * 4096 + 5
    with pytest.raises(ValueError):
        UC.slot_index(64, 0)


# ---------------------------------------------------------------- BFD paths and probes
def test_router_addresses_and_path_ids():
    assert [UC.router_address(i) for i in (0, 6)] == ["10.255.0.1", "10.255.0.7"]
    paths = UC.assign_bfd_paths([(3, "10.255.0.7"), (3, "10.255.0.6"), (3, "10.255.0.7"),
                                 (1, "10.255.0.10")])
    assert paths == [UC.BfdPath(0, 1, "10.255.0.10"), UC.BfdPath(1, 3, "10.255.0.6"),
                     UC.BfdPath(2, 3, "10.255.0.7")]
    with pytest.raises(ValueError):
        UC.assign_bfd_paths((p, "10.255.0.7") for p in range(65))


def test_ipv4_header_is_valid():
    hdr = UC.ipv4_header("10.255.0.1", "10.255.0.7", 16)
    assert len(hdr) == 20 and B.internet_checksum(hdr) == 0
    ver_ihl, _, total, _, _, ttl, proto = struct.unpack("!BBHHHBB", hdr[:10])
    assert (ver_ihl, total, ttl, proto) == (0x45, 36, 64, 1)
    assert hdr[12:16] == bytes([10, 255, 0, 1]) and hdr[16:20] == bytes([10, 255, 0, 7])


def test_probe_without_u_flows_is_one_36_byte_datagram():
    path = UC.BfdPath(0, 3, "10.255.0.7")
    [(seq, dgram)] = UC.probe_datagrams("10.255.0.1", path, 41, [])
    assert seq == 41 and len(dgram) == 36
    msg = B.BfdMessage.unpack(dgram[20:])           # verifies the ICMP checksum
    assert (msg.icmp_type, msg.identifier, msg.sequence) == (20, 0, 41)
    assert (msg.fs_u, msg.fs_i) == (U.FS_INFINITE, U.FS_INFINITE) and msg.specs == ()


def test_probes_split_specs_four_per_probe_and_wrap_the_sequence():
    path = UC.BfdPath(5, 3, "10.255.0.7")
    flows = [(0x0A000201, 0x0A000501, 17, 40000 + i, 5001) for i in range(6)]
    specs = UC.useless_specs(reversed(flows))
    assert [s.src_port for s in specs] == [40000 + i for i in range(6)]     # sorted
    assert not any(s.intelligible for s in specs)
    out = UC.probe_datagrams("10.255.0.1", path, 0xFFFF, specs)
    assert [seq for seq, _ in out] == [0xFFFF, 0]
    msgs = [B.BfdMessage.unpack(d[20:]) for _, d in out]
    assert [len(m.specs) for m in msgs] == [4, 2]
    assert [len(d) for _, d in out] == [20 + 16 + 64, 20 + 16 + 32]
    assert all(m.identifier == 5 for m in msgs)
    # the egress answers each with a valid report carrying the (lowered) fields
    lowered = UM.lower_probe(out[1][1][20:], 305835, 458752)
    report = B.BfdMessage.unpack(UM.report_for(lowered))
    assert (report.icmp_type, report.sequence, report.fs_u, report.fs_i) == (21, 0, 305835, 458752)


# ---------------------------------------------------------------- inferred U states
def test_infer_useless_applies_fig7_to_measured_rates():
    """l5 with S3 ON: fs_I = fs_U = 3.5/3 Mbit/s; the video at 1.75 Mbit/s has drop_prob
    1 - 1.1667/1.75 = 0.333 > 0.12 -> U. Once U, fs_U = 3.5/3 still exceeds -> stays U.
    S3 OFF: fs_U = 1.75 -> drop_prob 0 -> I again (the paper's §6 on/off mechanism)."""
    rates = {VIDEO: 1_750_000.0, TCP: 1_250_000.0, BG: 9_375_000.0}
    q = {VIDEO: 0.12}
    third = C_L5 / 3
    assert UC.infer_useless(rates, q, (), third, third) == {VIDEO}
    assert UC.infer_useless(rates, q, {VIDEO}, 1_750_000.0, third) == {VIDEO}
    assert UC.infer_useless(rates, q, {VIDEO}, 1_750_000.0, 1_750_000.0) == set()
    # exactly p = q is not "exceeds": fs = 0.88 * rate
    assert UC.infer_useless({VIDEO: 1_000_000.0}, {VIDEO: 0.125}, (), 875_000.0, 0) == set()
    assert UC.infer_useless({VIDEO: 1_000_000.0}, {VIDEO: 0.125}, (), 874_999.0, 0) == {VIDEO}
    # no threshold, no share, no rate: never U
    assert UC.infer_useless(rates, {}, (), 1.0, 1.0) == set()
    assert UC.infer_useless(rates, q, (), math.inf, math.inf) == set()
    assert UC.infer_useless({VIDEO: 0.0}, q, (), 1.0, 1.0) == set()
