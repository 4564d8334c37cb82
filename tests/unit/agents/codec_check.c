/* Test driver of the native agent's MQTT codec and payload filler (tests/unit/agents/
 * test_native_codec.py): one command per line on stdin, one answer per line on stdout.
 *   filler SEED N                      -> hex of iotsb_filler(SEED, N)
 *   connect ID USER PASS KEEPALIVE     -> hex of the CONNECT packet
 *   publish TOPIC HEX QOS ID RETAIN    -> hex of the PUBLISH packet
 *   subscribe ID TOPIC QOS             -> hex of the SUBSCRIBE packet (one filter)
 *   puback ID | pingreq | disconnect   -> hex
 *   parse HEX                          -> "need-more", "malformed <why>" or "ok <type> <size> ..."
 * Built with AddressSanitizer and UBSan by the test: a decoder that reads one byte too far
 * fails it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filler.h"
#include "mqtt.h"

static unsigned char out[1 << 17];

static void hex(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
    printf("\n");
}

static size_t unhex(const char *text, unsigned char **bytes)
{
    size_t n = strlen(text) / 2;
    *bytes = malloc(n ? n : 1); /* exactly n: ASan sees a read past the end */
    for (size_t i = 0; i < n; i++)
        sscanf(text + 2 * i, "%2hhx", &(*bytes)[i]);
    return n;
}

static void parse(const char *text)
{
    unsigned char *bytes;
    size_t n = unhex(text, &bytes);
    struct mqtt_packet p;
    const char *why = "";
    int status = mqtt_frame(bytes, n, &p, &why);
    if (status == MQTT_NEED_MORE) {
        printf("need-more\n");
    } else if (status == MQTT_MALFORMED) {
        printf("malformed %s\n", why);
    } else {
        bool present;
        int code, granted[8];
        size_t count;
        uint16_t id;
        struct mqtt_publish_in in;
        switch (p.type) {
        case MQTT_CONNACK:
            status = mqtt_parse_connack(&p, &present, &code, &why);
            if (status == MQTT_OK)
                printf("ok connack %zu %d %d\n", p.size, present, code);
            break;
        case MQTT_PUBLISH:
            status = mqtt_parse_publish(&p, &in, &why);
            if (status == MQTT_OK) {
                printf("ok publish %zu %d %d %d %u %.*s ", p.size, in.qos, in.dup, in.retain,
                       in.packet_id, (int)in.topic_len, (const char *)in.topic);
                hex(in.payload, in.payload_len);
            }
            break;
        case MQTT_PUBACK:
            status = mqtt_parse_puback(&p, &id, &why);
            if (status == MQTT_OK)
                printf("ok puback %zu %u\n", p.size, id);
            break;
        case MQTT_SUBACK:
            status = mqtt_parse_suback(&p, &id, granted, 8, &count, &why);
            if (status == MQTT_OK)
                printf("ok suback %zu %u %d\n", p.size, id, granted[0]);
            break;
        case MQTT_PINGRESP:
            status = mqtt_parse_pingresp(&p, &why);
            if (status == MQTT_OK)
                printf("ok pingresp %zu\n", p.size);
            break;
        default:
            printf("ok other %zu %u\n", p.size, p.type);
        }
        if (status == MQTT_MALFORMED)
            printf("malformed %s\n", why);
    }
    free(bytes);
}

int main(void)
{
    char line[1 << 18];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        char *argv[8] = {0};
        int argc = 0;
        for (char *word = strtok(line, " "); word && argc < 8; word = strtok(NULL, " "))
            argv[argc++] = word;
        if (argc == 0)
            continue;
        size_t n = 0;
        if (!strcmp(argv[0], "filler") && argc == 3) {
            size_t count = strtoul(argv[2], NULL, 10);
            iotsb_filler(strtoull(argv[1], NULL, 10), out, count);
            n = count;
        } else if (!strcmp(argv[0], "connect") && argc == 5) {
            n = mqtt_connect(out, sizeof out, argv[1], argv[2], argv[3],
                             (uint16_t)atoi(argv[4]), true);
        } else if (!strcmp(argv[0], "publish") && argc == 6) {
            unsigned char *payload;
            size_t length = unhex(argv[2], &payload);
            n = mqtt_publish(out, sizeof out, argv[1], payload, length, atoi(argv[3]),
                             (uint16_t)atoi(argv[4]), atoi(argv[5]));
            free(payload);
        } else if (!strcmp(argv[0], "subscribe") && argc == 4) {
            const char *topics[1] = {argv[2]};
            int qos[1] = {atoi(argv[3])};
            n = mqtt_subscribe(out, sizeof out, (uint16_t)atoi(argv[1]), topics, qos, 1);
        } else if (!strcmp(argv[0], "puback") && argc == 2) {
            n = mqtt_puback(out, sizeof out, (uint16_t)atoi(argv[1]));
        } else if (!strcmp(argv[0], "pingreq")) {
            n = mqtt_pingreq(out, sizeof out);
        } else if (!strcmp(argv[0], "disconnect")) {
            n = mqtt_disconnect(out, sizeof out);
        } else if (!strcmp(argv[0], "parse")) {
            parse(argc > 1 ? argv[1] : "");
            fflush(stdout);
            continue;
        } else {
            printf("error unknown command\n");
            fflush(stdout);
            continue;
        }
        hex(out, n);
        fflush(stdout);
    }
    return 0;
}
