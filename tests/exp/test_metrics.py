"""Unit tests for mmaqm_exp.metrics, with every expected value worked out by hand."""

from __future__ import annotations

import math

import pytest


from mmaqm_exp import metrics as m


# --------------------------------------------------------------------------- throughput


SAMPLES = [(0.0, 1000), (0.5, 1000), (1.0, 1000), (1.5, 500)]


def test_flow_throughput_half_open_interval():
    # [0, 1): packets at 0.0 and 0.5 -> 2000 B * 8 / 1 s = 16000 bit/s
    assert m.flow_throughput_bps(SAMPLES, 0.0, 1.0) == pytest.approx(16000.0)
    # [1, 2): packets at 1.0 and 1.5 -> 1500 B * 8 / 1 s = 12000 bit/s
    assert m.flow_throughput_bps(SAMPLES, 1.0, 2.0) == pytest.approx(12000.0)
    # [0.5, 1.5): 0.5 and 1.0 count, 1.5 is excluded (half-open) -> 16000 bit/s
    assert m.flow_throughput_bps(SAMPLES, 0.5, 1.5) == pytest.approx(16000.0)
    # [0, 4): 3500 B * 8 / 4 s = 7000 bit/s
    assert m.flow_throughput_bps(SAMPLES, 0.0, 4.0) == pytest.approx(7000.0)
    with pytest.raises(ValueError):
        m.flow_throughput_bps(SAMPLES, 1.0, 1.0)


def test_per_flow_throughputs():
    got = m.per_flow_throughputs_bps({"a": SAMPLES, "b": [(0.25, 125)]}, 0.0, 1.0)
    # a: 16000 (above); b: 125 B * 8 / 1 s = 1000 bit/s
    assert got == {"a": pytest.approx(16000.0), "b": pytest.approx(1000.0)}


def test_class_average_per_flow_throughput_counts_starved_flows():
    thr = {"a": 100.0, "b": 300.0, "c": 50.0, "x": 999.0}
    cls = {"a": "tcp", "b": "tcp", "c": "udp", "d": "udp"}
    got = m.class_average_per_flow_throughput(thr, cls)
    # tcp: (100 + 300) / 2 = 200
    # udp: (50 + 0) / 2 = 25   <- d delivered nothing but still counts
    # x is not in the class map -> ignored
    assert got == {"tcp": pytest.approx(200.0), "udp": pytest.approx(25.0)}


# --------------------------------------------------------------------------- Jain


@pytest.mark.parametrize(
    "xs, expected",
    [
        ([1, 1, 1, 1], 1.0),  # (4)^2 / (4 * 4) = 1
        ([1, 0, 0, 0], 0.25),  # (1)^2 / (4 * 1) = 1/4
        ([1, 2], 0.9),  # (3)^2 / (2 * 5) = 9/10
        ([2, 4], 0.9),  # scale-free: same as [1, 2]
        ([3, 1], 0.8),  # (4)^2 / (2 * 10) = 16/20
        ([5], 1.0),  # (5)^2 / (1 * 25) = 1
        ([0, 0, 0], 1.0),  # defined: all-zero is an equal allocation
    ],
)
def test_jain_index(xs, expected):
    assert m.jain_index(xs) == pytest.approx(expected)


def test_jain_index_rejects_empty_and_negative():
    with pytest.raises(ValueError):
        m.jain_index([])
    with pytest.raises(ValueError):
        m.jain_index([1.0, -1.0])
    with pytest.raises(ValueError):
        m.jain_index([1.0, float("nan")])


def test_loss_rate():
    assert m.loss_rate(100, 80) == pytest.approx(0.2)  # 20 of 100 lost
    assert m.loss_rate(100, 100) == 0.0
    assert m.loss_rate(0, 0) == 0.0  # defined: nothing sent
    with pytest.raises(ValueError):
        m.loss_rate(10, 11)
    with pytest.raises(ValueError):
        m.loss_rate(-1, 0)


# --------------------------------------------------------------------------- delay, jitter


