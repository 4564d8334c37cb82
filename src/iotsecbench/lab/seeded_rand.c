/* An OpenSSL 3 provider with one random generator, "IOTSB-SEEDED": a seeded xoshiro256** stream
 * per generator instance, for the broker of a counted device run (docs/device-client.md).
 *
 * Why: a device's handshake instructions depend on what the server sends — its key share, its
 * signature (and that signature's DER length), the sizes that follow — so two connections with
 * one client seed differ by the server's randomness alone. With the broker's OpenSSL drawing
 * from this generator (the configuration's [random] section names it; lab/seeded_rand.py),
 * one seed gives one server, and a repetition's count is repeatable to the instruction.
 *
 * Not for anything but a benchmark's broker: its output is a function of the seed in the
 * configuration file. It ignores its parent, the personalisation string, additional input and
 * reseeding; instance k (in the order OpenSSL creates its primary, public and private
 * generators) draws the stream of (seed, k). Providers see libcrypto only through the core's
 * dispatch table, so one build serves OpenSSL 3.0 and 3.5 alike. */
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STATE_READY 1 /* EVP_RAND_STATE_READY */
#define STATE_UNINITIALISED 0

static uint64_t provider_seed[4];
static unsigned instances;
static pthread_mutex_t instances_lock = PTHREAD_MUTEX_INITIALIZER;

struct generator {
    uint64_t s[4];
    int state;
    pthread_mutex_t lock;
};

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static uint64_t next(struct generator *g)
{
    uint64_t *s = g->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static void *new_ctx(void *provctx, void *parent, const OSSL_DISPATCH *parent_calls)
{
    (void)provctx, (void)parent, (void)parent_calls;
    struct generator *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    pthread_mutex_lock(&instances_lock);
    uint64_t mix = provider_seed[0] ^ provider_seed[1] ^ provider_seed[2] ^ provider_seed[3];
    mix ^= 0x5EED0000u + instances++;
    pthread_mutex_unlock(&instances_lock);
    for (int i = 0; i < 4; i++)
        g->s[i] = splitmix(&mix) ^ provider_seed[i];
    pthread_mutex_init(&g->lock, NULL);
    return g;
}

static void free_ctx(void *ctx)
{
    struct generator *g = ctx;
    if (g != NULL) {
        pthread_mutex_destroy(&g->lock);
        free(g);
    }
}

static int instantiate(void *ctx, unsigned int strength, int prediction_resistance,
                       const unsigned char *pstr, size_t pstr_len, const OSSL_PARAM params[])
{
    (void)strength, (void)prediction_resistance, (void)pstr, (void)pstr_len, (void)params;
    ((struct generator *)ctx)->state = STATE_READY;
    return 1;
}

static int uninstantiate(void *ctx)
{
    ((struct generator *)ctx)->state = STATE_UNINITIALISED;
    return 1;
}

static int generate(void *ctx, unsigned char *out, size_t outlen, unsigned int strength,
                    int prediction_resistance, const unsigned char *adin, size_t adinlen)
{
    (void)strength, (void)prediction_resistance, (void)adin, (void)adinlen;
    struct generator *g = ctx;
    while (outlen > 0) {
        uint64_t word = next(g);
        for (int i = 0; i < 8 && outlen > 0; i++, outlen--)
            *out++ = (unsigned char)(word >> (8 * i));
    }
    return 1;
}

static int reseed(void *ctx, int prediction_resistance, const unsigned char *entropy,
                  size_t entropy_len, const unsigned char *adin, size_t adin_len)
{
    (void)ctx, (void)prediction_resistance, (void)entropy, (void)entropy_len, (void)adin,
        (void)adin_len;
    return 1;
}

static int enable_locking(void *ctx) { return ctx != NULL; }
static int lock(void *ctx) { return pthread_mutex_lock(&((struct generator *)ctx)->lock) == 0; }
static void unlock(void *ctx) { pthread_mutex_unlock(&((struct generator *)ctx)->lock); }

static const OSSL_PARAM *gettable_ctx_params(void *ctx, void *provctx)
{
    static const OSSL_PARAM known[] = {
        OSSL_PARAM_int(OSSL_RAND_PARAM_STATE, NULL),
        OSSL_PARAM_uint(OSSL_RAND_PARAM_STRENGTH, NULL),
        OSSL_PARAM_size_t(OSSL_RAND_PARAM_MAX_REQUEST, NULL),
        OSSL_PARAM_END,
    };
    (void)ctx, (void)provctx;
    return known;
}

static int get_ctx_params(void *ctx, OSSL_PARAM params[])
{
    OSSL_PARAM *p;
    if ((p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STATE)) != NULL &&
        !OSSL_PARAM_set_int(p, ((struct generator *)ctx)->state))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_STRENGTH)) != NULL &&
        !OSSL_PARAM_set_uint(p, 256))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_RAND_PARAM_MAX_REQUEST)) != NULL &&
        !OSSL_PARAM_set_size_t(p, 1 << 16))
        return 0;
    return 1;
}

