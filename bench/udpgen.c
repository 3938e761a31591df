/* udpgen: paced raw UDP/IPv4 or UDP/IPv6 sender and counter sampler for bench/run_bench.py.
 *
 * Sends pre-built Ethernet/IPv4/UDP (or Ethernet/IPv6/UDP, when --src-ip and
 * --dst-ip are IPv6 addresses) frames on one interface through an
 * AF_PACKET socket (sendmmsg, batches of at most 64), paced to --rate packets
 * per second (0 = as fast as it can). Every --sample-ms it prints one JSON
 * line with cumulative counts, so the caller picks its own steady window:
 *
 *   {"t": seconds since start, "sent": frames accepted by the kernel,
 *    "send_err": failed sends, "self_cpu_s": this process's user+sys CPU,
 *    "pid_cpu_ticks": utime+stime of --watch-pid (or -1),
 *    "threads": {tid: utime+stime} of each of its threads (with --watch-pid),
 *    "cpu_ticks": the machine's /proc/stat "cpu" line (user nice system idle
 *                 iowait irq softirq steal, all cores),
 *    "if": {"h2": [rx_packets, rx_dropped, tx_packets, tx_dropped], ...}}
 *
 * Interface counters come from /sys/class/net/<if>/statistics, so run it
 * with `ip netns exec` (which mounts the namespace's own /sys). Root only.
 *
 * The frame: --size is the IP packet's length, IPv4's total length (1000 = 972
 * bytes of UDP payload, as `iperf3 -u -l 972`) or IPv6's 40-byte header plus
 * its payload length (1000 = 952 bytes of UDP payload: the same frame size),
 * DSCP --dscp, ECN 0, TTL (hop limit) 64, flow label 0, no extension headers,
 * correct IPv4 and UDP checksums (RFC 8200 §8.1's pseudo-header for IPv6);
 * flow i of --flows uses UDP source port 10000 + i % 50000 and
 * destination port --dport + i / 50000 (up to MAX_FLOWS distinct 5-tuples).
 * Flows are sent round-robin: packet n belongs to flow n % --flows.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FLOWS (1 << 20)
#define MAX_IFS 8
#define BATCH 64

static volatile sig_atomic_t stop_now;
static void on_signal(int sig) { (void)sig; stop_now = 1; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_until(double t) {
    struct timespec ts;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static int parse_mac(const char *s, uint8_t mac[6]) {
    unsigned v[6];
    if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) return -1;
    for (int i = 0; i < 6; i++) { if (v[i] > 255) return -1; mac[i] = (uint8_t)v[i]; }
    return 0;
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n) {
    for (size_t i = 0; i + 1 < n; i += 2) sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (n & 1) sum += (uint32_t)(p[n - 1] << 8);
    return sum;
}

static uint16_t csum_fold(uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

static size_t build_frame(uint8_t *f, int ip_len, const uint8_t dmac[6], const uint8_t smac[6],
                          uint32_t sip, uint32_t dip, uint16_t sport, uint16_t dport,
                          int dscp) {
    memset(f, 0, 14 + (size_t)ip_len);
    memcpy(f, dmac, 6);
    memcpy(f + 6, smac, 6);
    f[12] = 0x08; f[13] = 0x00;
    uint8_t *ip = f + 14;
    ip[0] = 0x45; ip[1] = (uint8_t)(dscp << 2);    /* IHL 5, DSCP, ECN 0 */
    ip[2] = (uint8_t)(ip_len >> 8); ip[3] = (uint8_t)ip_len;
    ip[6] = 0x40;                                  /* DF */
    ip[8] = 64; ip[9] = 17;                        /* TTL, UDP */
    memcpy(ip + 12, &sip, 4);                      /* network order already */
    memcpy(ip + 16, &dip, 4);
    uint16_t c = csum_fold(csum_add(0, ip, 20));
    ip[10] = (uint8_t)(c >> 8); ip[11] = (uint8_t)c;
    uint8_t *udp = ip + 20;
    int udp_len = ip_len - 20;
    udp[0] = (uint8_t)(sport >> 8); udp[1] = (uint8_t)sport;
    udp[2] = (uint8_t)(dport >> 8); udp[3] = (uint8_t)dport;
    udp[4] = (uint8_t)(udp_len >> 8); udp[5] = (uint8_t)udp_len;
    for (int i = 8; i < udp_len; i++) udp[i] = (uint8_t)i;   /* payload pattern */
    uint32_t sum = csum_add(0, ip + 12, 8);                   /* pseudo header */
    sum += 17 + (uint32_t)udp_len;
    sum = csum_add(sum, udp, (size_t)udp_len);
    c = csum_fold(sum);
    if (c == 0) c = 0xffff;
    udp[6] = (uint8_t)(c >> 8); udp[7] = (uint8_t)c;
    return 14 + (size_t)ip_len;
}

