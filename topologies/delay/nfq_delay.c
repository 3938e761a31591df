/*
 * nfq_delay -- constant propagation delay for Linux without netem.
 *
 * The kernel used by this project has no netem (docs/design.md §1.5),
 * so a link's propagation delay is added in userspace through NFQUEUE: every
 * packet that the kernel queues to us is held for exactly D and then accepted.
 *
 * How it works
 *   - Binds NFQUEUE number N (AF_INET), copy mode NFQNL_COPY_META (no payload
 *     is copied: we never look at it), flags NFQA_CFG_F_FAIL_OPEN and
 *     NFQA_CFG_F_GSO, queue maxlen --maxlen (default 65536).
 *   - Arrival time of a packet = the kernel's receive timestamp, which the
 *     queue message carries (NFQA_TIMESTAMP, CLOCK_REALTIME, microseconds): it
 *     is taken when the packet entered the receiving namespace's stack (veth
 *     netif_rx), before the INPUT hook. To make sure the kernel stamps every
 *     packet, the program holds a socket with SO_TIMESTAMPNS enabled (this
 *     turns on the kernel's global net timestamping while it runs). So the
 *     time a packet waits for us to read it is part of the delay, not added
 *     to it. If a message has no timestamp, or an implausible one (in the
 *     future, or more than 1 s old), the time the message was read is used
 *     instead (--clock user forces that). Arrivals are converted to
 *     CLOCK_MONOTONIC and (packet id, arrival + D) is appended to a FIFO
 *     ring. Since D is constant and arrivals are in order, the FIFO is sorted
 *     by deadline: no heap needed, and packets are never reordered (a
 *     deadline earlier than the tail's is raised to the tail's).
 *   - A timerfd (CLOCK_MONOTONIC, absolute) is armed for the head deadline;
 *     poll() waits on the netlink socket, the timerfd and a signalfd. When the
 *     head is due, every due packet gets NF_ACCEPT; the verdicts of one wake-up
 *     are sent in one sendmsg() (one netlink message per packet).
 *   - Timer slack is set to 1 ns (PR_SET_TIMERSLACK), and the process asks for
 *     SCHED_FIFO priority --rt-prio (default 10; 0 keeps the normal scheduler;
 *     failure is only a warning). Measured on a 2-core VM whose cores were
 *     both busy compiling: mean |error| 309 us under SCHED_OTHER, 23 us under
 *     SCHED_FIFO. The loop always blocks in poll(), and the kernel's RT
 *     throttling (95 %) bounds it anyway.
 *   - Error statistics: for each verdict, error = (time just before the verdict
 *     batch is sent) - (arrival + D), in microseconds. The JSON also reports
 *     how long messages waited before we read them (read_lag_*). Mean/max absolute error,
 *     mean signed error and percentiles (1 us histogram) are written as JSON to
 *     --stats-file at exit (SIGTERM / SIGINT / --duration elapsed).
 *   - At exit, packets still held are accepted at once (counted as
 *     "flushed_at_exit", not part of the error statistics) so none is lost.
 *
 * What the statistics do not see: the time from the verdict to the packet's
 * delivery (reinject -> socket), and with --clock user (or packets without a
 * kernel timestamp) the time before the message was read. Those are measured end to end by the test
 * (topologies/tests/test_nfq_delay.py) with ICMP echo.
 *
 * Hooking it up (receive side, as docs/design.md §1.5 recommends: on the
 * sending namespace's OUTPUT chain held packets stay charged to the socket and
 * TCP collapses to ~1.5 Mbit/s; on the receiving namespace's INPUT chain it
 * does not):
 *
 *   ip netns exec RX ./nfq_delay --queue 3 --delay-ms 20 --stats-file s.json &
 *   ip netns exec RX iptables -A INPUT -i veth0 -j NFQUEUE --queue-num 3 \
 *                                      --queue-bypass
 *
 * --queue-bypass makes the kernel accept packets (undelayed) while no program
 * is bound to the queue; without it they are dropped. Start the element
 * first (it prints "nfq_delay: ready" on stdout once bound), then add the
 * rule; delete the rule before stopping it. For a delay on both directions of
 * a path, run one element in each end namespace (each adds its own D to the
 * packets it receives; the RTT grows by the sum).
 *
 * Build: make (gcc -O2, -lnetfilter_queue -lmnl). Needs root (CAP_NET_ADMIN).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <endian.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/types.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define HIST_BINS 100000u /* 1 us bins: 0 .. 99.999 ms, last bin = overflow */