def test_delay_stats():
    # send 0, 1000, 2000, 3000 ms; received 10, 12, 11, 15 ms later
    pairs = [(0.0, 10.0), (1000.0, 1012.0), (2000.0, 2011.0), (3000.0, 3015.0)]
    st = m.delay_stats(pairs)
    # delays 10, 12, 11, 15: mean 48/4 = 12, min 10, max 15, spread 5
    # deviations -2, 0, -1, 3 -> squares 4, 0, 1, 9 -> variance 14/4 = 3.5
    assert st.count == 4
    assert st.mean == pytest.approx(12.0)
    assert (st.min, st.max, st.spread) == (10.0, 15.0, 5.0)
    assert st.variance == pytest.approx(3.5)
    assert st.std == pytest.approx(math.sqrt(3.5))  # 1.870828...
    with pytest.raises(ValueError):
        m.delay_stats([])


def test_rfc3550_jitter_hand_trace():
    # S (ms) = 0, 20, 40, 60; R (ms) = 100, 125, 139, 165  (transit 100, 105, 99, 105)
    # D(0,1) = (125-100) - (20-0)  =  5 -> J1 = 0 + (5 - 0)/16            = 0.3125
    # D(1,2) = (139-125) - (40-20) = -6 -> J2 = 0.3125 + (6 - 0.3125)/16   = 0.66796875
    # D(2,3) = (165-139) - (60-40) =  6 -> J3 = 0.66796875 + (6 - 0.66796875)/16
    #                                         = 1.001220703125
    pairs = [(0.0, 100.0), (20.0, 125.0), (40.0, 139.0), (60.0, 165.0)]
    assert m.rfc3550_jitter_series(pairs) == [0.0, 0.3125, 0.66796875, 1.001220703125]
    assert m.rfc3550_jitter(pairs) == 1.001220703125
    # the same trace in seconds gives the same numbers / 1000
    secs = [(s / 1000, r / 1000) for s, r in pairs]
    assert m.rfc3550_jitter(secs) == pytest.approx(1.001220703125e-3)
    # a constant transit time has no jitter; fewer than two packets -> 0
    assert m.rfc3550_jitter([(0.0, 5.0), (1.0, 6.0), (2.0, 7.0)]) == 0.0
    assert m.rfc3550_jitter([(0.0, 5.0)]) == 0.0
    assert m.rfc3550_jitter([]) == 0.0


# --------------------------------------------------------------------------- bandwidth variation


def test_window_throughputs_drop_partial_window():
    # windows of 1 s over [0, 4.5): 4 full windows, [4, 4.5) is dropped
    s = [(0.1, 1000), (1.2, 1000), (1.7, 2000), (2.9, 1000), (3.0, 1500), (3.9, 1500), (4.2, 9999)]
    # w0: 1000 B, w1: 3000 B, w2: 1000 B, w3: 3000 B -> *8 bit/s
    assert m.window_throughputs_bps(s, 1.0, 0.0, 4.5) == [8000.0, 24000.0, 8000.0, 24000.0]
    with pytest.raises(ValueError):
        m.window_throughputs_bps(s, 8.0, 0.0, 4.5)  # no full 8 s window


def test_bandwidth_variation_cov():
    s = [(0.1, 1000), (1.2, 1000), (1.7, 2000), (2.9, 1000), (3.0, 1500), (3.9, 1500)]
    bv = m.bandwidth_variation(s, 1.0, 0.0, 4.0)
    # x = 8000, 24000, 8000, 24000: mean 16000, deviations +-8000 -> std 8000, cov 0.5
    assert bv.mean_bps == pytest.approx(16000.0)
    assert bv.std_bps == pytest.approx(8000.0)
    assert bv.cov == pytest.approx(0.5)
    # nothing delivered -> mean 0 and cov 0 by definition
    z = m.bandwidth_variation([], 1.0, 0.0, 2.0)
    assert (z.mean_bps, z.std_bps, z.cov) == (0.0, 0.0, 0.0)