/* Ethernet/IPv6/UDP: ip_len = 40 + payload length; addresses in network order. */
static size_t build_frame6(uint8_t *f, int ip_len, const uint8_t dmac[6], const uint8_t smac[6],
                           const uint8_t sip[16], const uint8_t dip[16], uint16_t sport,
                           uint16_t dport, int dscp) {
    memset(f, 0, 14 + (size_t)ip_len);
    memcpy(f, dmac, 6);
    memcpy(f + 6, smac, 6);
    f[12] = 0x86; f[13] = 0xdd;
    uint8_t *ip = f + 14;
    int udp_len = ip_len - 40;
    const int tclass = dscp << 2;                  /* traffic class: DSCP, ECN 0 */
    ip[0] = (uint8_t)(0x60 | tclass >> 4);         /* version 6 */
    ip[1] = (uint8_t)((tclass & 0x0f) << 4);       /* flow label 0 */
    ip[4] = (uint8_t)(udp_len >> 8); ip[5] = (uint8_t)udp_len;   /* payload length */
    ip[6] = 17; ip[7] = 64;                        /* next header UDP, hop limit */
    memcpy(ip + 8, sip, 16);
    memcpy(ip + 24, dip, 16);
    uint8_t *udp = ip + 40;
    udp[0] = (uint8_t)(sport >> 8); udp[1] = (uint8_t)sport;
    udp[2] = (uint8_t)(dport >> 8); udp[3] = (uint8_t)dport;
    udp[4] = (uint8_t)(udp_len >> 8); udp[5] = (uint8_t)udp_len;
    for (int i = 8; i < udp_len; i++) udp[i] = (uint8_t)i;   /* payload pattern */
    uint32_t sum = csum_add(0, ip + 8, 32);                   /* pseudo header (RFC 8200 §8.1) */
    sum += 17 + (uint32_t)udp_len;
    sum = csum_add(sum, udp, (size_t)udp_len);
    uint16_t c = csum_fold(sum);
    if (c == 0) c = 0xffff;                        /* mandatory over IPv6 */
    udp[6] = (uint8_t)(c >> 8); udp[7] = (uint8_t)c;
    return 14 + (size_t)ip_len;
}

static long long read_ll(const char *path) {
    FILE *fp = fopen(path, "r");
    long long v = -1;
    if (!fp) return -1;
    if (fscanf(fp, "%lld", &v) != 1) v = -1;
    fclose(fp);
    return v;
}

static long long stat_ticks(const char *path) {
    char buf[4096];
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) return -1;
    /* after ") ": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
    unsigned long long ut = 0, st = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (long long)(ut + st);
}

static long long pid_ticks(int pid) {
    char path[64];
    if (pid <= 0) return -1;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    return stat_ticks(path);
}

/* ,"threads": {"tid": utime+stime, ...} of every thread of pid. */
static void print_threads(int pid) {
    char path[64];
    if (pid <= 0) return;
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d) return;
    printf(", \"threads\": {");
    int first = 1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char tpath[300];
        snprintf(tpath, sizeof tpath, "/proc/%d/task/%s/stat", pid, e->d_name);
        long long ticks = stat_ticks(tpath);
        if (ticks < 0) continue;
        printf("%s\"%s\": %lld", first ? "" : ", ", e->d_name, ticks);
        first = 0;
    }
    closedir(d);
    printf("}");
}

