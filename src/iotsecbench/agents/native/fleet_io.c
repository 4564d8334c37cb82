/* The fleet agent's records (one buffer per link, appended to its file), its timers (a binary
 * heap of links by due time) and its sending (what the socket does not take waits). */
#define _GNU_SOURCE
#include "fleet.h"

/* -- records ---------------------------------------------------------------------------- */

void process_record(const char *type, const char *fmt, ...)
{
    if (process_out == NULL)
        return;
    fprintf(process_out, "{\"type\":\"%s\"%s", type, fmt[0] ? "," : "");
    va_list args;
    va_start(args, fmt);
    vfprintf(process_out, fmt, args);
    va_end(args);
    fputs("}\n", process_out);
}

void flush_link(struct link *l)
{
    if (l->rec_len == 0)
        return;
    int fd = open(l->output, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        for (size_t at = 0; at < l->rec_len;) {
            ssize_t n = write(fd, l->rec + at, l->rec_len - at);
            if (n <= 0)
                break;
            at += (size_t)n;
        }
        close(fd);
    }
    l->rec_len = 0;
}

void lrec(struct link *l, const char *type, const char *fmt, ...)
{
    for (;;) {
        size_t room = l->rec_cap - l->rec_len;
        va_list args;
        va_start(args, fmt);
        int head = room ? snprintf(l->rec + l->rec_len, room, "{\"type\":\"%s\"%s", type,
                                   fmt[0] ? "," : "")
                        : 0;
        int body = 0;
        if (room && (size_t)head < room)
            body = vsnprintf(l->rec + l->rec_len + head, room - (size_t)head, fmt, args);
        va_end(args);
        size_t need = (size_t)head + (size_t)body + 3;
        if (room && need <= room) {
            memcpy(l->rec + l->rec_len + head + body, "}\n", 3);
            l->rec_len += need - 1;
            break;
        }
        size_t cap = l->rec_cap ? 2 * l->rec_cap : 4096;
        while (cap < l->rec_len + need + 64)
            cap *= 2;
        char *grown = realloc(l->rec, cap);
        if (grown == NULL)
            return;
        l->rec = grown;
        l->rec_cap = cap;
    }
    if (l->rec_len > RECORDS_FLUSH_BYTES)
        flush_link(l);
}

void levent(struct link *l, const char *kind, const char *detail)
{
    lrec(l, "event", "\"t_ns\":%" PRId64 ",\"kind\":\"%s\",\"detail\":{%s}", now_ns(), kind,
         detail);
}

void flush_all(void)
{
    for (size_t i = 0; i < n_links; i++)
        flush_link(&links[i]);
    if (process_out != NULL)
        fflush(process_out);
}

/* Ends the process: the failing device's error in its own file and the process's. */
void __attribute__((noreturn, format(printf, 2, 3))) fail(struct link *l, const char *fmt,
                                                                 ...)
{
    char message[600], quoted[700];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    json_quote(quoted, sizeof quoted, message);
    if (l != NULL) {
        lrec(l, "error", "\"t_ns\":%" PRId64 ",\"message\":%s", now_ns(), quoted);
        char where[700];
        if (l->role == BACKEND)
            snprintf(where, sizeof where, "backend subscriber %d: %s", l->index, message);
        else
            snprintf(where, sizeof where, "device %d %s: %s", l->index, ROLE_NAMES[l->role],
                     message);
        json_quote(quoted, sizeof quoted, where);
    }
    process_record("error", "\"t_ns\":%" PRId64 ",\"message\":%s", now_ns(), quoted);
    flush_all();
    _exit(1);
}

/* -- timers: a binary heap of links by due_ns ------------------------------------------- */

static void heap_swap(size_t a, size_t b)
{
    struct link *t = heap[a];
    heap[a] = heap[b];
    heap[b] = t;
    heap[a]->heap_at = a;
    heap[b]->heap_at = b;
}