#define VERDICT_BATCH 256  /* verdict messages per sendmsg */

struct held {
	uint32_t id;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
};

/* FIFO ring of held packets, grows on demand. */
static struct held *ring;
static size_t ring_cap, ring_head, ring_len;

static struct mnl_socket *nl;
static unsigned int portid;
static uint32_t queue_num;
static uint64_t delay_ns;

/* statistics */
static uint64_t n_queued, n_verdicts, n_flushed, n_enobufs, n_verdict_err;
static uint64_t n_wakeups, n_kernel_ts;
static double sum_read_lag_us, max_read_lag_us;
static int use_kernel_ts = 1;
static uint64_t last_deadline;
static size_t max_in_flight;
static double sum_abs_err_us, sum_err_us, max_abs_err_us;
static uint32_t *hist;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "nfq_delay: %s: %s\n", what, strerror(errno));
	exit(EXIT_FAILURE);
}

static void ring_push(uint32_t id, uint64_t deadline)
{
	if (ring_len == ring_cap) {
		size_t ncap = ring_cap ? ring_cap * 2 : 4096;
		struct held *n = malloc(ncap * sizeof(*n));
		if (!n)
			die("malloc");
		for (size_t i = 0; i < ring_len; i++)
			n[i] = ring[(ring_head + i) % ring_cap];
		free(ring);
		ring = n;
		ring_cap = ncap;
		ring_head = 0;
	}
	ring[(ring_head + ring_len) % ring_cap] = (struct held){ id, deadline };
	ring_len++;
	if (ring_len > max_in_flight)
		max_in_flight = ring_len;
}

/* Send NF_ACCEPT for up to VERDICT_BATCH head packets whose deadline is <= limit
 * (limit = UINT64_MAX: all). Returns how many were released. */
static size_t release_due(uint64_t limit, int flushing)
{
	static char buf[VERDICT_BATCH * 64];
	size_t n = 0, off = 0;

	uint64_t t = now_ns();
	while (ring_len > 0 && n < VERDICT_BATCH) {
		struct held *h = &ring[ring_head];
		if (limit != UINT64_MAX && h->deadline_ns > limit)
			break;
		struct nlmsghdr *nlh = nfq_nlmsg_put(buf + off, NFQNL_MSG_VERDICT, queue_num);
		nfq_nlmsg_verdict_put(nlh, (int)h->id, NF_ACCEPT);
		off += NLMSG_ALIGN(nlh->nlmsg_len);
		if (!flushing) {
			double err = ((double)t - (double)h->deadline_ns) / 1000.0;
			double a = err < 0 ? -err : err;
			sum_err_us += err;
			sum_abs_err_us += a;
			if (a > max_abs_err_us)
				max_abs_err_us = a;
			uint64_t bin = (uint64_t)a;
			hist[bin < HIST_BINS ? bin : HIST_BINS - 1]++;
			n_verdicts++;
		} else {
			n_flushed++;
		}
		ring_head = (ring_head + 1) % ring_cap;
		ring_len--;
		n++;
	}
	if (off > 0 && mnl_socket_sendto(nl, buf, off) < 0) {
		/* ENOBUFS/EAGAIN on a netlink send is transient: retry once. */
		if (mnl_socket_sendto(nl, buf, off) < 0)
			n_verdict_err += n;
	}
	return n;
}

struct read_time {
	uint64_t mono_ns; /* CLOCK_MONOTONIC when the message was read */
	int64_t real_minus_mono_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC then */
};

