/* The agent's output (agents/records.py's contract): one JSON object per line, written from
 * the main thread and the sampler thread under one lock, flushed at every sample so a crashed
 * agent leaves everything up to its last 100 ms on disk. Clocks as in measure/clock.py. */
#ifndef IOTSB_RECORDS_H
#define IOTSB_RECORDS_H

#include <stddef.h>
#include <stdint.h>

int records_open(const char *path); /* 0 or -1 (errno set) */
/* Appends one line: the JSON object whose members (without braces) follow "type". */
void record(const char *type, const char *members_fmt, ...)
    __attribute__((format(printf, 2, 3)));
void records_flush(void);
void records_close(void); /* flush, fsync, close */

/* --keylog: appends text (whole lines) to path, created 0600, in one write — O_APPEND keeps
 * the lines whole when both agents append to one file (as agents/session.py). 0 or -1. */
int append_secret_lines(const char *path, const char *text);

/* A JSON string literal of text (quotes included) in out; truncated to fit, always valid. */
const char *json_quote(char *out, size_t cap, const char *text);

/* bytes as lowercase hex in out (2 * len + 1 chars, NUL-terminated): a table, not sprintf —
 * a fleet writes ~5 KB of transcript per TLS device inside its event loop. */
void hex_encode(char *out, const uint8_t *bytes, size_t len);

/* bench handshake --trace (the iotst method, analysis/iotst.py): lines to a tracefs
 * trace_marker, written by the connecting thread itself so each lands in its own trace. */
extern int trace_marker_fd; /* -1: no marker file configured */
extern int trace_marking;   /* this connection is traced: trace_mark writes */
void trace_mark(const char *text);

int64_t now_ns(void);         /* CLOCK_MONOTONIC: the clock every iotsecbench process reads */
int64_t thread_cpu_ns(void);  /* CLOCK_THREAD_CPUTIME_ID */
int64_t process_cpu_ns(void); /* CLOCK_PROCESS_CPUTIME_ID: user + system, all threads */
long rss_bytes(void);         /* the process's resident memory (/proc/self/statm), 0 unknown */

#endif
