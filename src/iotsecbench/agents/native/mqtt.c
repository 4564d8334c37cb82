/* MQTT 3.1.1 encoders and strict decoders; section numbers are the standard's. */
#include "mqtt.h"

#include <string.h>

struct writer {
    uint8_t *out;
    size_t cap, at;
    bool full;
};

static void put(struct writer *w, const void *bytes, size_t n)
{
    if (w->full || n > w->cap - w->at) {
        w->full = true;
        return;
    }
    memcpy(w->out + w->at, bytes, n);
    w->at += n;
}

static void put_u8(struct writer *w, uint8_t value) { put(w, &value, 1); }

static void put_u16(struct writer *w, uint16_t value)
{
    uint8_t bytes[2] = {(uint8_t)(value >> 8), (uint8_t)value};
    put(w, bytes, 2);
}

static void put_string(struct writer *w, const char *text) /* §1.5.3 */
{
    size_t n = strlen(text);
    if (n > 0xffff) {
        w->full = true;
        return;
    }
    put_u16(w, (uint16_t)n);
    put(w, text, n);
}

/* §2.2.3: the remaining length, 7 bits per byte, least significant group first. */
static void put_remaining(struct writer *w, size_t length)
{
    if (length > MQTT_MAX_REMAINING) {
        w->full = true;
        return;
    }
    do {
        uint8_t digit = length % 128;
        length /= 128;
        put_u8(w, (uint8_t)(length ? digit | 0x80 : digit));
    } while (length);
}

static size_t done(const struct writer *w) { return w->full ? 0 : w->at; }

size_t mqtt_connect(uint8_t *out, size_t cap, const char *client_id, const char *username,
                    const char *password, uint16_t keep_alive_s, bool clean_session)
{
    size_t body = 10 + 2 + strlen(client_id); /* §3.1.2: protocol name, level, flags, keep-alive */
    uint8_t flags = clean_session ? 0x02 : 0x00;
    if (username) {
        body += 2 + strlen(username);
        flags |= 0x80;
    }
    if (username && password) { /* §3.1.2.9: no password without a user name */
        body += 2 + strlen(password);
        flags |= 0x40;
    }
    struct writer w = {out, cap, 0, false};
    put_u8(&w, MQTT_CONNECT << 4);
    put_remaining(&w, body);
    put_string(&w, "MQTT");
    put_u8(&w, 4); /* protocol level 3.1.1 */
    put_u8(&w, flags);
    put_u16(&w, keep_alive_s);
    put_string(&w, client_id);
    if (flags & 0x80)
        put_string(&w, username);
    if (flags & 0x40)
        put_string(&w, password);
    return done(&w);
}

size_t mqtt_publish(uint8_t *out, size_t cap, const char *topic, const uint8_t *payload,
                    size_t payload_len, int qos, uint16_t packet_id, bool retain)
{
    if (qos < 0 || qos > 2 || (qos > 0 && packet_id == 0)) /* §2.3.1: ids are non-zero */
        return 0;
    size_t body = 2 + strlen(topic) + (qos ? 2 : 0) + payload_len;
    struct writer w = {out, cap, 0, false};
    put_u8(&w, (uint8_t)(MQTT_PUBLISH << 4 | qos << 1 | (retain ? 1 : 0)));
    put_remaining(&w, body);
    put_string(&w, topic);
    if (qos)
        put_u16(&w, packet_id);
    put(&w, payload, payload_len);
    return done(&w);
}

size_t mqtt_puback(uint8_t *out, size_t cap, uint16_t packet_id)
{
    struct writer w = {out, cap, 0, false};
    put_u8(&w, MQTT_PUBACK << 4);
    put_u8(&w, 2);
    put_u16(&w, packet_id);
    return done(&w);
}

size_t mqtt_subscribe(uint8_t *out, size_t cap, uint16_t packet_id, const char *const *topics,
                      const int *qos, size_t count)
{
    if (count == 0 || packet_id == 0) /* §3.8.3: at least one filter */
        return 0;
    size_t body = 2;
    for (size_t k = 0; k < count; k++) {
        if (qos[k] < 0 || qos[k] > 2)
            return 0;
        body += 2 + strlen(topics[k]) + 1;
    }
    struct writer w = {out, cap, 0, false};
    put_u8(&w, MQTT_SUBSCRIBE << 4 | 0x2); /* §3.8.1: reserved flags 0010 */
    put_remaining(&w, body);
    put_u16(&w, packet_id);
    for (size_t k = 0; k < count; k++) {
        put_string(&w, topics[k]);
        put_u8(&w, (uint8_t)qos[k]);
    }
    return done(&w);
}

static size_t two_bytes(uint8_t *out, size_t cap, enum mqtt_type type)
{
    struct writer w = {out, cap, 0, false};
    put_u8(&w, (uint8_t)(type << 4));
    put_u8(&w, 0);
    return done(&w);
}

