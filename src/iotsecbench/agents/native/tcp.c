/* The emitter of the tcp transport (agents/tcp.py's, the block-sizes study): one connection
 * straight to the receiver — TLS on it when the configuration asks — the scheme's key
 * exchange as frames H, K, R, a D frame per block (with the echo method each answered by its
 * C frame, opened and checked), and Z {"sent": N} at the end. Frames: length (4 bytes,
 * big-endian, counts kind and body) | kind | body (docs/wire-format.md, "Frames of the tcp
 * transport"). The receiver stays the Python agent: the TLS server is a host, not a device. */
#include "agent.h"
#include "filler.h"
#include "frame.h"
#include "records.h"
#include "scheme.h"
#include "tls.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

void send_frame(char kind, const uint8_t *body, size_t len)
{
    uint8_t *frame = malloc(FRAME_HEADER + len);
    if (frame == NULL)
        die("out of memory");
    frame_header_put(frame, kind, len);
    memcpy(frame + FRAME_HEADER, body, len);
    send_all(frame, FRAME_HEADER + len);
    free(frame);
}

/* The next whole frame in conn.in, waiting up to timeout_ms: its kind and body length (the
 * body at conn.in + FRAME_HEADER; drop it with frame_done), or false on timeout. A length
 * outside 1 … MAX_FRAME or an unknown kind ends the agent before more is read. */
static bool next_frame(char *kind, size_t *len, int timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        if (conn.in_len >= FRAME_HEADER) {
            const uint8_t *h = conn.in;
            uint32_t length = frame_header_length(h);
            if (length == 0)
                die("malformed frame from the receiver: length %" PRIu32 ", kind 0x%02x",
                    (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3],
                    h[4]);
            if (conn.in_len >= 4 + (size_t)length) {
                *kind = (char)h[4];
                *len = length - 1;
                return true;
            }
        }
        int64_t left_ms = (deadline - now_ns()) / 1000000;
        if ((left_ms < 0 || !receive((int)left_ms)) && now_ns() >= deadline)
            return false;
    }
}

static void frame_done(size_t body_len)
{
    size_t size = FRAME_HEADER + body_len;
    memmove(conn.in, conn.in + size, conn.in_len - size);
    conn.in_len -= size;
}

size_t expect_frame(char kind, const char *what, uint8_t *out, size_t cap, int64_t *t_arrived)
{
    char got;
    size_t len;
    if (!next_frame(&got, &len, (int)(cfg.connect_timeout_s * 1000)))
        die("no %s within %g s", what, cfg.connect_timeout_s);
    *t_arrived = now_ns();
    if (got != kind)
        die("expected %s (frame %c), got frame %c", what, kind, got);
    if (len > cap)
        die("%s: %zu bytes, at most %zu expected", what, len, cap);
    memcpy(out, conn.in + FRAME_HEADER, len);
    frame_done(len);
    return len;
}

/* The echo of block seq: opened (r2e keys, or the block itself without a scheme) and checked,
 * recorded as agents/tcp.py's emitter does. */
static void take_echo(long seq, int64_t t_sent, struct direction *r2e, uint8_t *opened,
                      size_t opened_cap)
{
    char kind;
    size_t len;
    char what[64];
    snprintf(what, sizeof what, "the echo of block %ld", seq);
    if (!next_frame(&kind, &len, (int)((cfg.connect_timeout_s + cfg.drain_s) * 1000)))
        die("no %s within %g s", what, cfg.connect_timeout_s + cfg.drain_s);
    int64_t t_returned = now_ns(), cpu0 = thread_cpu_ns();
    if (kind != 'C')
        die("expected %s (frame C), got frame %c", what, kind);
    const uint8_t *body = conn.in + FRAME_HEADER, *plaintext = body;
    size_t plaintext_len = len;
    if (r2e != NULL) {
        if (len > opened_cap || scheme_open(r2e, body, len, opened, &plaintext_len) != OPEN_OK)
            die("%s does not verify", what);
        plaintext = opened;
    }
    int64_t open_cpu = thread_cpu_ns() - cpu0;
    uint64_t echoed = 0, created;
    if (plaintext_len >= 16)
        message_read(plaintext, &echoed, &created);
    if (plaintext_len < 16 || echoed != (uint64_t)seq)
        die("%s carries block %" PRIu64, what, echoed);
    record("echo",
           "\"seq\":%ld,\"t_sent_ns\":%" PRId64 ",\"t_returned_ns\":%" PRId64
           ",\"t_opened_ns\":%" PRId64 ",\"open_cpu_ns\":%" PRId64 ",\"wire_bytes\":%zu",
           seq, t_sent, t_returned, now_ns(), open_cpu, len + FRAME_HEADER);
    frame_done(len);
}

