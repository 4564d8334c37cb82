/* The instruction ledger. QEMU runs the firmware under -icount shift=0, and every read of the
 * counter (../firmware/counter.h) is exact to the instruction, so the instructions between two
 * reads can be booked to one place. The ledger keeps one *segment* at a time — the
 * instructions from one event (a mark, or bytes read or written through net.c) to the next —
 * and inside it one *bucket* at a time:
 *
 *   client   the client's own work (TLS, MQTT, the application): what a device computes
 *   wait     polling the UART for bytes not yet there: what the network costs in time
 *   io       moving bytes through the UART register (the emulated link's driver, not a device's)
 *   harness  the firmware's bookkeeping (writing records, the TRNG stand-in, the stack paint)
 *
 * A switch of bucket reads the counter and books what ran since the last read to the bucket
 * that was running. Nothing the network does (when bytes arrive, how they were split) runs
 * in the client bucket: net_recv hands the stack exactly the bytes it asked for, so the client
 * bucket is the same for one seed on any network, by construction.
 *
 * Each segment becomes one count_segment record, kept in RAM when it ends and written by
 * ledger_flush at a point outside the handshake (in the harness bucket).
 * Wrapped primitives (wrap_*.c) add the client instructions spent inside them, per family.
 *
 * The bookkeeping is not free of residue: the few instructions between a function's entry and
 * its first counter read, and after its last, land in the bucket around it. They are the same
 * at every boundary, so main.c measures them once (two marks back to back, a wrapped call of
 * nothing) and the count reports them beside the totals (docs/device-client.md). */
#include "device.h"

#include "../firmware/counter.h"

#include <stdio.h>
#include <string.h>

static const char *const FAMILY_NAMES[FAMILIES] = {"pk", "sha2", "aes", "chacha20_poly1305",
                                                   "mlkem", "mldsa", "lwc"};

const char *ledger_family_name(enum family family) { return FAMILY_NAMES[family]; }

struct segment {
    unsigned index;
    char event;       /* 'm' a mark, 'r' bytes read, 'w' bytes written */
    const char *mark; /* the mark's name */
    uint32_t bytes;   /* of the read or write */
    uint64_t buckets[BUCKETS];
    uint64_t families[FAMILIES];
    uint32_t calls[FAMILIES];
};

/* Ended segments wait here until ledger_flush writes them: writing a record takes a stack frame
 * of its own (vsnprintf), which inside the handshake's deepest calls would be counted in the
 * handshake's stack high-water mark. The buffer is written when full, the only case in which
 * a record is written at a boundary (the stack figure then says so: ledger_overflowed). */
#define ENDED_SEGMENTS 128
static struct segment ended[ENDED_SEGMENTS];
static unsigned ended_count;
static bool overflowed;

static struct segment segment;
static enum bucket running = BUCKET_HARNESS;
static uint32_t last;            /* the counter at the last booking */
static unsigned primitive_depth; /* wrapped primitives nest: the outermost counts */
static uint64_t client_at_entry;
static unsigned entry_segment;
static uint64_t ended_client;    /* the client bucket of the segment that ended last */
static struct ledger_totals totals; /* of every ended segment */
static bool keep_segments = true;

/* Books what ran since the last read to the running bucket, and runs ``next`` from here. */
static inline void book_to(enum bucket next)
{
    uint32_t now = counter_read();
    segment.buckets[running] += (uint32_t)(now - last); /* modulo 2^32: one wrap at most */
    last = now;
    running = next;
}

enum bucket ledger_bucket(enum bucket next)
{
    enum bucket was = running;
    book_to(next);
    return was;
}

/* The families' instructions and calls as two JSON object bodies. */
static void families(const struct segment *done, char *instructions, char *calls, size_t cap)
{
    size_t at = 0, at_calls = 0;
    instructions[0] = calls[0] = '\0';
    for (int f = 0; f < FAMILIES; f++) {
        if (!done->calls[f])
            continue;
        at += (size_t)snprintf(instructions + at, cap - at, "%s\"%s\":%llu", at ? "," : "",
                               FAMILY_NAMES[f], (unsigned long long)done->families[f]);
        at_calls += (size_t)snprintf(calls + at_calls, cap - at_calls, "%s\"%s\":%lu",
                                     at_calls ? "," : "", FAMILY_NAMES[f],
                                     (unsigned long)done->calls[f]);
    }
}

