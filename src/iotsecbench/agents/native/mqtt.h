/* MQTT 3.1.1 packets (OASIS standard, 29 October 2014) for the native agent: the encoders of
 * what a device client sends, and strict decoders of what a broker sends. A decoder never
 * reads past the bytes it is given; a malformed packet is an error with a reason, never a
 * crash (the agent closes the connection and records the reason). */
#ifndef IOTSB_MQTT_H
#define IOTSB_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mqtt_type {
    MQTT_CONNECT = 1, MQTT_CONNACK = 2, MQTT_PUBLISH = 3, MQTT_PUBACK = 4,
    MQTT_SUBSCRIBE = 8, MQTT_SUBACK = 9, MQTT_PINGREQ = 12, MQTT_PINGRESP = 13,
    MQTT_DISCONNECT = 14,
};

#define MQTT_MAX_REMAINING 268435455u /* §2.2.3: four length bytes */

/* Encoders: the packet's length, or 0 when it does not fit in cap (or a field is too long
 * for MQTT: strings and topics are at most 65535 bytes). */
size_t mqtt_connect(uint8_t *out, size_t cap, const char *client_id, const char *username,
                    const char *password, uint16_t keep_alive_s, bool clean_session);
size_t mqtt_publish(uint8_t *out, size_t cap, const char *topic, const uint8_t *payload,
                    size_t payload_len, int qos, uint16_t packet_id, bool retain);
size_t mqtt_puback(uint8_t *out, size_t cap, uint16_t packet_id);
size_t mqtt_subscribe(uint8_t *out, size_t cap, uint16_t packet_id, const char *const *topics,
                      const int *qos, size_t count);
size_t mqtt_pingreq(uint8_t *out, size_t cap);
size_t mqtt_disconnect(uint8_t *out, size_t cap);

/* One packet framed in a receive buffer. */
struct mqtt_packet {
    uint8_t type;        /* enum mqtt_type */
    uint8_t flags;       /* low nibble of the first byte */
    const uint8_t *body; /* variable header + payload */
    size_t body_len;
    size_t size;         /* fixed header + body: how much to consume */
};

enum mqtt_status { MQTT_MALFORMED = -1, MQTT_NEED_MORE = 0, MQTT_OK = 1 };

/* Frames the first packet of buf; MQTT_NEED_MORE until the whole packet is there. */
int mqtt_frame(const uint8_t *buf, size_t len, struct mqtt_packet *packet, const char **why);

struct mqtt_publish_in {
    const uint8_t *topic;
    size_t topic_len;
    const uint8_t *payload;
    size_t payload_len;
    int qos;
    bool dup, retain;
    uint16_t packet_id; /* 0 for QoS 0 */
};

/* Decoders of a framed packet: MQTT_OK or MQTT_MALFORMED with *why set. */
int mqtt_parse_connack(const struct mqtt_packet *p, bool *session_present, int *return_code,
                       const char **why);
int mqtt_parse_publish(const struct mqtt_packet *p, struct mqtt_publish_in *out, const char **why);
int mqtt_parse_puback(const struct mqtt_packet *p, uint16_t *packet_id, const char **why);
int mqtt_parse_suback(const struct mqtt_packet *p, uint16_t *packet_id, int *granted,
                      size_t granted_cap, size_t *granted_count, const char **why);
int mqtt_parse_pingresp(const struct mqtt_packet *p, const char **why);

#endif
