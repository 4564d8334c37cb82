/* What the device's two emitter roles share (publish.c over MQTT, frames.c over the tcp
 * transport): the ledger's counts as the records split them, the samples every 100 ms of the
 * lab's clock, the schedule of a fixed-rate run, and the records of a message and of the key
 * exchange (docs/device-client.md, "The whole run").
 *
 * Records are written in the harness bucket (not counted):
 *
 *   message   seq, t_created_ns, t_sealed_ns, t_published_ns (the PUBLISH or frame written),
 *             payload and wire bytes, and the instructions the message cost from its creation
 *             to its PUBLISH written (at QoS 1: its PUBACK read; an echoed block: its echo
 *             opened): crypto (inside the wrapped primitives), protocol (the rest of the client
 *             bucket), wait and io; seal, the payload scheme's seal alone
 *   sample    t_ns and the cumulative counts since the ledger started: crypto, protocol, wait,
 *             io instructions, sleep_ns (WFI, on the lab's clock), the heap now and its peak
 *             since the handshake ended, and crypto per primitive family (families)
 *   event     key_exchange: its span, bytes and counts (ML-KEM's apart: mlkem), with its stack
 *             high-water mark and heap peak as counters of their own
 *
 * A schedule the emulation cannot keep ends the run (device_fail) once a message is more than
 * LATE_LIMIT_NS late, with the rate achieved until then: the firmware never sends slower in
 * silence. */
#include "device.h"

#include "../../agents/native/scheme.h"

#include <stdio.h>

#define SAMPLE_PERIOD_NS 100000000u /* 10 Hz, as the agents' sampler */
#define LATE_LIMIT_NS 2000000000u   /* behind schedule by this much: the rate cannot be kept */

static uint64_t slept_ns, next_sample_ns;

struct counts counts_now(void)
{
    struct ledger_totals totals;
    ledger_totals(&totals);
    struct counts c = {0, 0, totals.buckets[BUCKET_WAIT], totals.buckets[BUCKET_IO], {0}};
    for (int f = 0; f < FAMILIES; f++) {
        c.crypto += totals.families[f];
        c.families[f] = totals.families[f];
    }
    c.protocol = totals.buckets[BUCKET_CLIENT] - c.crypto;
    return c;
}

uint64_t client_between(struct counts from, struct counts to)
{
    return to.crypto + to.protocol - from.crypto - from.protocol;
}

static void sample_now(uint64_t t_ns)
{
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    struct counts c = counts_now();
    struct vm_heap heap = vm_heap();
    /* crypto per primitive family, cumulative: what an accelerator prices apart (energy.model) */
    char families[FAMILIES * 40] = "";
    for (int f = 0, at = 0; f < FAMILIES; f++)
        at += snprintf(families + at, sizeof families - (size_t)at, "%s\"%s\":%llu", f ? "," : "",
                       ledger_family_name((enum family)f), (unsigned long long)c.families[f]);
    record("sample",
           "\"t_ns\":%llu,\"crypto\":%llu,\"protocol\":%llu,\"wait\":%llu,\"io\":%llu,"
           "\"sleep_ns\":%llu,\"heap_bytes\":%lu,\"heap_peak_bytes\":%lu,\"families\":{%s}",
           (unsigned long long)t_ns, (unsigned long long)c.crypto,
           (unsigned long long)c.protocol, (unsigned long long)c.wait,
           (unsigned long long)c.io, (unsigned long long)slept_ns, (unsigned long)heap.current,
           (unsigned long)heap.peak, families);
    ledger_bucket(resume);
}

void samples_start(void)
{
    next_sample_ns = lab_now_ns();
    samples_due(next_sample_ns);
}

void samples_due(uint64_t now)
{
    while (next_sample_ns <= now) {
        sample_now(now);
        next_sample_ns += SAMPLE_PERIOD_NS;
        if (next_sample_ns <= now) /* woken late: one sample now, never a burst */
            next_sample_ns = now + SAMPLE_PERIOD_NS;
    }
}

/* Sleeps until due_ns, waking for every sample on the way. */
static void wait_until(uint64_t due_ns)
{
    for (uint64_t now = lab_now_ns(); now < due_ns; now = lab_now_ns()) {
        uint64_t until = next_sample_ns < due_ns ? next_sample_ns : due_ns;
        if (until > now)
            slept_ns += sleep_until(until);
        samples_due(lab_now_ns());
    }
}

