/* The device client's start and its roles. Before anything is counted the firmware reads the
 * host's configuration; then the ledger runs (ledger.c) and the role does its work between
 * marks that name what comes next; the records go to the host at the end (and, per segment,
 * as the ledger closes them).
 *
 * Role "connect" — one whole connection, what `bench handshake --target` counts:
 *
 *   SETUP          the stack's context, the CA and the client's credentials parsed: what a
 *                  device does once at boot (reported, not part of the handshake)
 *   CLIENT_HELLO   the TLS handshake, up to its last message (segments per I/O event)
 *   MQTT_CONNECT   CONNECT written (through TLS), then CONNACK read
 *   END            CONNACK parsed: the handshake's instructions are CLIENT_HELLO .. END
 *   DISCONNECT     DISCONNECT and the TLS close_notify (reported, not part of the handshake)
 *
 * Role "publish" — the device as the lab's emitter (publish.c): the same connection, then
 * PUBLISH at the configured rate for the run's duration, one record per message and a sample
 * every 100 ms. It first reads the host's clock (clock.c), so its times are the lab's.
 *
 * Role "tcp" — the tcp transport's emitter (frames.c): no broker, no MQTT; the payload scheme's
 * key exchange and the blocks as length-prefixed frames straight to the host's receiver, one
 * way or echoed, at a rate or saturating; the lab's clock as for "publish". */
#include "device.h"

#include "../../agents/native/mqtt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_FILE "device-config.bin"
#define RECORDS_FILE "device-records.jsonl"
#define PACKET_BYTES 1024

/* The error record and the end of the firmware (exit status 1). */
void device_fail(const char *what, const char *detail)
{
    ledger_bucket(BUCKET_HARNESS);
    char message[400];
    size_t n = strlen(what);
    if (n > sizeof message - 1)
        n = sizeof message - 1;
    memcpy(message, what, n);
    message[n] = '\0';
    if (detail != NULL && n + 2 < sizeof message) {
        strncat(message, ": ", sizeof message - strlen(message) - 1);
        strncat(message, detail, sizeof message - strlen(message) - 1);
    }
    ledger_flush();
    char quoted[sizeof message + 16];
    record("error", "\"message\":%s", json_quote(quoted, sizeof quoted, message));
    record("event", "\"name\":\"agent_end\",\"status\":\"failed\"");
    records_close();
    exit(1);
}

static bool tls_on(void) { return config.tls_version[0] != '\0'; }

void send_bytes(const uint8_t *bytes, size_t len, const char *what)
{
    int sent = tls_on() ? tls_write(bytes, len) : net_send(bytes, len);
    if (sent != (int)len)
        device_fail("lost the broker connection while sending", what);
}

/* Exactly len bytes of the MQTT stream: the packet reader asks for what it needs, as the
 * stacks do, so plain MQTT is network-invariant too. */
static void receive_exactly(uint8_t *into, size_t len)
{
    for (size_t at = 0; at < len;) {
        int got = tls_on() ? tls_read(into + at, len - at) : net_recv(into + at, len - at);
        if (got <= 0)
            device_fail("lost the broker connection while reading", NULL);
        at += (size_t)got;
    }
}

/* The next MQTT packet into buffer: fixed header, remaining length, body (MQTT 3.1.1 §2.2). */
struct mqtt_packet read_packet(uint8_t *buffer, size_t cap)
{
    size_t have = 0;
    struct mqtt_packet packet;
    const char *why = NULL;
    receive_exactly(buffer, 2);
    have = 2;
    for (;;) {
        int status = mqtt_frame(buffer, have, &packet, &why);
        if (status == MQTT_OK)
            return packet;
        if (status == MQTT_MALFORMED)
            device_fail("malformed packet from the broker", why);
        size_t need = have + 1; /* one more length byte, or the body once the length is known */
        if (have >= 2 && !(buffer[have - 1] & 0x80)) {
            size_t remaining = 0, multiplier = 1;
            for (size_t i = 1; i < have; i++, multiplier *= 128)
                remaining += (buffer[i] & 0x7fu) * multiplier;
            need = have + remaining;
        }
        if (need > cap)
            device_fail("malformed packet from the broker", "larger than the firmware's buffer");
        receive_exactly(buffer + have, need - have);
        have = need;
    }
}

/* One "counters" record: a name of the vocabulary's counters and its value. */
void counter(const char *name, uint64_t value)
{
    record("counters", "\"name\":\"%s\",\"value\":%llu", name, (unsigned long long)value);
}

