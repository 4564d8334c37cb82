/* The client's byte stream over the UART. The host's bridge (runner/device.py) holds the TCP
 * connection to the broker; between the two the UART carries, towards the broker, frames of a
 * 2-byte big-endian length and that many bytes — one frame per net_send, which the bridge
 * passes on with one send(), so the segments on the wire are those a device's network stack
 * makes of one buffer, not one per UART byte — and, from the broker, the bytes as they came.
 *
 * net_recv blocks until exactly the bytes asked for are there. Both stacks ask for what they
 * need (a record header, then its body), so they see the same reads whatever the network did:
 * the client's instructions do not depend on it. The polling goes to the ledger's wait bucket,
 * moving bytes to its io bucket; each call then ends the ledger's segment, so the work that
 * follows a read or a write is a segment of its own (docs/device-client.md). */
#include "device.h"

#define FRAME_MAX 0xFFFFu
#define SPINS_PER_BOOKING 0xFFFFFu /* book a long wait now and then: the counter is 32-bit */

static uint64_t sent, received;

uint64_t net_bytes_sent(void) { return sent; }
uint64_t net_bytes_received(void) { return received; }

int net_send(const uint8_t *data, size_t len)
{
    enum bucket resume = ledger_bucket(BUCKET_IO);
    for (size_t at = 0; at < len;) {
        size_t n = len - at < FRAME_MAX ? len - at : FRAME_MAX;
        uart_write((uint8_t)(n >> 8));
        uart_write((uint8_t)n);
        for (size_t i = 0; i < n; i++)
            uart_write(data[at + i]);
        at += n;
    }
    sent += len;
    ledger_io_event('w', (uint32_t)len);
    ledger_bucket(resume);
    return (int)len;
}

int net_recv(uint8_t *data, size_t len)
{
    enum bucket resume = ledger_bucket(BUCKET_IO);
    for (size_t i = 0; i < len; i++) {
        if (!uart_readable()) {
            ledger_bucket(BUCKET_WAIT);
            for (uint32_t spins = 1; !uart_readable(); spins++)
                if ((spins & SPINS_PER_BOOKING) == 0)
                    ledger_bucket(BUCKET_WAIT);
            ledger_bucket(BUCKET_IO);
        }
        data[i] = uart_read();
    }
    received += len;
    ledger_io_event('r', (uint32_t)len);
    ledger_bucket(resume);
    return (int)len;
}
