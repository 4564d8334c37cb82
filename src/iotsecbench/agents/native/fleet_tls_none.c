/* The plain build of the fleet agent: no TLS library; a TLS configuration never reaches it. */
#include "fleet_tls.h"

#include <stdio.h>

struct fleet_tls_context *fleet_tls_context(const struct tls_options *options, char *why,
                                            size_t why_cap)
{
    snprintf(why, why_cap, "this fleet agent was built without TLS");
    return NULL;
}
struct fleet_tls *fleet_tls_new(struct fleet_tls_context *context, int fd, void *session,
                                struct tls_transcript *t, char *why, size_t why_cap)
{
    snprintf(why, why_cap, "this fleet agent was built without TLS");
    return NULL;
}
int fleet_tls_handshake(struct fleet_tls *tls, char *why, size_t why_cap) { return -1; }
ssize_t fleet_tls_send(struct fleet_tls *tls, const void *data, size_t len) { return -1; }
ssize_t fleet_tls_recv(struct fleet_tls *tls, void *data, size_t cap) { return -1; }
size_t fleet_tls_pending(struct fleet_tls *tls) { return 0; }
void fleet_tls_describe(struct fleet_tls *tls, struct tls_result *out) {}
void *fleet_tls_session(struct fleet_tls *tls) { return NULL; }
void fleet_tls_session_free(void *session) {}
void fleet_tls_free(struct fleet_tls *tls, bool close_notify) {}
const char *fleet_stack_name(void) { return "none"; }
const char *fleet_stack_version(void) { return ""; }
