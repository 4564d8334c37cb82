/* wolfSSL's configuration, which its headers need before any of them: Debian's generated
 * options.h (stack wolfssl), or for a build from registry source (stack wolfssl-5.9) the
 * settings file the build installed as user_settings.h (configs/, WOLFSSL_USER_SETTINGS). */
#ifndef IOTSB_WOLFSSL_OPTIONS_H
#define IOTSB_WOLFSSL_OPTIONS_H

#ifdef WOLFSSL_USER_SETTINGS
#include <wolfssl/wolfcrypt/settings.h>
#else
#include <wolfssl/options.h>
#endif

#endif