static int queue_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct read_time *rt = data;
	struct nlattr *attr[NFQA_MAX + 1] = { 0 };
	uint64_t arrival = rt->mono_ns;

	if (nfq_nlmsg_parse(nlh, attr) < 0 || attr[NFQA_PACKET_HDR] == NULL)
		return MNL_CB_OK; /* not a packet message: ignore */
	struct nfqnl_msg_packet_hdr *ph = mnl_attr_get_payload(attr[NFQA_PACKET_HDR]);
	if (use_kernel_ts && attr[NFQA_TIMESTAMP] &&
	    mnl_attr_get_payload_len(attr[NFQA_TIMESTAMP]) >= sizeof(struct nfqnl_msg_packet_timestamp)) {
		struct nfqnl_msg_packet_timestamp *ts = mnl_attr_get_payload(attr[NFQA_TIMESTAMP]);
		int64_t real_ns = (int64_t)be64toh(ts->sec) * 1000000000ll +
				  (int64_t)be64toh(ts->usec) * 1000ll;
		int64_t k_mono = real_ns - rt->real_minus_mono_ns;
		int64_t lag = (int64_t)rt->mono_ns - k_mono;
		/* The stamp has microsecond resolution: allow it to look up to
		 * 1 ms "in the future" before distrusting it. */
		if (lag > -1000000ll && lag < 1000000000ll) {
			if (lag < 0)
				lag = 0;
			arrival = rt->mono_ns - (uint64_t)lag;
			n_kernel_ts++;
			double lag_us = (double)lag / 1000.0;
			sum_read_lag_us += lag_us;
			if (lag_us > max_read_lag_us)
				max_read_lag_us = lag_us;
		}
	}
	uint64_t deadline = arrival + delay_ns;
	if (deadline < last_deadline)
		deadline = last_deadline; /* keep FIFO order: never reorder */
	last_deadline = deadline;
	ring_push(ntohl(ph->packet_id), deadline);
	n_queued++;
	return MNL_CB_OK;
}

/* Send one config message with NLM_F_ACK and wait for the kernel's answer. */
static void config_ack(struct nlmsghdr *nlh, const char *what)
{
	static uint32_t seq = 1;
	char buf[MNL_SOCKET_BUFFER_SIZE];

	nlh->nlmsg_flags |= NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		die(what);
	for (;;) {
		int r = mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (r < 0)
			die(what);
		r = mnl_cb_run(buf, r, seq, portid, NULL, NULL);
		if (r == MNL_CB_ERROR)
			die(what);
		if (r == MNL_CB_STOP)
			break;
	}
	seq++;
}

static double percentile(double q)
{
	if (n_verdicts == 0)
		return 0.0;
	uint64_t target = (uint64_t)(q * (double)n_verdicts);
	if (target >= n_verdicts)
		target = n_verdicts - 1;
	uint64_t acc = 0;
	for (uint32_t b = 0; b < HIST_BINS; b++) {
		acc += hist[b];
		if (acc > target)
			return (double)b + 1.0; /* upper edge of the 1 us bin */
	}
	return (double)HIST_BINS;
}

