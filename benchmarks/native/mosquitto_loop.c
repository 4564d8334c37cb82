/* The reference for the native agent's publish rate: the tightest publish loop libmosquitto
 * (Debian's libmosquitto-dev, the client library mosquitto ships) allows — QoS 0 PUBLISHes of
 * one payload, as fast as the library takes them, for a fixed time, single-threaded like the
 * native agent; prints how many were published, the seconds until the last was written, and
 * the bytes the kernel took (wchar), so a queue that never reached the socket shows.
 *
 *   mosquitto_loop HOST PORT USER PASSWORD TOPIC PAYLOAD_BYTES SECONDS [CA_FILE]
 */
#include <mosquitto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: %s HOST PORT USER PASSWORD TOPIC BYTES SECONDS [CA]\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[2]), size = atoi(argv[6]);
    double seconds = atof(argv[7]);
    mosquitto_lib_init();
    struct mosquitto *client = mosquitto_new("iotsb-reference", true, NULL);
    mosquitto_username_pw_set(client, argv[3], argv[4]);
    if (argc > 8) {
        mosquitto_tls_set(client, argv[8], NULL, NULL, NULL, NULL);
        mosquitto_tls_insecure_set(client, false);
    }
    if (mosquitto_connect(client, argv[1], port, 60) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "connect failed\n");
        return 1;
    }
    char *payload = calloc(1, (size_t)size);
    long sent = 0;
    double start = now_s(), end = start + seconds;
    while (now_s() < end) {
        if (mosquitto_publish(client, NULL, argv[5], size, payload, 0, false) == MOSQ_ERR_SUCCESS)
            sent++;
        /* One turn of the library's own loop (reads too: TLS needs them), no waiting: what
         * was queued goes to the socket; without it libmosquitto's queue only grows. */
        int rc = mosquitto_loop(client, 0, 1);
        if (rc != MOSQ_ERR_SUCCESS) {
            fprintf(stderr, "write failed: %s\n", mosquitto_strerror(rc));
            return 1;
        }
    }
    while (mosquitto_want_write(client))
        if (mosquitto_loop(client, 10, 1) != MOSQ_ERR_SUCCESS)
            return 1;
    double elapsed = now_s() - start;
    /* What reached the socket, from the kernel's count (not the library's queue). */
    long long written = 0;
    char line[128];
    FILE *io = fopen("/proc/self/io", "r");
    while (io != NULL && fgets(line, sizeof line, io) != NULL)
        if (sscanf(line, "wchar: %lld", &written) == 1)
            break;
    if (io != NULL)
        fclose(io);
    printf("%ld %.6f %lld\n", sent, elapsed, written);
    mosquitto_disconnect(client);
    mosquitto_destroy(client);
    mosquitto_lib_cleanup();
    return 0;
}
