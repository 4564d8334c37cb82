/* Builds without payload schemes (plain, and TLS alone): only scheme_select is ever reached,
 * and it refuses any configuration that names a scheme. */
#include "scheme.h"

#include "agent.h"


bool scheme_select(const char *configuration)
{
    const char *name = configuration_scheme(configuration);
    if (name != NULL)
        die("this agent was built without payload schemes (scheme %s)", name);
    return false;
}

const char *scheme_name(void) { return "none"; }

/* Never reached (cfg.scheme stays false): here so roles.c links without scheme.c. */
struct direction *emitter_key_exchange(void) { die("no payload schemes in this build"); }
void receiver_key_exchange_start(void) { die("no payload schemes in this build"); }
struct direction *receiver_key_exchange(const struct mqtt_publish_in *m)
{
    die("no payload schemes in this build");
}
void receiver_key_exchange_end(void) {}
struct direction *emitter_key_exchange_frames(struct direction **r2e)
{
    die("no payload schemes in this build");
}
size_t scheme_seal(struct direction *d, const uint8_t *plaintext, size_t len, uint8_t *out)
{
    return 0;
}
enum open_result scheme_open(struct direction *d, const uint8_t *message, size_t len,
                             uint8_t *out, size_t *out_len)
{
    return OPEN_AUTH;
}