static void write_stats(const char *path, double duration_s)
{
	FILE *f = path ? fopen(path, "w") : NULL;
	if (path && !f) {
		fprintf(stderr, "nfq_delay: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	FILE *outs[2] = { f, stderr };
	for (int i = 0; i < 2; i++) {
		FILE *o = outs[i];
		if (!o)
			continue;
		fprintf(o,
			"{\"queue\": %u, \"delay_us\": %.3f, \"duration_s\": %.3f,\n"
			" \"packets\": %" PRIu64 ", \"verdicts\": %" PRIu64
			", \"flushed_at_exit\": %" PRIu64 ",\n"
			" \"mean_abs_err_us\": %.3f, \"max_abs_err_us\": %.3f, \"mean_err_us\": %.3f,\n"
			" \"p50_abs_err_us\": %.0f, \"p99_abs_err_us\": %.0f, \"p999_abs_err_us\": %.0f,\n"
			" \"mean_pps\": %.1f, \"max_in_flight\": %zu, \"wakeups\": %" PRIu64 ",\n"
			" \"kernel_ts_packets\": %" PRIu64 ", \"mean_read_lag_us\": %.3f, \"max_read_lag_us\": %.3f,\n"
			" \"enobufs\": %" PRIu64 ", \"verdict_errors\": %" PRIu64 "}\n",
			queue_num, (double)delay_ns / 1000.0, duration_s, n_queued, n_verdicts,
			n_flushed, n_verdicts ? sum_abs_err_us / (double)n_verdicts : 0.0,
			max_abs_err_us, n_verdicts ? sum_err_us / (double)n_verdicts : 0.0,
			percentile(0.5), percentile(0.99), percentile(0.999),
			duration_s > 0 ? (double)n_queued / duration_s : 0.0, max_in_flight,
			n_wakeups, n_kernel_ts, n_kernel_ts ? sum_read_lag_us / (double)n_kernel_ts : 0.0,
			max_read_lag_us, n_enobufs, n_verdict_err);
	}
	if (f)
		fclose(f);
}

static void usage(FILE *o)
{
	fprintf(o,
		"usage: nfq_delay --queue N --delay-ms D [--stats-file F] [--maxlen L]\n"
		"                 [--rcvbuf BYTES] [--rt-prio P] [--duration S] [--clock kernel|user]\n"
		"  Holds every packet of NFQUEUE N for D ms (fractional allowed), then\n"
		"  accepts it. Stats (JSON) go to F and to stderr on SIGTERM/SIGINT.\n"
		"  --rt-prio P: SCHED_FIFO priority (default 10, 0 = normal scheduling)\n"
		"  --clock kernel|user: arrival = kernel rx timestamp (default) or read time\n"
		"  --maxlen L: kernel queue length (default 65536); fail-open beyond it\n"
		"  --duration S: exit after S seconds (default: run until a signal)\n");
}

int main(int argc, char *argv[])
{
	const char *stats_path = NULL;
	double delay_ms = -1.0, duration_s = 0.0;
	long qn = -1;
	uint32_t maxlen = 65536;
	int rcvbuf = 8 << 20, rt_prio = 10;

	static const struct option opts[] = {
		{ "queue", required_argument, 0, 'q' },
		{ "delay-ms", required_argument, 0, 'd' },
		{ "stats-file", required_argument, 0, 's' },
		{ "maxlen", required_argument, 0, 'm' },
		{ "rcvbuf", required_argument, 0, 'b' },
		{ "rt-prio", required_argument, 0, 'r' },
		{ "duration", required_argument, 0, 't' },
		{ "clock", required_argument, 0, 'c' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "q:d:s:m:b:r:t:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'q': qn = strtol(optarg, NULL, 10); break;
		case 'd': delay_ms = strtod(optarg, NULL); break;
		case 's': stats_path = optarg; break;
		case 'm': maxlen = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'b': rcvbuf = atoi(optarg); break;
		case 'r': rt_prio = atoi(optarg); break;
		case 't': duration_s = strtod(optarg, NULL); break;
		case 'c':
			if (strcmp(optarg, "kernel") == 0)
				use_kernel_ts = 1;
			else if (strcmp(optarg, "user") == 0)
				use_kernel_ts = 0;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (qn < 0 || qn > 65535 || delay_ms < 0.0) {
		usage(stderr);
		return 2;
	}
	queue_num = (uint32_t)qn;
	delay_ns = (uint64_t)(delay_ms * 1e6 + 0.5);

	hist = calloc(HIST_BINS, sizeof(*hist));
	if (!hist)
		die("calloc");

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (rt_prio > 0) {
		struct sched_param sp = { .sched_priority = rt_prio };
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			fprintf(stderr, "nfq_delay: SCHED_FIFO %d: %s (continuing)\n",
				rt_prio, strerror(errno));
	}

	/* Signals through a signalfd so they wake poll() cleanly. */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		die("sigprocmask");
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("signalfd");

	/* Ask the kernel to timestamp received packets (see header comment). */
	if (use_kernel_ts) {
		int one = 1;
		int tsfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (tsfd < 0 || setsockopt(tsfd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
			fprintf(stderr, "nfq_delay: cannot enable rx timestamps: %s\n", strerror(errno));
		/* tsfd stays open for the life of the process. */
	}

	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (tfd < 0)
		die("timerfd_create");

	nl = mnl_socket_open(NETLINK_NETFILTER);
	if (!nl)
		die("mnl_socket_open");
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		die("mnl_socket_bind");
	portid = mnl_socket_get_portid(nl);
	int nlfd = mnl_socket_get_fd(nl);
	if (setsockopt(nlfd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(nlfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));

	char cbuf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;

	nlh = nfq_nlmsg_put(cbuf, NFQNL_MSG_CONFIG, queue_num);
	nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND);
	config_ack(nlh, "bind queue (already bound by another program?)");

	nlh = nfq_nlmsg_put(cbuf, NFQNL_MSG_CONFIG, queue_num);
	nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_META, 0);
	nfq_nlmsg_cfg_put_qmaxlen(nlh, maxlen);
	mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO));
	mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO));
	config_ack(nlh, "configure queue");

	if (fcntl(nlfd, F_SETFL, fcntl(nlfd, F_GETFL) | O_NONBLOCK) < 0)
		die("fcntl");

	size_t rbuf_size = 0xffff + (MNL_SOCKET_BUFFER_SIZE / 2);
	char *rbuf = malloc(rbuf_size);
	if (!rbuf)
		die("malloc");

	uint64_t t_start = now_ns();
	uint64_t t_end = duration_s > 0 ? t_start + (uint64_t)(duration_s * 1e9) : 0;
	uint64_t armed = 0; /* deadline the timerfd is armed for, 0 = disarmed */

	printf("nfq_delay: ready queue=%u delay_us=%.3f\n", queue_num, (double)delay_ns / 1000.0);
	fflush(stdout);

	struct pollfd pfd[3] = {
		{ .fd = nlfd, .events = POLLIN },
		{ .fd = tfd, .events = POLLIN },
		{ .fd = sfd, .events = POLLIN },
	};
	int running = 1;
	while (running) {
		/* Arm the timer for the head of the FIFO (or the end of --duration). */
		uint64_t want = ring_len ? ring[ring_head].deadline_ns : 0;
		if (t_end && (want == 0 || t_end < want))
			want = t_end;
		if (want != armed) {
			struct itimerspec its = { 0 };
			its.it_value.tv_sec = (time_t)(want / 1000000000ull);
			its.it_value.tv_nsec = (long)(want % 1000000000ull);
			timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
			armed = want;
		}

		int pr = poll(pfd, 3, -1);
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		n_wakeups++;
		if (pfd[2].revents & POLLIN)
			running = 0;
		if (pfd[1].revents & POLLIN) {
			uint64_t exp;
			if (read(tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
				die("read timerfd");
			armed = 0; /* one-shot timer has fired */
		}
		/* Release due packets before reading new ones: the timer is the
		 * latency-critical event. */
		uint64_t t = now_ns();
		while (ring_len && ring[ring_head].deadline_ns <= t)
			release_due(t, 0);
		if (pfd[0].revents & (POLLIN | POLLERR)) {
			for (int k = 0; k < 1024; k++) {
				ssize_t r = recv(nlfd, rbuf, rbuf_size, MSG_DONTWAIT);
				if (r < 0) {
					if (errno == EAGAIN || errno == EWOULDBLOCK)
						break;
					if (errno == ENOBUFS) {
						n_enobufs++;
						continue;
					}
					if (errno == EINTR)
						continue;
					die("recv");
				}
				struct read_time rt;
				struct timespec tr;
				rt.mono_ns = now_ns();
				clock_gettime(CLOCK_REALTIME, &tr);
				rt.real_minus_mono_ns = (int64_t)tr.tv_sec * 1000000000ll + tr.tv_nsec -
							(int64_t)rt.mono_ns;
				int cr = mnl_cb_run(rbuf, (size_t)r, 0, portid, queue_cb, &rt);
				if (cr == MNL_CB_ERROR)
					n_verdict_err++; /* an NLMSG_ERROR answering a verdict */
				/* Do not let a burst starve the timer. */
				if (ring_len && ring[ring_head].deadline_ns <= now_ns())
					break;
			}
		}
		if (t_end && now_ns() >= t_end)
			running = 0;
	}

	double dur = (double)(now_ns() - t_start) / 1e9;
	while (ring_len)
		release_due(UINT64_MAX, 1);
	write_stats(stats_path, dur);
	mnl_socket_close(nl); /* unbinds the queue */
	return 0;
}