static void heap_fix(size_t at)
{
    while (at > 0 && heap[(at - 1) / 2]->due_ns > heap[at]->due_ns) {
        heap_swap(at, (at - 1) / 2);
        at = (at - 1) / 2;
    }
    for (;;) {
        size_t low = at, l = 2 * at + 1, r = l + 1;
        if (l < heap_len && heap[l]->due_ns < heap[low]->due_ns)
            low = l;
        if (r < heap_len && heap[r]->due_ns < heap[low]->due_ns)
            low = r;
        if (low == at)
            return;
        heap_swap(at, low);
        at = low;
    }
}

void schedule(struct link *l, int64_t due)
{
    l->due_ns = due;
    if (l->heap_at == SIZE_MAX) {
        heap[heap_len] = l;
        l->heap_at = heap_len++;
    }
    heap_fix(l->heap_at);
}

void unschedule(struct link *l)
{
    if (l->heap_at == SIZE_MAX)
        return;
    size_t at = l->heap_at;
    heap_swap(at, --heap_len);
    l->heap_at = SIZE_MAX;
    if (at < heap_len)
        heap_fix(at);
}

/* -- I/O ---------------------------------------------------------------------------------- */

void watch(struct link *l, bool writable)
{
    struct epoll_event e = {.events = EPOLLIN | (writable ? EPOLLOUT : 0), .data.ptr = l};
    epoll_ctl(epoll_fd, EPOLL_CTL_MOD, l->fd, &e);
}

/* Sends what l->out holds as far as the socket takes it; the rest waits for EPOLLOUT. */
void flush_out(struct link *l)
{
    size_t at = 0;
    while (at < l->out_len) {
        ssize_t n = l->tls ? fleet_tls_send(l->tls, l->out + at, l->out_len - at)
                           : send(l->fd, l->out + at, l->out_len - at, MSG_NOSIGNAL);
        if (n > 0) {
            at += (size_t)n;
            continue;
        }
        bool again = l->tls ? (n == FLEET_WANT_WRITE || n == FLEET_WANT_READ)
                            : n < 0 && (errno == EAGAIN || errno == EINTR);
        if (!again)
            fail(l, "lost the broker connection while sending");
        break;
    }
    memmove(l->out, l->out + at, l->out_len - at);
    l->out_len -= at;
    watch(l, l->out_len > 0);
}

void send_packet(struct link *l, const uint8_t *bytes, size_t len)
{
    if (l->out_cap - l->out_len < len) {
        size_t cap = l->out_cap ? l->out_cap : 1024;
        while (cap - l->out_len < len)
            cap *= 2;
        uint8_t *grown = realloc(l->out, cap);
        if (grown == NULL)
            fail(l, "out of memory");
        l->out = grown;
        l->out_cap = cap;
    }
    memcpy(l->out + l->out_len, bytes, len);
    l->out_len += len;
    l->last_sent_ns = now_ns();
    flush_out(l);
}

size_t topic_publish(struct link *l, uint8_t *out, size_t cap, const char *suffix,
                            const uint8_t *body, size_t len, int qos, uint16_t id, bool dup)
{
    char topic[300];
    snprintf(topic, sizeof topic, "%s/%s", l->topic_prefix, suffix);
    size_t n = mqtt_publish(out, cap, topic, body, len, qos, id, false);
    if (n > 0 && dup)
        out[0] |= 0x08; /* DUP: a redelivery after a reconnect (MQTT 3.1.1 §3.3.1.1) */
    return n;
}

bool topic_is(const struct link *l, const struct mqtt_publish_in *m, const char *suffix)
{
    size_t prefix = strlen(l->topic_prefix), n = strlen(suffix);
    return m->topic_len == prefix + 1 + n && memcmp(m->topic, l->topic_prefix, prefix) == 0 &&
           m->topic[prefix] == '/' && memcmp(m->topic + prefix + 1, suffix, n) == 0;
}

uint16_t next_id(struct link *l)
{
    l->next_id = (uint16_t)(l->next_id % 65535 + 1);
    return l->next_id;
}
