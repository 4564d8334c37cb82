/* The tcp transport's frame header (docs/wire-format.md, "Frames of the tcp transport";
 * agents/framing.py is the Python side): length (4 bytes, big-endian, counting kind and body),
 * kind (1 byte), then the body. One place for its C readers and writers: the native agent's
 * emitter (tcp.c) and the device client's tcp role (vmcu/client/frames.c), which compile it
 * unchanged. Header-only: the firmware takes nothing else of the native agent's tcp.c (its
 * sockets and poll are a host's). */
#ifndef IOTSB_FRAME_H
#define IOTSB_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FRAME_HEADER 5
#define MAX_FRAME ((1u << 20) + 4096) /* agents/framing.py MAX_FRAME_BYTES */
#define FRAME_KINDS "HKRDCZ"          /* agents/framing.py KINDS */

static inline void frame_header_put(uint8_t out[FRAME_HEADER], char kind, size_t body_len)
{
    uint32_t length = (uint32_t)body_len + 1;
    out[0] = (uint8_t)(length >> 24);
    out[1] = (uint8_t)(length >> 16);
    out[2] = (uint8_t)(length >> 8);
    out[3] = (uint8_t)length;
    out[4] = (uint8_t)kind;
}

/* A received header's length field (kind and body), or 0 when the frame must be refused before
 * anything more is read: a length outside 1 .. MAX_FRAME (a peer cannot make the reader
 * allocate what it claims) or a kind that is not one of FRAME_KINDS. */
static inline uint32_t frame_header_length(const uint8_t header[FRAME_HEADER])
{
    uint32_t length = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 |
                      (uint32_t)header[2] << 8 | header[3];
    if (length < 1 || length > MAX_FRAME || header[4] == 0 ||
        strchr(FRAME_KINDS, header[4]) == NULL)
        return 0;
    return length;
}

#endif
