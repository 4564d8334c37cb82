/* Records: one JSON object per line in a host file (semihosting), in the agents' record
 * vocabulary (agents/records.py; the native agent's records.c has the same record()): "event",
 * "counters", "tls_transcript", "error", and the count's own "count_segment" (ledger.c). Lines
 * are written whole, each with one write, so a firmware stopped by the host leaves whole lines.
 * Callers write them in the ledger's harness bucket: they are not counted. */
#include "device.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES 1024

static int records_fd = -1, secrets_fd = -1;

int records_open(const char *path)
{
    records_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    return records_fd < 0 ? -1 : 0;
}

void record(const char *type, const char *members_fmt, ...)
{
    static char line[LINE_MAX_BYTES];
    int at = snprintf(line, sizeof line - 2, "{\"type\":\"%s\"%s", type, members_fmt[0] ? "," : "");
    va_list arguments;
    va_start(arguments, members_fmt);
    int more = vsnprintf(line + at, sizeof line - 2 - (size_t)at, members_fmt, arguments);
    va_end(arguments);
    size_t used = (size_t)at + (more < 0 ? 0 : (size_t)more);
    if (used > sizeof line - 2)
        used = sizeof line - 2; /* cut short: the host's reader skips a line it cannot parse */
    line[used++] = '}';
    line[used++] = '\n';
    if (records_fd >= 0)
        (void)!write(records_fd, line, used);
}

const char *json_quote(char *out, size_t cap, const char *text)
{
    static const char hex[] = "0123456789abcdef";
    size_t at = 0;
    out[at++] = '"';
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++) {
        if (at + 8 >= cap)
            break;
        if (*p == '"' || *p == '\\') {
            out[at++] = '\\';
            out[at++] = (char)*p;
        } else if (*p < 0x20) {
            memcpy(out + at, "\\u00", 4);
            at += 4;
            out[at++] = hex[*p >> 4];
            out[at++] = hex[*p & 15];
        } else
            out[at++] = (char)*p;
    }
    out[at++] = '"';
    out[at] = '\0';
    return out;
}

/* "INDEX EVENT MARK|BYTES\n" per segment begun, to a file of its own: where a firmware that
 * never finishes was (the host reads its last line). Digits by hand, a static buffer and one
 * write: a few dozen bytes of stack at the boundary, no vsnprintf. */
void progress(unsigned index, char event, const char *mark, uint32_t bytes)
{
    static char text[96];
    static int fd = -1;
    if (fd < 0 && (fd = open("device-progress.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
        return;
    size_t at = sizeof text;
    text[--at] = '\n';
    if (mark != NULL) {
        size_t n = strlen(mark) < 40 ? strlen(mark) : 40;
        at -= n;
        memcpy(text + at, mark, n);
    } else {
        do
            text[--at] = (char)('0' + bytes % 10);
        while (bytes /= 10);
    }
    text[--at] = ' ';
    text[--at] = event;
    text[--at] = ' ';
    do
        text[--at] = (char)('0' + index % 10);
    while (index /= 10);
    (void)!write(fd, text + at, sizeof text - at);
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
    static char text[64 + 2 * 64 + 3]; /* static: called deep in the key schedule */
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