void session_open(void)
{
    char why[256];
    uint8_t packet[PACKET_BYTES];

    ledger_mark("SETUP");
    vm_heap_mark();
    if (tls_on() && tls_setup(why, sizeof why) != 0)
        device_fail("TLS setup", why);
    struct vm_heap setup = vm_heap();

    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    stack_paint();
    vm_heap_mark();
    ledger_bucket(resume);

    if (tls_on()) {
        ledger_mark("CLIENT_HELLO");
        if (tls_handshake(why, sizeof why) != 0)
            device_fail("TLS handshake", why);
    }
    ledger_mark("MQTT_CONNECT");
    size_t n = mqtt_connect(packet, sizeof packet, config.client_id, config.username,
                            config.password, (uint16_t)config.keep_alive_s, true);
    if (n == 0)
        device_fail("client id, user name or password too long for MQTT", NULL);
    send_bytes(packet, n, "CONNECT");
    struct mqtt_packet connack = read_packet(packet, sizeof packet);
    bool present;
    int code;
    const char *malformed = NULL;
    if (mqtt_parse_connack(&connack, &present, &code, &malformed) != MQTT_OK)
        device_fail("malformed packet from the broker", malformed ? malformed : "no CONNACK");
    if (code != 0) {
        snprintf(why, sizeof why, "CONNACK return code %d", code);
        device_fail("the broker refused the connection", why);
    }
    ledger_mark("END");

    resume = ledger_bucket(BUCKET_HARNESS);
    struct vm_heap handshake = vm_heap();
    size_t stack_bytes = stack_high_water_bytes(); /* before any record is written */
    ledger_flush();
    if (!ledger_overflowed()) /* else records were written inside the handshake: no figure */
        counter("stack_high_water_bytes", stack_bytes);
    counter("tls_heap_setup_peak_bytes", setup.peak);
    counter("tls_heap_handshake_peak_bytes", handshake.peak);
    counter("tls_heap_steady_bytes", handshake.current);
    counter("stream_bytes_sent", net_bytes_sent());
    counter("stream_bytes_received", net_bytes_received());
    if (tls_on()) {
        char version[8];
        uint16_t suite;
        tls_negotiated(version, sizeof version, &suite);
        record("tls_transcript",
               "\"stack\":\"%s\",\"stack_version\":\"%s\",\"version\":\"%s\",\"suite\":%u",
               tls_stack(), tls_stack_version(), version, (unsigned)suite);
    }
    ledger_bucket(resume);
}

void session_close(void)
{
    uint8_t packet[8];
    ledger_mark("DISCONNECT");
    size_t n = mqtt_disconnect(packet, sizeof packet);
    send_bytes(packet, n, "DISCONNECT");
    if (tls_on())
        tls_close();
    ledger_mark("CLOSED");
}

static void role_connect(void)
{
    session_open();
    session_close();
}

struct role {
    const char *name;
    void (*run)(void);
};
static const struct role ROLES[] = {
    {"connect", role_connect}, {"publish", role_publish}, {"tcp", role_tcp}, {NULL, NULL}};

/* A wrapped call of nothing, measured against the plain call: what a wrapper adds to the
 * client bucket per primitive call (wrap.h's WRAP, the same shape as every wrapper). */
int __real_iotsb_probe(int a, int b, int c);
int __wrap_iotsb_probe(int a, int b, int c);
__attribute__((noinline)) int __real_iotsb_probe(int a, int b, int c)
{
    __asm__ volatile("");
    return a ^ b ^ c;
}
__attribute__((noinline)) int __wrap_iotsb_probe(int a, int b, int c)
{
    ledger_primitive_enter();
    int result = __real_iotsb_probe(a, b, c);
    ledger_primitive_leave(FAMILY_PK);
    return result;
}

/* Two marks back to back leave the boundary's residue in the segment between them. */
static void calibrate(uint64_t *per_boundary, uint64_t *per_primitive)
{
    ledger_mark("CALIBRATE");
    ledger_mark("CALIBRATE");
    *per_boundary = ledger_ended_client();
    __real_iotsb_probe(1, 2, 3);
    ledger_mark("CALIBRATE");
    uint64_t plain = ledger_ended_client();
    __wrap_iotsb_probe(1, 2, 3);
    ledger_mark("CALIBRATE");
    uint64_t wrapped = ledger_ended_client();
    *per_primitive = wrapped > plain ? wrapped - plain : 0;
}

int main(void)
{
    board_start();
    if (records_open(RECORDS_FILE) != 0)
        return 3;
    char why[200];
    if (config_load(CONFIG_FILE, why, sizeof why) != 0)
        device_fail("configuration", why);
    const struct role *role = ROLES;
    while (role->name != NULL && strcmp(role->name, config.role) != 0)
        role++;
    if (role->name == NULL)
        device_fail("unknown role", config.role);

    /* the emitter roles record on the lab's clock (clock.c) */
    if (strcmp(config.role, "connect") != 0 && clock_sync(why, sizeof why) != 0)
        device_fail("clock", why);
    ledger_start();
    uint64_t per_boundary, per_primitive;
    calibrate(&per_boundary, &per_primitive);
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    ledger_flush();
    char role_name[40];
    record("event",
           "\"name\":\"agent_start\",\"role\":%s,\"stack\":\"%s\",\"stack_version\":\"%s\","
           "\"residue_per_boundary\":%llu,\"residue_per_primitive_call\":%llu",
           json_quote(role_name, sizeof role_name, config.role), tls_stack(), tls_stack_version(),
           (unsigned long long)per_boundary, (unsigned long long)per_primitive);
    ledger_bucket(resume);

    role->run();

    ledger_bucket(BUCKET_HARNESS);
    ledger_flush();
    record("event", "\"name\":\"agent_end\",\"status\":\"ok\"");
    records_close();
    return 0;
}
