/* The handshake as it crosses the wire: TLS records (RFC 8446 §5.1, RFC 5246 §6.2) split into
 * handshake messages while they are in the clear; a protected record of the handshake is
 * kept as one entry of type 0 with its length. Nothing here is secret. */
#include "records.h"
#include "tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CHANGE_CIPHER_SPEC = 20, HANDSHAKE = 22, APPLICATION_DATA = 23 };
enum { FINISHED = 20 };

/* The iotst marker of one message as the stack's I/O hands it over (a blocking read has
 * waited for it, the stack processes it next); the type of a TLS 1.3 protected record
 * cannot be seen from here and is written as 0 (analysis/iotst.py names that group). */
static void mark(const struct tls_transcript *t, bool written, uint8_t type)
{
    if (t->marker_fd < 0)
        return;
    char line[32];
    int n = snprintf(line, sizeof line, "iotsb msg %c %u", written ? 'w' : 'r', type);
    (void)!write(t->marker_fd, line, (size_t)n);
}

void tls_transcript_add(struct tls_transcript *t, bool written, uint8_t type, const uint8_t *bytes,
                    size_t len)
{
    if (t->count == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        struct tls_message *grown = realloc(t->messages, cap * sizeof *grown);
        if (grown == NULL)
            return;
        t->messages = grown;
        t->cap = cap;
    }
    uint8_t *copy = malloc(len ? len : 1);
    if (copy == NULL)
        return;
    memcpy(copy, bytes, len);
    t->messages[t->count++] = (struct tls_message){written, type, copy, len};
}

static bool append(uint8_t **buffer, size_t *len, const uint8_t *bytes, size_t n)
{
    uint8_t *grown = realloc(*buffer, *len + n + 1);
    if (grown == NULL)
        return false;
    memcpy(grown + *len, bytes, n);
    *buffer = grown;
    *len += n;
    return true;
}

static void consume(uint8_t *buffer, size_t *len, size_t n)
{
    memmove(buffer, buffer + n, *len - n);
    *len -= n;
}

static void handshake_bytes(struct tls_transcript *t, int d, const uint8_t *bytes, size_t n)
{
    if (!append(&t->handshake[d], &t->handshake_len[d], bytes, n))
        return;
    while (t->handshake_len[d] >= 4) {
        const uint8_t *h = t->handshake[d];
        size_t size = 4 + ((size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3]);
        if (t->handshake_len[d] < size)
            return;
        mark(t, d == 1, h[0]);
        tls_transcript_add(t, d == 1, h[0], h, size);
        consume(t->handshake[d], &t->handshake_len[d], size);
    }
}

void tls_transcript_feed(struct tls_transcript *t, bool written, const uint8_t *bytes, size_t len)
{
    int d = written ? 1 : 0;
    if (!t->recording || !append(&t->pending[d], &t->pending_len[d], bytes, len))
        return;
    while (t->pending_len[d] >= 5) {
        const uint8_t *r = t->pending[d];
        size_t size = 5 + ((size_t)r[3] << 8 | r[4]);
        if (t->pending_len[d] < size)
            return;
        if (r[0] == CHANGE_CIPHER_SPEC)
            t->encrypted[d] = true; /* TLS 1.2: this direction's next records are protected */
        else if (r[0] == HANDSHAKE && !t->encrypted[d])
            handshake_bytes(t, d, r + 5, size - 5);
        else if (r[0] == HANDSHAKE || r[0] == APPLICATION_DATA) {
            /* TLS 1.2 protects one handshake message, Finished, in a handshake record */
            mark(t, written, r[0] == HANDSHAKE ? FINISHED : 0);
            tls_transcript_add(t, written, 0, r + 5, size - 5); /* protected: its size only */
        }
        consume(t->pending[d], &t->pending_len[d], size);
    }
}

/* "LABEL <hex a> <hex b>\n" into out (the NSS key log's line); false if it does not fit. */
bool tls_nss_line(char *out, size_t cap, const char *label, const uint8_t *a, size_t a_len,
                  const uint8_t *b, size_t b_len)
{
    size_t at = (size_t)snprintf(out, cap, "%s ", label);
    if (at + 2 * (a_len + b_len) + 3 > cap)
        return false;
    hex_encode(out + at, a, a_len);
    at += 2 * a_len;
    out[at++] = ' ';
    hex_encode(out + at, b, b_len);
    at += 2 * b_len;
    out[at++] = '\n';
    out[at] = '\0';
    return true;
}

void tls_transcript_free(struct tls_transcript *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->messages[i].bytes);
    free(t->messages);
    for (int d = 0; d < 2; d++) {
        free(t->pending[d]);
        free(t->handshake[d]);
    }
    memset(t, 0, sizeof *t);
    t->marker_fd = -1;
}
