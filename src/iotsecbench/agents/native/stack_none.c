/* The plain build: no cryptographic library linked (its size is the MQTT client's alone). */
#include "stack.h"

#include <sys/random.h>

const char *stack_name(void) { return "none"; }
const char *stack_version(void) { return ""; }
void stack_init(void) {}

int stack_random(uint8_t *out, size_t len)
{
    return getrandom(out, len, 0) == (ssize_t)len ? 0 : -1;
}
