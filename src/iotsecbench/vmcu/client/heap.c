/* Memory and randomness of the device client (the counting allocator every stack allocates
 * through is the primitives' harness's own: ../firmware/counted_heap.c).
 *
 * - The stack high-water mark: the free stack is painted with a pattern before the handshake
 *   (from the top of the heap region to just below the current frame) and the deepest word that
 *   changed is found after it, as the primitives' harness does (../firmware/harness.c).
 * - The TRNG stand-in: where a device reads its hardware random number generator, this reads
 *   xoshiro256** seeded with the host's per-repetition seed, so one seed gives the same random
 *   bytes, hence the same instructions. The stacks' own DRBGs (mbedTLS's CTR_DRBG behind PSA,
 *   wolfSSL's Hash_DRBG) run on top of it and are counted; the stand-in itself is not (a TRNG
 *   read is a register read on a device). Not for real keys: it is a benchmark's randomness. */
#include "device.h"

#include <string.h>

#define STACK_PAINT 0xA5A5A5A5u
#define STACK_MARGIN 64 /* bytes below the caller's frame left unpainted (stack_paint's own) */
#if defined(__riscv)
#define READ_SP(into) __asm__ volatile("mv %0, sp" : "=r"(into))
#else
#define READ_SP(into) __asm__ volatile("mov %0, sp" : "=r"(into))
#endif

extern uint8_t __heap_end[]; /* picolibc.ld: the lowest address of the stack region */

static uint32_t *painted_top; /* one past the highest painted word */

void __attribute__((noinline)) stack_paint(void)
{
    uint8_t *sp;
    READ_SP(sp);
    painted_top = (uint32_t *)((uintptr_t)(sp - STACK_MARGIN) & ~(uintptr_t)3);
    for (uint32_t *p = (uint32_t *)__heap_end; p < painted_top; p++)
        *(volatile uint32_t *)p = STACK_PAINT;
}

size_t stack_high_water_bytes(void)
{
    uint32_t *deepest = (uint32_t *)__heap_end;
    while (deepest < painted_top && *deepest == STACK_PAINT)
        deepest++;
    /* from the painted top (the handshake's caller) down to the deepest word used */
    return (size_t)((uint8_t *)painted_top - (uint8_t *)deepest) + STACK_MARGIN;
}

/* xoshiro256** (Blackman and Vigna, 2018) */
static uint64_t trng_state[4];
static bool trng_seeded;

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t trng_next(void)
{
    uint64_t *s = trng_state;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

int device_seed(unsigned char *out, unsigned int len)
{
    enum bucket resume = ledger_bucket(BUCKET_HARNESS);
    if (!trng_seeded) {
        memcpy(trng_state, config.seed, sizeof trng_state);
        if (!(trng_state[0] | trng_state[1] | trng_state[2] | trng_state[3]))
            trng_state[0] = 1; /* the all-zero state is the generator's one fixed point */
        trng_seeded = true;
    }
    while (len > 0) {
        uint64_t word = trng_next();
        for (int i = 0; i < 8 && len > 0; i++, len--)
            *out++ = (unsigned char)(word >> (8 * i));
    }
    ledger_bucket(resume);
    return 0;
}

/* mbedTLS's hardware entropy source (MBEDTLS_ENTROPY_HARDWARE_ALT): the stand-in, for the TLS
 * client and the payload schemes' build alike. */
int mbedtls_hardware_poll(void *data, unsigned char *output, size_t len, size_t *olen);
int mbedtls_hardware_poll(void *data, unsigned char *output, size_t len, size_t *olen)
{
    (void)data;
    device_seed(output, (unsigned int)len);
    *olen = len;
    return 0;
}
