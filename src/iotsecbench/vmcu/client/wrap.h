/* Link-time wrappers of a stack's primitives (-Wl,--wrap=NAME for every WRAP line of
 * wrap_<stack>.c; vmcu/client.py reads the names from those lines): a call from another
 * object file to NAME reaches __wrap_NAME, which books the client instructions spent inside
 * the call to the primitive's family (ledger.c) and calls the library's own __real_NAME.
 * Calls inside one object file are not redirected, and a primitive called from inside another
 * counts for the outermost, so each family holds what the TLS and X.509 code spent in it.
 * Declaring __wrap_NAME with __typeof__(NAME) makes a wrong parameter list a compile error. */
#ifndef IOTSB_WRAP_H
#define IOTSB_WRAP_H

#include "device.h"

#define WRAP(family, name, params, args)                                                       \
    extern __typeof__(name) __real_##name, __wrap_##name;                                      \
    int __wrap_##name params                                                                   \
    {                                                                                          \
        ledger_primitive_enter();                                                              \
        int result = __real_##name args;                                                       \
        ledger_primitive_leave(family);                                                        \
        return result;                                                                         \
    }

#endif