size_t mqtt_pingreq(uint8_t *out, size_t cap) { return two_bytes(out, cap, MQTT_PINGREQ); }
size_t mqtt_disconnect(uint8_t *out, size_t cap) { return two_bytes(out, cap, MQTT_DISCONNECT); }

static int malformed(const char **why, const char *reason)
{
    if (why)
        *why = reason;
    return MQTT_MALFORMED;
}

int mqtt_frame(const uint8_t *buf, size_t len, struct mqtt_packet *packet, const char **why)
{
    if (len < 2)
        return MQTT_NEED_MORE;
    size_t remaining = 0, multiplier = 1, at = 1;
    for (;;) {
        if (at >= len)
            return MQTT_NEED_MORE;
        uint8_t digit = buf[at++];
        remaining += (digit & 0x7fu) * multiplier;
        if (!(digit & 0x80))
            break;
        if (at == 5)
            return malformed(why, "remaining length longer than four bytes");
        multiplier *= 128;
    }
    if (remaining > len - at)
        return MQTT_NEED_MORE;
    packet->type = buf[0] >> 4;
    packet->flags = buf[0] & 0x0f;
    packet->body = buf + at;
    packet->body_len = remaining;
    packet->size = at + remaining;
    if (packet->type == 0 || packet->type == 15)
        return malformed(why, "reserved packet type");
    return MQTT_OK;
}

static uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

int mqtt_parse_connack(const struct mqtt_packet *p, bool *session_present, int *return_code,
                       const char **why)
{
    if (p->type != MQTT_CONNACK || p->flags != 0)
        return malformed(why, "not a CONNACK");
    if (p->body_len != 2)
        return malformed(why, "CONNACK is not 2 bytes long");
    if (p->body[0] & 0xfe)
        return malformed(why, "CONNACK reserved flags set");
    *session_present = p->body[0] & 1;
    *return_code = p->body[1];
    return MQTT_OK;
}

int mqtt_parse_publish(const struct mqtt_packet *p, struct mqtt_publish_in *out, const char **why)
{
    if (p->type != MQTT_PUBLISH)
        return malformed(why, "not a PUBLISH");
    out->qos = (p->flags >> 1) & 3;
    out->dup = p->flags & 8;
    out->retain = p->flags & 1;
    if (out->qos == 3)
        return malformed(why, "PUBLISH with QoS 3");
    if (p->body_len < 2)
        return malformed(why, "PUBLISH without a topic length");
    size_t topic_len = u16(p->body);
    size_t header = 2 + topic_len + (out->qos ? 2 : 0);
    if (header > p->body_len)
        return malformed(why, "PUBLISH shorter than its topic and packet id");
    out->topic = p->body + 2;
    out->topic_len = topic_len;
    out->packet_id = out->qos ? u16(p->body + 2 + topic_len) : 0;
    if (out->qos && out->packet_id == 0)
        return malformed(why, "PUBLISH with packet id 0");
    out->payload = p->body + header;
    out->payload_len = p->body_len - header;
    return MQTT_OK;
}

int mqtt_parse_puback(const struct mqtt_packet *p, uint16_t *packet_id, const char **why)
{
    if (p->type != MQTT_PUBACK || p->flags != 0)
        return malformed(why, "not a PUBACK");
    if (p->body_len != 2)
        return malformed(why, "PUBACK is not 2 bytes long");
    *packet_id = u16(p->body);
    return MQTT_OK;
}

int mqtt_parse_suback(const struct mqtt_packet *p, uint16_t *packet_id, int *granted,
                      size_t granted_cap, size_t *granted_count, const char **why)
{
    if (p->type != MQTT_SUBACK || p->flags != 0)
        return malformed(why, "not a SUBACK");
    if (p->body_len < 3)
        return malformed(why, "SUBACK without a return code");
    size_t count = p->body_len - 2;
    if (count > granted_cap)
        return malformed(why, "SUBACK with more return codes than filters asked for");
    *packet_id = u16(p->body);
    for (size_t k = 0; k < count; k++) {
        uint8_t code = p->body[2 + k];
        if (code > 2 && code != 0x80) /* §3.9.3: 0, 1, 2 or 0x80 (failure) */
            return malformed(why, "SUBACK return code not 0, 1, 2 or 0x80");
        granted[k] = code == 0x80 ? -1 : code;
    }
    *granted_count = count;
    return MQTT_OK;
}

int mqtt_parse_pingresp(const struct mqtt_packet *p, const char **why)
{
    if (p->type != MQTT_PINGRESP || p->flags != 0 || p->body_len != 0)
        return malformed(why, "not a PINGRESP");
    return MQTT_OK;
}