/* The aggregate "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal. */
static int sys_ticks(unsigned long long v[8]) {
    FILE *fp = fopen("/proc/stat", "r");
    if (!fp) return -1;
    int n = fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(fp);
    return n == 8 ? 0 : -1;
}

static double self_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static const char *ifs[MAX_IFS];
static int n_ifs;

static void emit(double t, unsigned long long sent, unsigned long long errs, int watch_pid) {
    unsigned long long c[8] = {0};
    sys_ticks(c);
    printf("{\"t\": %.6f, \"sent\": %llu, \"send_err\": %llu, \"self_cpu_s\": %.3f, "
           "\"pid_cpu_ticks\": %lld, \"cpu_ticks\": [%llu, %llu, %llu, %llu, %llu, %llu, %llu, %llu], "
           "\"if\": {", t, sent, errs, self_cpu_s(), pid_ticks(watch_pid),
           c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    static const char *names[4] = {"rx_packets", "rx_dropped", "tx_packets", "tx_dropped"};
    for (int i = 0; i < n_ifs; i++) {
        printf("%s\"%s\": [", i ? ", " : "", ifs[i]);
        for (int k = 0; k < 4; k++) {
            char path[256];
            snprintf(path, sizeof path, "/sys/class/net/%s/statistics/%s", ifs[i], names[k]);
            printf("%s%lld", k ? ", " : "", read_ll(path));
        }
        printf("]");
    }
    printf("}");
    print_threads(watch_pid);
    printf("}\n");
    fflush(stdout);
}

static void usage(void) {
    fprintf(stderr,
            "usage: udpgen --iface IF --src-mac M --dst-mac M --src-ip A --dst-ip A (both IPv4 or both IPv6)\n"
            "              [--rate PPS (0 = unlimited)] [--duration S] [--sample-ms MS]\n"
            "              [--size IP_PACKET_LEN (1000; IPv4 >= 28, IPv6 >= 48)] [--flows N (1)] [--dport P (9)] [--dscp D (0)]\n"
            "              [--ifstat IF]... [--watch-pid PID] [--dump-frame 1]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *iface = NULL;
    uint8_t smac[6], dmac[6];
    int have_smac = 0, have_dmac = 0;
    struct in_addr sip = {0}, dip = {0};
    struct in6_addr sip6, dip6;
    int have_sip = 0, have_dip = 0, sip_v6 = 0, dip_v6 = 0;
    double rate = 0, duration = 5, sample_ms = 1000;
    int size = 1000, flows = 1, dport = 9, dscp = 0, watch_pid = -1, dump_frame = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--iface")) iface = v;
        else if (!strcmp(a, "--src-mac")) have_smac = parse_mac(v, smac) == 0;
        else if (!strcmp(a, "--dst-mac")) have_dmac = parse_mac(v, dmac) == 0;
        else if (!strcmp(a, "--src-ip")) {
            sip_v6 = strchr(v, ':') != NULL;
            have_sip = sip_v6 ? inet_pton(AF_INET6, v, &sip6) == 1 : inet_pton(AF_INET, v, &sip) == 1;
        } else if (!strcmp(a, "--dst-ip")) {
            dip_v6 = strchr(v, ':') != NULL;
            have_dip = dip_v6 ? inet_pton(AF_INET6, v, &dip6) == 1 : inet_pton(AF_INET, v, &dip) == 1;
        }
        else if (!strcmp(a, "--rate")) rate = atof(v);
        else if (!strcmp(a, "--duration")) duration = atof(v);
        else if (!strcmp(a, "--sample-ms")) sample_ms = atof(v);
        else if (!strcmp(a, "--size")) size = atoi(v);
        else if (!strcmp(a, "--flows")) flows = atoi(v);
        else if (!strcmp(a, "--dport")) dport = atoi(v);
        else if (!strcmp(a, "--dscp")) dscp = atoi(v);
        else if (!strcmp(a, "--watch-pid")) watch_pid = atoi(v);
        else if (!strcmp(a, "--dump-frame")) dump_frame = atoi(v);
        else if (!strcmp(a, "--ifstat")) { if (n_ifs == MAX_IFS) usage(); ifs[n_ifs++] = v; }
        else usage();
    }
    if (!iface || !have_smac || !have_dmac || !have_sip || !have_dip || sip_v6 != dip_v6) usage();
    const int v6 = sip_v6;
    if (size < (v6 ? 48 : 28) || size > 9000 || flows < 1 || flows > MAX_FLOWS || rate < 0 || duration <= 0 ||
        sample_ms <= 0 || dport < 0 || dport + (flows - 1) / 50000 > 65535 ||
        dscp < 0 || dscp > 63) usage();

    size_t flen = 14 + (size_t)size;
    uint8_t *frames = malloc(flen * (size_t)flows);
    if (!frames) return 1;
    for (int i = 0; i < flows; i++) {
        uint16_t sport_i = (uint16_t)(10000 + i % 50000), dport_i = (uint16_t)(dport + i / 50000);
        if (v6)
            build_frame6(frames + flen * (size_t)i, size, dmac, smac, sip6.s6_addr, dip6.s6_addr,
                         sport_i, dport_i, dscp);
        else
            build_frame(frames + flen * (size_t)i, size, dmac, smac, sip.s_addr, dip.s_addr,
                        sport_i, dport_i, dscp);
    }
    if (dump_frame) {                   /* print flow 0's frame as hex, send nothing */
        for (size_t i = 0; i < flen; i++) printf("%02x", frames[i]);
        printf("\n");
        return 0;
    }

    int fd = socket(AF_PACKET, SOCK_RAW, 0);   /* protocol 0: send only, receive nothing */
    if (fd < 0) { perror("udpgen: socket(AF_PACKET)"); return 1; }
    int one = 1;
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one);
    int sndbuf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
    struct sockaddr_ll sll = {0};
    sll.sll_family = AF_PACKET;
    sll.sll_ifindex = (int)if_nametoindex(iface);
    sll.sll_halen = 6;
    memcpy(sll.sll_addr, dmac, 6);
    if (sll.sll_ifindex == 0) { fprintf(stderr, "udpgen: no interface %s\n", iface); return 1; }
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) { perror("udpgen: bind"); return 1; }

    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    memset(msgs, 0, sizeof msgs);

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    unsigned long long sent = 0, errs = 0, seq = 0;
    const double t0 = now_s(), t_end = t0 + duration, dt_sample = sample_ms / 1000.0;
    double next_sample = t0;
    emit(0.0, sent, errs, watch_pid);
    next_sample += dt_sample;
    /* Pacing: the n-th packet is due at t0 + n / rate. When nothing is due,
     * sleep until the next packet is due but at least 200 us, so a burst of
     * up to rate * 200 us packets leaves per wake-up (fewer wake-ups, less CPU). */
    for (;;) {
        double t = now_s();
        if (t >= next_sample) {
            emit(t - t0, sent, errs, watch_pid);
            next_sample += dt_sample;
        }
        if (t >= t_end || stop_now) break;
        unsigned long long n;
        if (rate > 0) {
            unsigned long long due = (unsigned long long)((t - t0) * rate);
            n = due > sent + errs ? due - sent - errs : 0;
            if (n == 0) {
                double wake = t0 + (double)(sent + errs + 1) / rate;
                if (wake < t + 200e-6) wake = t + 200e-6;
                if (wake > next_sample) wake = next_sample;
                sleep_until(wake);
                continue;
            }
        } else {
            n = BATCH;
        }
        if (n > BATCH) n = BATCH;
        for (unsigned k = 0; k < n; k++) {
            iov[k].iov_base = frames + flen * (size_t)(seq++ % (unsigned long long)flows);
            iov[k].iov_len = flen;
            msgs[k].msg_hdr.msg_iov = &iov[k];
            msgs[k].msg_hdr.msg_iovlen = 1;
        }
        int r = sendmmsg(fd, msgs, (unsigned)n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            errs += n;           /* ENOBUFS and the like: count and go on */
        } else {
            sent += (unsigned long long)r;
            if ((unsigned long long)r < n) errs += n - (unsigned long long)r;
        }
    }
    close(fd);
    return 0;
}