static void write_segment(const struct segment *done)
{
    char primitives[200], calls[200], mark[80];
    families(done, primitives, calls, sizeof primitives);
    unsigned long long client = done->buckets[BUCKET_CLIENT], wait = done->buckets[BUCKET_WAIT],
                       io = done->buckets[BUCKET_IO];
    if (done->event == 'm')
        record("count_segment",
               "\"index\":%u,\"event\":\"m\",\"mark\":%s,\"client\":%llu,\"wait\":%llu,"
               "\"io\":%llu,\"primitives\":{%s},\"calls\":{%s}",
               done->index, json_quote(mark, sizeof mark, done->mark), client, wait, io,
               primitives, calls);
    else
        record("count_segment",
               "\"index\":%u,\"event\":\"%c\",\"bytes\":%lu,\"client\":%llu,\"wait\":%llu,"
               "\"io\":%llu,\"primitives\":{%s},\"calls\":{%s}",
               done->index, done->event, (unsigned long)done->bytes, client, wait, io,
               primitives, calls);
}

void ledger_flush(void)
{
    for (unsigned i = 0; i < ended_count; i++)
        write_segment(&ended[i]);
    ended_count = 0;
}

bool ledger_overflowed(void) { return overflowed; }

static __attribute__((noinline)) void next_segment(char event, const char *mark, uint32_t bytes)
{
    enum bucket resume = running;
    book_to(BUCKET_HARNESS);
    if (ended_count == ENDED_SEGMENTS) {
        overflowed = true;
        ledger_flush();
    }
    for (int b = 0; b < BUCKETS; b++)
        totals.buckets[b] += segment.buckets[b];
    for (int f = 0; f < FAMILIES; f++)
        totals.families[f] += segment.families[f];
    if (keep_segments)
        ended[ended_count++] = segment;
    progress(segment.index + 1, event, mark, bytes);
    ended_client = segment.buckets[BUCKET_CLIENT];
    unsigned index = segment.index + 1;
    memset(&segment, 0, sizeof segment);
    segment.index = index;
    segment.event = event;
    segment.mark = mark;
    segment.bytes = bytes;
    last = counter_read(); /* the record's writing went to no bucket */
    running = resume;
}

void ledger_mark(const char *name) { next_segment('m', name, 0); }

void ledger_io_event(char direction, uint32_t bytes) { next_segment(direction, NULL, bytes); }

/* The bookkeeping of a primitive call runs in the harness bucket, between two counter reads:
 * what stays in the client bucket is the wrapper's call and return (main.c measures it). */
void ledger_primitive_enter(void)
{
    if (primitive_depth++ != 0)
        return;
    enum bucket resume = running;
    book_to(BUCKET_HARNESS);
    client_at_entry = segment.buckets[BUCKET_CLIENT];
    entry_segment = segment.index;
    book_to(resume);
}

void ledger_primitive_leave(enum family family)
{
    if (primitive_depth == 0 || --primitive_depth != 0)
        return;
    enum bucket resume = running;
    book_to(BUCKET_HARNESS);
    uint64_t before = entry_segment == segment.index ? client_at_entry : 0;
    segment.families[family] += segment.buckets[BUCKET_CLIENT] - before;
    segment.calls[family]++;
    book_to(resume);
}

uint64_t ledger_ended_client(void) { return ended_client; }

void ledger_keep_segments(bool keep) { keep_segments = keep; }

void ledger_totals(struct ledger_totals *out)
{
    book_to(running); /* the running segment up to now */
    *out = totals;
    for (int b = 0; b < BUCKETS; b++)
        out->buckets[b] += segment.buckets[b];
    for (int f = 0; f < FAMILIES; f++)
        out->families[f] += segment.families[f];
    last = counter_read(); /* the copying went to no bucket */
}

void ledger_start(void)
{
    memset(&segment, 0, sizeof segment);
    segment.event = 'm';
    segment.mark = "BOOT";
    last = counter_read();
    running = BUCKET_CLIENT;
}
