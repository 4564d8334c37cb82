/* Role "tcp": the device as the tcp transport's emitter (docs/device-client.md, "The raw-TCP
 * role"; the block-sizes study), as agents/tcp.py and the native agent's tcp.c send: no broker
 * and no MQTT, frames straight to the host's receiver over the bridge's one TCP connection —
 * length (4 bytes) | kind | body, agents/native/frame.h compiled unchanged:
 *
 *   KEY_EXCHANGE   with a payload scheme: the receiver's hello (H) read, the emitter's answer
 *                  (K) written, the receiver's confirmation (R) read and verified — counted as
 *                  the handshake's one group (KEY_EXCHANGE .. END), recorded as a key_exchange
 *                  event; its primitives (ffdhe2048 and its subgroup check, RSA-OAEP, ECDH,
 *                  ML-KEM, HKDF) as crypto
 *   END            the connection ready: from here one record per block
 *
 * then the blocks: the plaintext is seq, t_created_ns and the seeded filler (agents/wire.py,
 * agents/native/filler.c), sealed into a D frame (docs/wire-format.md) — without a scheme the
 * frame carries the plaintext itself, stamped in place — at the run's rate (emitter.c
 * keep_schedule) or, saturating, the next as soon as the last is written for the run's
 * duration on the lab's clock. With the echo method each block's C frame is read back before
 * the next, opened with the receiver-to-emitter keys and its seq checked; the block's count
 * then runs from its creation to its echo opened (encrypt, send, receive, decrypt), and an
 * echo record says when it came back and what opening it cost. At the end Z {"sent": N}.
 *
 * The bridge passes the firmware's bytes to the receiver and the receiver's back, as it does
 * the broker's; the TCP connection and its close are the bridge's. A malformed frame from the
 * receiver, an echo that does not open or carries another block, ends the run (device_fail). */
#include "device.h"

#include "../../agents/native/filler.h"
#include "../../agents/native/frame.h"
#include "../../agents/native/scheme.h"

#include <stdio.h>
#include <string.h>

#define HEADER_BYTES 16 /* seq and t_created_ns: agents/wire.py */
#define PAYLOAD_MAX (64u * 1024u)

/* A frame whose body (body_len bytes) is in place at frame + FRAME_HEADER: its header put in
 * front, then one send. */
static void write_frame(uint8_t *frame, char kind, size_t body_len)
{
    frame_header_put(frame, kind, body_len);
    net_send(frame, FRAME_HEADER + body_len);
}

/* The next frame, which must be of kind: its body (at most cap bytes) into body, its length.
 * what names it in an error, with block seq when it is an echo (seq >= 0): formatted only
 * then, so that a block's count does not grow with its number's digits. */
static size_t read_frame_of(char kind, const char *what, long seq, uint8_t *body, size_t cap)
{
    uint8_t header[FRAME_HEADER];
    net_recv(header, FRAME_HEADER);
    uint32_t length = frame_header_length(header);
    char why[160], named[64];
    if (length == 0 || header[4] != (uint8_t)kind || length - 1 > cap) {
        if (seq >= 0)
            snprintf(named, sizeof named, "%s %ld", what, seq);
        else
            snprintf(named, sizeof named, "%s", what);
        what = named;
    }
    if (length == 0) {
        snprintf(why, sizeof why, "length %lu, kind 0x%02x",
                 (unsigned long)(header[0] << 24 | header[1] << 16 | header[2] << 8 | header[3]),
                 header[4]);
        device_fail("malformed frame from the receiver", why);
    }
    if (header[4] != (uint8_t)kind) {
        snprintf(why, sizeof why, "expected %s (frame %c), got frame %c", what, kind, header[4]);
        device_fail("unexpected frame from the receiver", why);
    }
    if (length - 1 > cap) {
        snprintf(why, sizeof why, "%s: %lu bytes, at most %lu expected", what,
                 (unsigned long)(length - 1), (unsigned long)cap);
        device_fail("frame too large", why);
    }
    net_recv(body, length - 1);
    return length - 1;
}

/* The key exchange's buffers: on the heap while it runs, as over MQTT (publish.c: an ML-KEM-1024
 * message is 1.6 KB), so its heap peak shows them; K is sealed in place behind its header. */
