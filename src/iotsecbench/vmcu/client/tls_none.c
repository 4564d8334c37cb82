/* The plain build: MQTT without TLS (no stack linked). */
#include "device.h"

const char *tls_stack(void) { return "none"; }
const char *tls_stack_version(void) { return ""; }
int tls_setup(char *why, size_t cap) { return -1; }
int tls_handshake(char *why, size_t cap) { return -1; }
int tls_write(const uint8_t *data, size_t len) { return -1; }
int tls_read(uint8_t *data, size_t cap) { return -1; }
void tls_negotiated(char *version, size_t cap, uint16_t *suite)
{
    if (cap > 0)
        version[0] = '\0';
    *suite = 0;
}
void tls_close(void) {}
