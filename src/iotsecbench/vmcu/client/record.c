/* Records: one JSON object per line in a host file (semihosting), in the agents' record
 * vocabulary (agents/records.py, agents/native/records.c): "event", "counters",
 * "tls_transcript", "error", and the count's own "count_segment" (ledger.c). Lines are
 * written whole, each with one write, so a firmware stopped by the host leaves whole lines.
 * Callers write them in the ledger's harness bucket: they are not counted. */
#include "device.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES 1024

static int records_fd = -1, secrets_fd = -1;
static char line[LINE_MAX_BYTES];
static size_t used;
static bool first;

int records_open(const char *path)
{
    records_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    return records_fd < 0 ? -1 : 0;
}

static void put(const char *text, size_t n)
{
    if (n > sizeof line - 2 - used) /* keep room for "}\n" */
        n = sizeof line - 2 - used;
    memcpy(line + used, text, n);
    used += n;
}

static void put_text(const char *text) { put(text, strlen(text)); }

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void put_quoted(const char *text)
{
    static const char hex[] = "0123456789abcdef";
    put("\"", 1);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char escaped[2] = {'\\', (char)*p};
            put(escaped, 2);
        } else if (*p < 0x20) {
            char escaped[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
            put(escaped, 6);
        } else
            put((const char *)p, 1);
    }
    put("\"", 1);
}

static void put_name(const char *name)
{
    if (!first)
        put(",", 1);
    first = false;
    put_quoted(name);
    put(":", 1);
}

void record_begin(const char *type)
{
    used = 0;
    first = true;
    put("{", 1);
    put_name("type");
    put_quoted(type);
}

void record_string(const char *name, const char *value)
{
    put_name(name);
    put_quoted(value ? value : "");
}

void record_unsigned(const char *name, uint64_t value)
{
    char digits[24];
    size_t at = sizeof digits;
    do {
        digits[--at] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    put_name(name);
    put(digits + at, sizeof digits - at);
}

void record_hex(const char *name, const uint8_t *bytes, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    put_name(name);
    put("\"", 1);
    for (size_t i = 0; i < len; i++) {
        char pair[2] = {hex[bytes[i] >> 4], hex[bytes[i] & 15]};
        put(pair, 2);
    }
    put("\"", 1);
}

void record_end(void)
{
    line[used++] = '}';
    line[used++] = '\n';
    if (records_fd >= 0)
        (void)!write(records_fd, line, used);
}

void records_close(void)
{
    if (records_fd >= 0)
        close(records_fd);
    if (secrets_fd >= 0)
        close(secrets_fd);
    records_fd = secrets_fd = -1;
}

/* "LABEL <hex secret>\n": the host reads them to decrypt the TLS 1.3 transcript, then deletes
 * the file; they never reach the records. */
void secret_line(const char *label, const uint8_t *secret, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    if (secrets_fd < 0)
        secrets_fd = open("device-secrets.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (secrets_fd < 0 || len > 64)
        return;
    char text[64 + 2 * 64 + 3];
    size_t at = strlen(label) < 64 ? strlen(label) : 64;
    memcpy(text, label, at);
    text[at++] = ' ';
    for (size_t i = 0; i < len; i++) {
        text[at++] = hex[secret[i] >> 4];
        text[at++] = hex[secret[i] & 15];
    }
    text[at++] = '\n';
    (void)!write(secrets_fd, text, at);
}