struct kx_frames {
    uint8_t hello[KX_MAX_MESSAGE], ready[KX_MAX_MESSAGE];
    uint8_t reply[FRAME_HEADER + KX_MAX_MESSAGE];
};

/* The emitter's side of the key exchange over frames (H in, K out, R in): e2r, and *r2e for
 * the echoes; the stack high-water mark it read (record_key_exchange). Marked KEY_EXCHANGE
 * once its buffers are there (their allocation and zeroing are the set-up's, so the group is
 * the exchange's span and its frames' reads); timed from the hello's arrival to the
 * confirmation verified, as the host agents time it. */
static struct direction *key_exchange(struct direction **r2e, size_t *stack_bytes)
{
    struct kx_frames *b = vm_calloc(1, sizeof *b);
    if (b == NULL)
        device_fail("key exchange", "no memory for its buffers");
    ledger_mark("KEY_EXCHANGE");
    size_t hello_len =
        read_frame_of('H', "the receiver's key-exchange hello", -1, b->hello, sizeof b->hello);
    uint64_t t_start = lab_now_ns();
    struct counts before = counts_now();
    const char *why = "?";
    /* a psk-* scheme's key came with the configuration, as over MQTT (publish.c) */
    size_t reply_len = kx_emitter_answer(config.psk_len ? config.psk : NULL, config.psk_len,
                                         b->hello, hello_len, b->reply + FRAME_HEADER, &why);
    if (reply_len == 0)
        device_fail("key exchange failed", why);
    write_frame(b->reply, 'K', reply_len);
    size_t ready_len =
        read_frame_of('R', "the receiver's key confirmation", -1, b->ready, sizeof b->ready);
    struct direction *e2r = NULL;
    if (!kx_emitter_confirm(b->ready, ready_len, &e2r, &why))
        device_fail("key exchange failed", why);
    uint64_t t_end = lab_now_ns();
    *stack_bytes = record_key_exchange(t_start, t_end, reply_len, hello_len + ready_len, before,
                                       counts_now());
    *r2e = kx_emitter_reverse();
    vm_free(b);
    return e2r;
}

struct echo {
    uint64_t returned, opened; /* the lab's clock */
    uint64_t open;             /* opening it: client instructions */
    uint32_t wire_bytes;       /* its frame, header included */
};

/* Block seq's echo (a C frame): read, opened with r2e (without a scheme the block itself) and
 * its seq checked, as agents/tcp.py's emitter does. */
static struct echo read_echo(uint32_t seq, struct direction *r2e, uint8_t *body, size_t cap,
                             uint8_t *opened)
{
    size_t len = read_frame_of('C', "the echo of block", seq, body, cap);
    struct echo e = {.returned = lab_now_ns(), .wire_bytes = (uint32_t)(FRAME_HEADER + len)};
    struct counts start = counts_now();
    const uint8_t *plaintext = body;
    size_t plaintext_len = len;
    char what[48];
    if (r2e != NULL) {
        if (scheme_open(r2e, body, len, opened, &plaintext_len) != OPEN_OK) {
            snprintf(what, sizeof what, "the echo of block %lu", (unsigned long)seq);
            device_fail(what, "does not verify");
        }
        plaintext = opened;
    }
    if (plaintext_len < HEADER_BYTES || get_be64(plaintext) != seq) {
        snprintf(what, sizeof what, "the echo of block %lu", (unsigned long)seq);
        device_fail(what, "carries another block");
    }
    e.open = client_between(start, counts_now());
    e.opened = lab_now_ns();
    return e;
}

