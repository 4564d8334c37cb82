/* Test driver of the native agent's payload schemes (tests/unit/agents/test_native_schemes.py):
 * the receiver's side of scheme.c on mbedTLS, one command per line on stdin, one answer per
 * line on stdout, so the Python schemes can play the emitter and compare verdicts.
 *   select CONFIGURATION   -> "ok" (the configuration's scheme selected)
 *   hello PSKHEX|-         -> hex of the receiver's hello
 *   answer HEX             -> hex of the key confirmation, or "refused <why>"
 *   open HEX               -> "ok <plaintext hex>" or the verdict: malformed, auth,
 *                             duplicate, too-old
 * Built with AddressSanitizer and UBSan by the test: reading past a message fails it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheme.h"

static char line[1 << 20];
static unsigned char plaintext[1 << 19];

static size_t unhex(const char *text, unsigned char **bytes)
{
    size_t n = strlen(text) / 2;
    *bytes = malloc(n ? n : 1); /* exactly n: ASan sees a read past the end */
    for (size_t i = 0; i < n; i++)
        sscanf(text + 2 * i, "%2hhx", &(*bytes)[i]);
    return n;
}

static void hex(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
}

int main(void)
{
    static const char *verdicts[] = {"ok", "malformed", "auth", "duplicate", "too-old"};
    struct direction *e2r = NULL;
    unsigned char *psk = NULL;
    size_t psk_len = 0;
    while (fgets(line, sizeof line, stdin) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *argument = strchr(line, ' ');
        argument = argument ? argument + 1 : line + strlen(line);
        unsigned char *bytes = NULL, out[256];
        if (strncmp(line, "select ", 7) == 0) {
            printf(scheme_select(argument) ? "ok\n" : "none\n");
        } else if (strncmp(line, "hello ", 6) == 0) {
            if (strcmp(argument, "-") != 0)
                psk_len = unhex(argument, &psk);
            size_t n = kx_receiver_hello(psk, psk_len, out);
            hex(out, n);
            printf("\n");
        } else if (strncmp(line, "answer ", 7) == 0) {
            size_t n = unhex(argument, &bytes);
            const char *why = "?";
            size_t ready = kx_receiver_answer(bytes, n, out, &e2r, &why);
            if (ready == 0)
                printf("refused %s\n", why);
            else {
                hex(out, ready);
                printf("\n");
            }
        } else if (strncmp(line, "open ", 5) == 0) {
            size_t n = unhex(argument, &bytes), opened = 0;
            enum open_result verdict = scheme_open(e2r, bytes, n, plaintext, &opened);
            printf("%s", verdicts[verdict]);
            if (verdict == OPEN_OK) {
                printf(" ");
                hex(plaintext, opened);
            }
            printf("\n");
        } else {
            printf("unknown command\n");
        }
        free(bytes);
        fflush(stdout);
    }
    return 0;
}
