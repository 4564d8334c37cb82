#include "records.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static FILE *out;
int trace_marker_fd = -1;
int trace_marking;

void trace_mark(const char *text)
{
    if (trace_marking && trace_marker_fd >= 0)
        (void)!write(trace_marker_fd, text, strlen(text)); /* a lost marker only coarsens groups */
}
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int records_open(const char *path)
{
    out = fopen(path, "w");
    if (out == NULL)
        return -1;
    setvbuf(out, NULL, _IOFBF, 1 << 16);
    return 0;
}

void record(const char *type, const char *members_fmt, ...)
{
    va_list args;
    pthread_mutex_lock(&lock);
    if (out != NULL) {
        fprintf(out, "{\"type\":\"%s\"", type);
        if (members_fmt[0] != '\0')
            fputc(',', out);
        va_start(args, members_fmt);
        vfprintf(out, members_fmt, args);
        va_end(args);
        fputs("}\n", out);
    }
    pthread_mutex_unlock(&lock);
}

void records_flush(void)
{
    pthread_mutex_lock(&lock);
    if (out != NULL)
        fflush(out);
    pthread_mutex_unlock(&lock);
}

void records_close(void)
{
    pthread_mutex_lock(&lock);
    if (out != NULL) {
        fflush(out);
        fsync(fileno(out));
        fclose(out);
        out = NULL;
    }
    pthread_mutex_unlock(&lock);
}

int append_secret_lines(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

void hex_encode(char *out, const uint8_t *bytes, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t k = 0; k < len; k++) {
        out[2 * k] = digits[bytes[k] >> 4];
        out[2 * k + 1] = digits[bytes[k] & 0x0f];
    }
    out[2 * len] = '\0';
}

const char *json_quote(char *buf, size_t cap, const char *text)
{
    size_t at = 0;
    if (cap < 3)
        return "\"\"";
    buf[at++] = '"';
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
        char escaped[8];
        size_t n;
        if (*p == '"' || *p == '\\')
            n = (size_t)snprintf(escaped, sizeof escaped, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f) /* control or non-ASCII: keep the line valid JSON */
            n = (size_t)snprintf(escaped, sizeof escaped, "\\u%04x", *p);
        else
            escaped[0] = (char)*p, n = 1;
        if (at + n + 2 > cap)
            break;
        memcpy(buf + at, escaped, n);
        at += n;
    }
    buf[at++] = '"';
    buf[at] = '\0';
    return buf;
}

static int64_t clock_ns(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
int64_t thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
int64_t process_cpu_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

long rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm != NULL) {
        if (fscanf(statm, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(statm);
    }
    return resident * sysconf(_SC_PAGESIZE);
}