void role_tcp(void)
{
    uint32_t size = config.payload_bytes;
    if (size < HEADER_BYTES || size > PAYLOAD_MAX ||
        (config.saturating ? config.duration_ns == 0 : config.period_ns == 0))
        device_fail("tcp: payload 16 B .. 64 KiB and a rate or a saturating duration, please",
                    NULL);
    if (config.tls_version[0] != '\0')
        device_fail("tcp: the device sends its frames without TLS", config.tls_version);

    samples_start();
    bool sealing = scheme_select(config.scheme);
    ledger_mark("SETUP"); /* nothing to set up: no TLS (the bridge made the TCP connection) */
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    stack_paint();
    vm_heap_mark();
    ledger_bucket(resume);
    struct direction *e2r = NULL, *r2e = NULL;
    size_t stack_bytes = 0; /* the key exchange's, read before its record was written */
    if (sealing)
        e2r = key_exchange(&r2e, &stack_bytes);
    ledger_mark("END");

    /* as session_open (main.c) reports the connection: the key exchange's memory and bytes */
    resume = ledger_bucket(BUCKET_HARNESS);
    struct vm_heap handshake = vm_heap();
    if (!sealing)
        stack_bytes = stack_high_water_bytes(); /* before any record is written */
    ledger_flush(); /* the key exchange's segments; from here one record per block */
    ledger_keep_segments(false);
    if (!ledger_overflowed())
        counter("stack_high_water_bytes", stack_bytes);
    counter("tls_heap_handshake_peak_bytes", handshake.peak);
    counter("tls_heap_steady_bytes", handshake.current);
    counter("stream_bytes_sent", net_bytes_sent());
    counter("stream_bytes_received", net_bytes_received());
    vm_heap_mark();
    /* the blocks' buffers are the application's: on the heap, in the publishing peak */
    size_t body_cap = size + SCHEME_MAX_OVERHEAD;
    uint8_t *frame = vm_calloc(1, FRAME_HEADER + body_cap);
    uint8_t *plaintext = sealing ? vm_calloc(1, size) : frame + FRAME_HEADER;
    uint8_t *echoed = config.echo ? vm_calloc(1, body_cap) : NULL;
    uint8_t *opened = config.echo && sealing ? vm_calloc(1, body_cap) : NULL;
    if (frame == NULL || plaintext == NULL || (config.echo && echoed == NULL) ||
        (config.echo && sealing && opened == NULL))
        device_fail("tcp: no memory for a block of this size", NULL);
    iotsb_filler(config.filler_seed, plaintext + HEADER_BYTES, size - HEADER_BYTES);
    record("event",
           "\"name\":\"publish_start\",\"messages\":%lu,\"saturating\":%s,\"method\":\"%s\"",
           (unsigned long)(config.saturating ? 0 : config.message_count),
           config.saturating ? "true" : "false", config.echo ? "echo" : "unidirectional");
    ledger_bucket(resume);

    uint64_t start_ns = lab_now_ns(), stop_ns = start_ns + config.duration_ns;
    uint32_t sent = 0;
    for (uint32_t seq = 0; config.saturating ? lab_now_ns() < stop_ns : seq < config.message_count;
         seq++) {
        if (!config.saturating)
            keep_schedule(seq, start_ns);
        struct sent_message m;
        message_start(&m, seq, size, plaintext);
        /* sealed into the frame: one buffer, one send */
        size_t body_len = sealing ? message_seal(&m, e2r, plaintext, frame + FRAME_HEADER) : size;
        m.sealed = lab_now_ns();
        write_frame(frame, 'D', body_len);
        m.published = lab_now_ns();
        struct echo e = {0};
        if (config.echo)
            e = read_echo(seq, r2e, echoed, body_cap, opened);
        m.after = counts_now();
        m.wire_bytes = m.packet_bytes = (uint32_t)(FRAME_HEADER + body_len);
        sent++;
        record_message(&m);
        if (config.echo) {
            resume = ledger_bucket(BUCKET_HARNESS);
            record("echo",
                   "\"seq\":%lu,\"t_sent_ns\":%llu,\"t_returned_ns\":%llu,\"t_opened_ns\":%llu,"
                   "\"open\":%llu,\"wire_bytes\":%lu",
                   (unsigned long)seq, (unsigned long long)m.created,
                   (unsigned long long)e.returned, (unsigned long long)e.opened,
                   (unsigned long long)e.open, (unsigned long)e.wire_bytes);
            ledger_bucket(resume);
        }
        samples_due(lab_now_ns());
    }
    uint8_t end[FRAME_HEADER + 40];
    int n = snprintf((char *)end + FRAME_HEADER, sizeof end - FRAME_HEADER, "{\"sent\": %lu}",
                     (unsigned long)sent);
    write_frame(end, 'Z', (size_t)n);
    emitter_end(sent);
}