def test_bandwidth_variation_1s_8s():
    # one 1000 B packet in the middle of every second of [0, 16), plus 7000 B extra
    # at t = 3.5: 1 s windows are 8000 bit/s except window 3 = 64000 bit/s;
    # 8 s windows: [0,8) holds 15000 B -> 15000 B / 8 s = 15000 bit/s, [8,16) 8000 bit/s
    s = [(k + 0.5, 1000) for k in range(16)] + [(3.5, 7000)]
    out = m.bandwidth_variation_1s_8s(s, 0.0, 16.0)
    assert set(out) == {1.0, 8.0}
    one, eight = out[1.0], out[8.0]
    # 1 s: mean = (15*8000 + 64000)/16 = 11500; deviations -3500 (x15), +52500 (x1)
    # variance = (15*3500^2 + 52500^2)/16 = (183750000 + 2756250000)/16 = 183750000
    # std = 13555.44..., cov = 13555.44/11500 = 1.17873...
    assert one.mean_bps == pytest.approx(11500.0)
    assert one.std_bps == pytest.approx(math.sqrt(183750000.0))
    assert one.cov == pytest.approx(math.sqrt(183750000.0) / 11500.0)
    # 8 s: x = 15000, 8000: mean 11500, std 3500, cov 3500/11500 = 0.304347...
    assert eight.windows_bps == (15000.0, 8000.0)
    assert eight.cov == pytest.approx(3500.0 / 11500.0)
    # shorter than 8 s: only the 1 s entry
    assert set(m.bandwidth_variation_1s_8s(s, 0.0, 5.0)) == {1.0}


def test_smoothing_to_reach():
    # feng Fig. 3: variation (kbit/s) against smoothing window (s)
    red = [(0.1, 1200.0), (0.5, 1000.0), (1.0, 600.0), (2.0, 300.0)]
    # 800 lies between 1000 (0.5 s) and 600 (1.0 s): 0.5 + 0.5 * (1000 - 800) / (1000 - 600) = 0.75
    assert m.smoothing_to_reach_s(red, 800.0) == pytest.approx(0.75)
    assert m.smoothing_to_reach_s(red, 600.0) == pytest.approx(1.0)       # exactly a point
    assert m.smoothing_to_reach_s(red, 1500.0) == 0.1                     # already below at the start
    assert m.smoothing_to_reach_s(red, 100.0) is None                     # never reached
    # a curve that rises again: the first crossing counts
    assert m.smoothing_to_reach_s([(1.0, 500.0), (2.0, 300.0), (4.0, 600.0)], 400.0) == pytest.approx(1.5)
    with pytest.raises(ValueError):
        m.smoothing_to_reach_s([(1.0, 5.0), (1.0, 4.0)], 4.5)


# --------------------------------------------------------------------------- queue series


T = [0.0, 1.0, 2.5]
V = [0.0, 5.0, 2.0]


def test_resample_hold():
    # queue 0 from t=0, 5 from t=1, 2 from t=2.5; grid 0,1,2,3 -> 0, 5, 5, 2
    grid, vals = m.resample_hold(T, V, 1.0, 0.0, 4.0)
    assert grid == [0.0, 1.0, 2.0, 3.0]
    assert vals == [0.0, 5.0, 5.0, 2.0]
    # before the first observation the initial value is used
    assert m.resample_hold([0.5], [3.0], 1.0, 0.0, 2.0, initial=7.0)[1] == [7.0, 3.0]
    with pytest.raises(ValueError):
        m.resample_hold([1.0, 0.0], [1.0, 2.0], 1.0, 0.0, 2.0)  # times go backwards


def test_time_weighted_mean_and_bins():
    # over [0,4): 0*1 + 5*1.5 + 2*1.5 = 10.5 -> 10.5/4 = 2.625
    assert m.time_weighted_mean(T, V, 0.0, 4.0) == pytest.approx(2.625)
    # over [2,3): 5*0.5 + 2*0.5 = 3.5
    assert m.time_weighted_mean(T, V, 2.0, 3.0) == pytest.approx(3.5)
    # bins of 2 s: [0,2): (0*1 + 5*1)/2 = 2.5; [2,4): (5*0.5 + 2*1.5)/2 = 2.75
    starts, means = m.resample_mean(T, V, 2.0, 0.0, 4.0)
    assert starts == [0.0, 2.0]
    assert means == [pytest.approx(2.5), pytest.approx(2.75)]
    # a 0.2 s spike to 10 between grid points: hold misses it, the bin mean does not
    ts, vs = [0.0, 0.4, 0.6], [0.0, 10.0, 0.0]
    assert m.resample_hold(ts, vs, 1.0, 0.0, 1.0)[1] == [0.0]
    assert m.resample_mean(ts, vs, 1.0, 0.0, 1.0)[1] == [pytest.approx(2.0)]  # 10*0.2/1
