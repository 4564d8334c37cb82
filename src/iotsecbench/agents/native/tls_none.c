/* Builds without TLS (plain, and the payload-scheme-only builds): no TLS client linked. */
#include "tls.h"

#include <stdio.h>

struct tls *tls_connect(int fd, const struct tls_options *options,
                        const struct tls_session *offer, struct tls_transcript *t, char *why,
                        size_t why_cap)
{
    (void)fd, (void)options, (void)offer, (void)t;
    snprintf(why, why_cap, "this agent was built without TLS");
    return NULL;
}

void tls_describe(struct tls *tls, struct tls_result *out) { (void)tls, (void)out; }
bool tls_key_log(struct tls *tls, char *out, size_t cap)
{
    (void)tls, (void)out, (void)cap;
    return false;
}
ssize_t tls_send(struct tls *tls, const void *data, size_t len)
{
    (void)tls, (void)data, (void)len;
    return -1;
}
ssize_t tls_recv(struct tls *tls, void *data, size_t cap)
{
    (void)tls, (void)data, (void)cap;
    return -1;
}
size_t tls_pending(struct tls *tls)
{
    (void)tls;
    return 0;
}
void tls_close(struct tls *tls) { (void)tls; }
struct tls_session *tls_session_get(struct tls *tls)
{
    (void)tls;
    return NULL;
}
void tls_session_free(struct tls_session *session) { (void)session; }