void keep_schedule(uint32_t seq, uint64_t start_ns)
{
    uint64_t due = start_ns + seq * config.period_ns;
    wait_until(due);
    uint64_t late = lab_now_ns() - due;
    if (late <= LATE_LIMIT_NS)
        return;
    uint64_t span = lab_now_ns() - start_ns;
    char why[160];
    snprintf(why, sizeof why,
             "achieved %lu.%03lu Hz of %lu.%03lu Hz asked (%lu messages in %lu ms)",
             (unsigned long)(seq * 1000000000000ull / span / 1000),
             (unsigned long)(seq * 1000000000000ull / span % 1000),
             (unsigned long)(1000000000000ull / config.period_ns / 1000),
             (unsigned long)(1000000000000ull / config.period_ns % 1000), (unsigned long)seq,
             (unsigned long)(span / 1000000));
    device_fail("the emulation cannot keep the rate", why);
}

static void put_be64(uint8_t *out, uint64_t value)
{
    for (int i = 7; i >= 0; i--, value >>= 8)
        out[i] = (uint8_t)value;
}

uint64_t get_be64(const uint8_t *in)
{
    uint64_t value = 0;
    for (int i = 0; i < 8; i++)
        value = value << 8 | in[i];
    return value;
}

void message_start(struct sent_message *m, uint32_t seq, uint32_t size, uint8_t *plaintext)
{
    *m = (struct sent_message){.seq = seq, .payload_bytes = size};
    m->before = counts_now();
    m->created = lab_now_ns();
    put_be64(plaintext, seq);
    put_be64(plaintext + 8, m->created);
}

size_t message_seal(struct sent_message *m, struct direction *e2r, const uint8_t *plaintext,
                    uint8_t *out)
{
    struct counts start = counts_now();
    size_t len = scheme_seal(e2r, plaintext, m->payload_bytes, out);
    if (len == 0)
        device_fail("payload scheme", "sealing failed (out of sequence numbers?)");
    m->seal = client_between(start, counts_now()); /* crypto and the framing */
    return len;
}

void record_message(const struct sent_message *m)
{
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    record("message",
           "\"seq\":%lu,\"payload_bytes\":%lu,\"wire_bytes\":%lu,\"packet_bytes\":%lu,"
           "\"t_created_ns\":%llu,\"t_sealed_ns\":%llu,\"t_published_ns\":%llu,"
           "\"seal\":%llu,\"crypto\":%llu,\"protocol\":%llu,\"wait\":%llu,\"io\":%llu",
           (unsigned long)m->seq, (unsigned long)m->payload_bytes, (unsigned long)m->wire_bytes,
           (unsigned long)m->packet_bytes, (unsigned long long)m->created,
           (unsigned long long)m->sealed, (unsigned long long)m->published,
           (unsigned long long)m->seal, (unsigned long long)(m->after.crypto - m->before.crypto),
           (unsigned long long)(m->after.protocol - m->before.protocol),
           (unsigned long long)(m->after.wait - m->before.wait),
           (unsigned long long)(m->after.io - m->before.io));
    ledger_bucket(resume);
}

size_t record_key_exchange(uint64_t t_start, uint64_t t_end, size_t bytes_out, size_t bytes_in,
                           struct counts before, struct counts after)
{
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    size_t stack_bytes = stack_high_water_bytes(); /* before its record is written */
    struct vm_heap heap = vm_heap();
    record("event",
           "\"name\":\"key_exchange\",\"t_start_ns\":%llu,\"t_end_ns\":%llu,\"bytes_out\":%lu,"
           "\"bytes_in\":%lu,\"crypto\":%llu,\"protocol\":%llu,\"wait\":%llu,\"io\":%llu,"
           "\"mlkem\":%llu",
           (unsigned long long)t_start, (unsigned long long)t_end, (unsigned long)bytes_out,
           (unsigned long)bytes_in, (unsigned long long)(after.crypto - before.crypto),
           (unsigned long long)(after.protocol - before.protocol),
           (unsigned long long)(after.wait - before.wait),
           (unsigned long long)(after.io - before.io),
           (unsigned long long)(after.families[FAMILY_MLKEM] - before.families[FAMILY_MLKEM]));
    if (!ledger_overflowed()) /* else records were written inside it: no figure */
        counter("key_exchange_stack_high_water_bytes", stack_bytes);
    counter("key_exchange_heap_peak_bytes", heap.peak);
    ledger_bucket(resume);
    return stack_bytes;
}

void emitter_end(uint32_t sent)
{
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    samples_due(lab_now_ns());
    sample_now(lab_now_ns());
    struct vm_heap heap = vm_heap();
    counter("tls_heap_publishing_peak_bytes", heap.peak);
    counter("messages_sent", sent);
    record("event", "\"name\":\"publish_end\",\"sent\":%lu", (unsigned long)sent);
    ledger_keep_segments(true);
    ledger_bucket(resume);
}