static const OSSL_PARAM *settable_ctx_params(void *ctx, void *provctx)
{
    static const OSSL_PARAM known[] = {
        OSSL_PARAM_uint(OSSL_DRBG_PARAM_RESEED_REQUESTS, NULL),
        OSSL_PARAM_time_t(OSSL_DRBG_PARAM_RESEED_TIME_INTERVAL, NULL),
        OSSL_PARAM_END,
    };
    (void)ctx, (void)provctx;
    return known;
}

static int set_ctx_params(void *ctx, const OSSL_PARAM params[])
{
    (void)ctx, (void)params;
    return 1;
}

static int verify_zeroization(void *ctx)
{
    (void)ctx;
    return 1;
}

static const OSSL_DISPATCH generator_functions[] = {
    {OSSL_FUNC_RAND_NEWCTX, (void (*)(void))new_ctx},
    {OSSL_FUNC_RAND_FREECTX, (void (*)(void))free_ctx},
    {OSSL_FUNC_RAND_INSTANTIATE, (void (*)(void))instantiate},
    {OSSL_FUNC_RAND_UNINSTANTIATE, (void (*)(void))uninstantiate},
    {OSSL_FUNC_RAND_GENERATE, (void (*)(void))generate},
    {OSSL_FUNC_RAND_RESEED, (void (*)(void))reseed},
    {OSSL_FUNC_RAND_ENABLE_LOCKING, (void (*)(void))enable_locking},
    {OSSL_FUNC_RAND_LOCK, (void (*)(void))lock},
    {OSSL_FUNC_RAND_UNLOCK, (void (*)(void))unlock},
    {OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS, (void (*)(void))gettable_ctx_params},
    {OSSL_FUNC_RAND_GET_CTX_PARAMS, (void (*)(void))get_ctx_params},
    {OSSL_FUNC_RAND_SETTABLE_CTX_PARAMS, (void (*)(void))settable_ctx_params},
    {OSSL_FUNC_RAND_SET_CTX_PARAMS, (void (*)(void))set_ctx_params},
    {OSSL_FUNC_RAND_VERIFY_ZEROIZATION, (void (*)(void))verify_zeroization},
    {0, NULL},
};

static const OSSL_ALGORITHM generators[] = {
    {"IOTSB-SEEDED", "provider=iotsbseeded", generator_functions, "a seeded benchmark stream"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM *query(void *provctx, int operation_id, int *no_cache)
{
    (void)provctx;
    *no_cache = 0;
    return operation_id == OSSL_OP_RAND ? generators : NULL;
}

static const OSSL_DISPATCH provider_functions[] = {
    {OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))query},
    {0, NULL},
};

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The seed: 64 hex digits in the provider's configuration section ("seed = …"). */
int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    OSSL_FUNC_core_get_params_fn *get_params = NULL;
    for (; in->function_id != 0; in++)
        if (in->function_id == OSSL_FUNC_CORE_GET_PARAMS)
            get_params = OSSL_FUNC_core_get_params(in);
    char *seed = NULL;
    OSSL_PARAM request[] = {OSSL_PARAM_utf8_ptr("seed", &seed, 0), OSSL_PARAM_END};
    if (get_params == NULL || !get_params(handle, request) || seed == NULL || strlen(seed) != 64)
        return 0;
    for (int i = 0; i < 64; i++) {
        int v = hex_value(seed[i]);
        if (v < 0)
            return 0;
        provider_seed[i / 16] = provider_seed[i / 16] << 4 | (uint64_t)v;
    }
    *out = provider_functions;
    *provctx = (void *)handle;
    return 1;
}
