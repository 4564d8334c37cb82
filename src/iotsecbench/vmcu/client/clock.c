/* The lab's clock on the device, and its sleep.
 *
 * The clock. Every time the lab records is the host's CLOCK_MONOTONIC (measure/clock.py), so
 * a message's t_created_ns must be on it too. QEMU's virtual time is not: under -icount it
 * advances one nanosecond per instruction while the core runs (slower than real time: the
 * emulation runs 50-200 M instructions a second) and at real time while it sleeps. So the
 * firmware reads the host's clock itself: semihosting SYS_ELAPSED is QEMU's get_clock() (the
 * host's CLOCK_MONOTONIC) less QEMU's start, in nanoseconds; the missing start is measured
 * once, before anything is counted, by round trips with the bridge (runner/device.py):
 *
 *   firmware → bridge   an empty frame: ready (booted, configuration read)
 *   SYNC_ROUNDS times:
 *     bridge → firmware   8 bytes (the bridge's clock, H0, just before it sent them)
 *     firmware → bridge   one frame of 8 bytes: SYS_ELAPSED E, read as soon as they arrived
 *   bridge → firmware   8 bytes: the offset, lab clock - SYS_ELAPSED
 *
 * Each E was read between its round's H0 and the arrival of its answer, H1, so the offset lies
 * in [H0 - E, H1 - E] for every round; the bridge takes the tightest bounds over the rounds,
 * their middle, and records half their distance (clock_sync's uncertainty_ns). QEMU hands
 * received bytes to the UART late at times (its main loop runs between translation blocks),
 * which is why one round is not enough. All big-endian. Reading the clock is the harness's
 * (a device reads its own timer in a few instructions).
 *
 * The sleep. Between messages the firmware sleeps on its board's virtual timer (board.c:
 * WFI until the timer's interrupt is pending): under -icount, virtual time follows real time
 * while the core sleeps, so a sleep of d ns of virtual time lasts about d ns of the lab's.
 * The loop re-reads the lab's clock after each wake, so the schedule stays the lab's. */
#include "device.h"

#include <semihost.h>
#include <stdio.h>

#define SYNC_ROUNDS 16 /* runner/device.py's CLOCK_SYNC_ROUNDS */

static int64_t offset_ns; /* lab clock = SYS_ELAPSED + offset_ns */

static uint64_t read_be64(void)
{
    uint64_t value = 0;
    for (int i = 0; i < 8; i++) {
        while (!uart_readable())
            ;
        value = value << 8 | uart_read();
    }
    return value;
}

int clock_sync(char *why, size_t cap)
{
    if (sys_semihost_tickfreq() != 1000000000) {
        snprintf(why, cap, "semihosting ticks at %lu Hz, not in nanoseconds",
                 (unsigned long)sys_semihost_tickfreq());
        return -1;
    }
    uart_write(0); /* ready: an empty frame */
    uart_write(0);
    for (int round = 0; round < SYNC_ROUNDS; round++) {
        (void)read_be64(); /* the bridge's H0: its arrival is what counts */
        uint64_t elapsed = sys_semihost_elapsed();
        uart_write(0);
        uart_write(8);
        for (int shift = 56; shift >= 0; shift -= 8)
            uart_write((uint8_t)(elapsed >> shift));
    }
    offset_ns = (int64_t)read_be64();
    return 0;
}

uint64_t lab_now_ns(void)
{
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    uint64_t now = (uint64_t)((int64_t)sys_semihost_elapsed() + offset_ns);
    ledger_bucket(resume);
    return now;
}

uint64_t sleep_until(uint64_t deadline_ns)
{
    uint64_t start = lab_now_ns(), now = start;
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    while (now < deadline_ns) {
        board_sleep_ns(deadline_ns - now);
        now = (uint64_t)((int64_t)sys_semihost_elapsed() + offset_ns);
    }
    ledger_bucket(resume);
    return now - start;
}