/* After the end frame: the receiver closes once it has read it, so every block was read. */
static void await_close(void)
{
    int64_t deadline = now_ns() + llround((cfg.connect_timeout_s + cfg.drain_s) * 1e9);
    uint8_t scrap[4096];
    while (now_ns() < deadline) {
        struct pollfd waiting = {conn.fd, POLLIN, 0};
        if (poll(&waiting, 1, 100) <= 0)
            continue;
        ssize_t n = conn.tls ? tls_recv(conn.tls, scrap, sizeof scrap)
                             : recv(conn.fd, scrap, sizeof scrap, 0);
        if (n == 0 || (n < 0 && n != TLS_WANT && errno != EAGAIN && errno != EINTR))
            return;
    }
}

void emit_frames(void)
{
    open_connection();
    if (conn.tls != NULL)
        write_transcript();
    struct direction *r2e = NULL;
    struct direction *e2r = cfg.scheme ? emitter_key_exchange_frames(&r2e) : NULL;
    long planned = planned_messages();
    size_t plaintext_len = (size_t)cfg.payload_bytes;
    size_t sealed_cap = plaintext_len + SCHEME_MAX_OVERHEAD;
    uint8_t *plaintext = malloc(plaintext_len), *frame = malloc(FRAME_HEADER + sealed_cap);
    uint8_t *opened = cfg.echo && e2r ? malloc(sealed_cap) : NULL;
    if (plaintext == NULL || frame == NULL || (cfg.echo && e2r && opened == NULL))
        die("out of memory");
    iotsb_filler(cfg.seed, plaintext + 16, plaintext_len - 16);
    int64_t period = llround(1e9 / cfg.rate_hz), start = now_ns();
    int64_t stop = start + llround(cfg.duration_s * 1e9);
    event("publish_start", "\"saturating\":%s,\"method\":\"%s\"",
          cfg.saturating ? "true" : "false", cfg.echo ? "echo" : "unidirectional");
    long sent = 0;
    for (long seq = 0; planned < 0 ? now_ns() < stop : seq < planned; seq++) {
        fault_at(seq);
        if (!cfg.saturating) {
            int64_t due = start + seq * period;
            while (now_ns() < due)
                if (terminated)
                    die("terminated by signal %d", (int)terminated);
                else
                    poll(NULL, 0, (int)((due - now_ns() + 999999) / 1000000));
        }
        int64_t t_created = now_ns(), cpu0 = thread_cpu_ns();
        message_stamp(plaintext, seq, t_created);
        uint8_t *body = frame + FRAME_HEADER; /* sealed in place: one buffer, one send */
        size_t body_len = plaintext_len;
        if (e2r != NULL) {
            body_len = scheme_seal(e2r, plaintext, plaintext_len, body);
            if (body_len == 0)
                die("sealing block %ld failed", seq);
        } else {
            memcpy(body, plaintext, plaintext_len);
        }
        int64_t seal_cpu = thread_cpu_ns() - cpu0, t_sealed = now_ns();
        frame_header_put(frame, 'D', body_len);
        send_all(frame, FRAME_HEADER + body_len);
        record_sent(seq, FRAME_HEADER + body_len, t_created, t_sealed, now_ns(), seal_cpu);
        sent++;
        if (cfg.echo)
            take_echo(seq, t_created, r2e, opened, sealed_cap);
    }
    event("publish_end", "\"sent\":%ld", sent);
    char end[64];
    int len = snprintf(end, sizeof end, "{\"sent\": %ld}", sent);
    send_frame('Z', (const uint8_t *)end, (size_t)len);
    counter("messages_sent", sent);
    await_close();
    close_connection();
    free(opened);
    free(plaintext);
    free(frame);
}
