#include "sampler.h"

#include "records.h"

#include <inttypes.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define INTERVAL_NS 100000000LL

static atomic_int socket_fd = -1;
static atomic_bool stopping;
static bool started;
static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct tcp_counters {
    uint64_t bytes_sent, bytes_acked, bytes_received, segs_out, segs_in, retrans;
} last; /* held when the socket is gone: counters never go backwards */

static void sample(void)
{
    pthread_mutex_lock(&lock);
    int64_t t = now_ns(), cpu = process_cpu_ns();
    long rss = rss_bytes();
    int fd = atomic_load(&socket_fd);
    if (fd >= 0) {
        struct tcp_info info;
        socklen_t size = sizeof info;
        memset(&info, 0, sizeof info);
        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) == 0) {
            last.bytes_sent = info.tcpi_bytes_sent;
            last.bytes_acked = info.tcpi_bytes_acked;
            last.bytes_received = info.tcpi_bytes_received;
            last.segs_out = info.tcpi_segs_out;
            last.segs_in = info.tcpi_segs_in;
            last.retrans = info.tcpi_total_retrans;
        }
    }
    record("sample",
           "\"t_ns\":%" PRId64 ",\"cpu_ns\":%" PRId64 ",\"rss_bytes\":%ld,"
           "\"tcp_bytes_sent\":%" PRIu64 ",\"tcp_bytes_acked\":%" PRIu64
           ",\"tcp_bytes_received\":%" PRIu64 ",\"tcp_segs_out\":%" PRIu64
           ",\"tcp_segs_in\":%" PRIu64 ",\"tcp_retrans\":%" PRIu64,
           t, cpu, rss, last.bytes_sent, last.bytes_acked, last.bytes_received, last.segs_out,
           last.segs_in, last.retrans);
    records_flush();
    pthread_mutex_unlock(&lock);
}

static void *run(void *unused)
{
    (void)unused;
    int64_t t0 = now_ns(), tick = 0;
    while (!atomic_load(&stopping)) {
        sample();
        int64_t latest = (now_ns() - t0) / INTERVAL_NS;
        tick = latest > tick ? latest : tick;
        tick++;
        int64_t due = t0 + tick * INTERVAL_NS;
        struct timespec at = {due / 1000000000, due % 1000000000};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) != 0 &&
               !atomic_load(&stopping))
            ;
    }
    return NULL;
}

void sampler_start(void)
{
    sigset_t all, previous; /* signals go to the main thread, which turns them into records */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    started = pthread_create(&thread, NULL, run, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}

void sampler_set_socket(int fd)
{
    if (fd < 0)
        sample(); /* the closing connection's last bytes, before its counters go away */
    atomic_store(&socket_fd, fd);
}

void sampler_stop(void)
{
    if (!started)
        return;
    started = false;
    atomic_store(&stopping, true);
    pthread_join(thread, NULL);
    sample();
}
