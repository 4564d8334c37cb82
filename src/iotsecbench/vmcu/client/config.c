/* The host's configuration (vmcu/client.py writes it): a file read by semihosting, before
 * anything is counted. Format: "IOTSBDC1", then entries of a 1-byte key length, the key, a
 * 4-byte little-endian value length and the value followed by one NUL (so text values are C
 * strings in place), ended by a key length of 0. Unknown keys are an error: the host and the
 * firmware are built from one checkout. */
#include "device.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC "IOTSBDC1"

struct device_config config = {
    .role = "connect", .tls_version = "", .keep_alive_s = 60, .scheme = ""};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

static size_t ids(uint16_t *into, size_t cap, const uint8_t *value, uint32_t len)
{
    size_t n = len / 2 < cap ? len / 2 : cap;
    for (size_t i = 0; i < n; i++)
        into[i] = (uint16_t)(value[2 * i] << 8 | value[2 * i + 1]);
    return n;
}

static int fail(char *why, size_t cap, const char *text, const char *detail)
{
    snprintf(why, cap, "%s%s%s", text, detail ? " " : "", detail ? detail : "");
    return -1;
}

int config_load(const char *path, char *why, size_t cap)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return fail(why, cap, "cannot open", path);
    off_t size = lseek(fd, 0, SEEK_END);
    uint8_t *data = size > 0 ? malloc((size_t)size) : NULL; /* kept: the strings point into it */
    if (data == NULL || lseek(fd, 0, SEEK_SET) != 0)
        return fail(why, cap, "cannot read", path);
    for (off_t at = 0; at < size;) {
        ssize_t got = read(fd, data + at, (size_t)(size - at));
        if (got <= 0)
            return fail(why, cap, "short read of", path);
        at += got;
    }
    close(fd);
    size_t at = strlen(MAGIC);
    if ((size_t)size < at || memcmp(data, MAGIC, at) != 0)
        return fail(why, cap, "not a device configuration:", path);
    for (;;) {
        if (at >= (size_t)size)
            return fail(why, cap, "configuration ends without its end mark", NULL);
        size_t key_len = data[at++];
        if (key_len == 0)
            return 0;
        if (at + key_len + 4 > (size_t)size)
            return fail(why, cap, "configuration truncated", NULL);
        char key[32];
        if (key_len >= sizeof key)
            return fail(why, cap, "configuration key too long", NULL);
        memcpy(key, data + at, key_len);
        key[key_len] = '\0';
        at += key_len;
        uint32_t len = le32(data + at);
        at += 4;
        if (len > (size_t)size - at - 1 || data[at + len] != '\0')
            return fail(why, cap, "configuration value truncated:", key);
        const uint8_t *value = data + at;
        const char *text = (const char *)value;
        at += len + 1;
        if (strcmp(key, "role") == 0)
            config.role = text;
        else if (strcmp(key, "tls_version") == 0)
            config.tls_version = text;
        else if (strcmp(key, "suites") == 0)
            config.n_suites = ids(config.suites, DEVICE_MAX_SUITES, value, len);
        else if (strcmp(key, "groups") == 0)
            config.n_groups = ids(config.groups, DEVICE_MAX_GROUPS, value, len);
        else if (strcmp(key, "ca") == 0)
            config.ca_pem = text, config.ca_len = len;
        else if (strcmp(key, "client_cert") == 0)
            config.client_cert_pem = text, config.client_cert_len = len;
        else if (strcmp(key, "client_key") == 0)
            config.client_key_pem = text, config.client_key_len = len;
        else if (strcmp(key, "server_name") == 0)
            config.server_name = text;
        else if (strcmp(key, "client_id") == 0)
            config.client_id = text;
        else if (strcmp(key, "username") == 0)
            config.username = text;
        else if (strcmp(key, "password") == 0)
            config.password = text;
        else if (strcmp(key, "topic_prefix") == 0)
            config.topic_prefix = text;
        else if (strcmp(key, "seed") == 0 && len == sizeof config.seed)
            memcpy(config.seed, value, len);
        else if (strcmp(key, "keep_alive_s") == 0 && len == 4)
            config.keep_alive_s = le32(value);
        else if (strcmp(key, "log_secrets") == 0 && len == 1)
            config.log_secrets = value[0] != 0;
        else if (strcmp(key, "message_count") == 0 && len == 4)
            config.message_count = le32(value);
        else if (strcmp(key, "period_ns") == 0 && len == 8)
            config.period_ns = le64(value);
        else if (strcmp(key, "qos") == 0 && len == 4)
            config.qos = le32(value);
        else if (strcmp(key, "payload_bytes") == 0 && len == 4)
            config.payload_bytes = le32(value);
        else if (strcmp(key, "scheme") == 0)
            config.scheme = text;
        else if (strcmp(key, "filler_seed") == 0 && len == 8)
            config.filler_seed = le64(value);
        else if (strcmp(key, "psk") == 0)
            config.psk = value, config.psk_len = len;
        else if (strcmp(key, "echo") == 0 && len == 1)
            config.echo = value[0] != 0;
        else if (strcmp(key, "saturating") == 0 && len == 1)
            config.saturating = value[0] != 0;
        else if (strcmp(key, "duration_ns") == 0 && len == 8)
            config.duration_ns = le64(value);
        else
            return fail(why, cap, "unknown configuration key", key);
    }
}
