/* Non-blocking TLS clients for the fleet agent (fleet.c): many connections in one process,
 * each driven by epoll, on the build's stack (fleet_tls_openssl.c; fleet_tls_none.c for the
 * plain build). One context per process holds what every device shares (the CA, the offer);
 * each connection holds its own session, and records its handshake messages for the runner's
 * parser of the negotiated parameters (security/tls/observe.py), as tls.h's clients do. */
#ifndef IOTSB_FLEET_TLS_H
#define IOTSB_FLEET_TLS_H

#include "tls.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FLEET_WANT_READ (-2)
#define FLEET_WANT_WRITE (-3)

struct fleet_tls_context;
struct fleet_tls;

/* The process's shared context (NULL with why set on failure). */
struct fleet_tls_context *fleet_tls_context(const struct tls_options *options, char *why,
                                            size_t why_cap);
/* A client on the connected (non-blocking) socket fd, offering session (NULL: none); its
 * handshake messages go to t. NULL with why set on failure. */
struct fleet_tls *fleet_tls_new(struct fleet_tls_context *context, int fd, void *session,
                                struct tls_transcript *t, char *why, size_t why_cap);
/* One step of the handshake: 1 when done, FLEET_WANT_READ / FLEET_WANT_WRITE, or -1 with why. */
int fleet_tls_handshake(struct fleet_tls *tls, char *why, size_t why_cap);
/* As tls_send / tls_recv: bytes moved, FLEET_WANT_*, 0 (recv: closed) or -1. */
ssize_t fleet_tls_send(struct fleet_tls *tls, const void *data, size_t len);
ssize_t fleet_tls_recv(struct fleet_tls *tls, void *data, size_t cap);
size_t fleet_tls_pending(struct fleet_tls *tls);
void fleet_tls_describe(struct fleet_tls *tls, struct tls_result *out);
void *fleet_tls_session(struct fleet_tls *tls); /* the session to offer next time, or NULL */
void fleet_tls_session_free(void *session);
void fleet_tls_free(struct fleet_tls *tls, bool close_notify);
const char *fleet_stack_name(void);
const char *fleet_stack_version(void);

#endif
