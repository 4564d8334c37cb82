/* What every part of the agent shares: the configuration, the connection, and how a failure
 * ends the agent (an error record, then whatever main registered to close up). */
#define _GNU_SOURCE
#include "agent.h"
#include "records.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct config cfg;
struct connection conn = {.fd = -1};
volatile sig_atomic_t terminated;
void (*on_failure)(int status);

/* -- failure ------------------------------------------------------------------------------- */

void die(const char *fmt, ...)
{
    char message[512], quoted[1100];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    fprintf(stderr, "%s: %s\n", cfg.role ? cfg.role : "agent", message);
    record("error", "\"t_ns\":%" PRId64 ",\"message\":%s", now_ns(),
           json_quote(quoted, sizeof quoted, message));
    if (on_failure != NULL)
        on_failure(1);
    exit(1);
}

void event(const char *kind, const char *detail_fmt, ...)
{
    char detail[512];
    va_list args;
    va_start(args, detail_fmt);
    vsnprintf(detail, sizeof detail, detail_fmt, args);
    va_end(args);
    record("event", "\"t_ns\":%" PRId64 ",\"kind\":\"%s\",\"detail\":{%s}", now_ns(), kind, detail);
}

void counter(const char *name, long long value)
{
    record("counters", "\"name\":\"%s\",\"value\":%lld", name, value);
}


/* TRANSPORT+SCHEME, a bare scheme, or a bare transport: plain, tls1.2, tls1.3 or a TLS
 * profile's short name (tls1.3/x25519mlkem768/mldsa44: the only names with a '/'). */
const char *configuration_scheme(const char *configuration)
{
    const char *plus = strchr(configuration, '+');
    const char *name = plus ? plus + 1 : configuration;
    if (plus == NULL && strchr(configuration, '/') != NULL)
        return NULL;
    static const char *const transports[] = {"plain", "tls1.2", "tls1.3", "none"};
    for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
        if (strcmp(name, transports[i]) == 0)
            return NULL;
    return name;
}
