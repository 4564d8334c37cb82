/* The payload filler of agents/wire.py, byte for byte: Python's random.Random(seed).randbytes(n),
 * so a native emitter carries exactly the bytes a Python emitter carries (docs/wire-format.md). */
#ifndef IOTSB_FILLER_H
#define IOTSB_FILLER_H

#include <stddef.h>
#include <stdint.h>

/* Writes n pseudo-random bytes for seed into out: MT19937 seeded as CPython seeds it from a
 * non-negative integer (init_by_array over its 32-bit words, least significant first), the
 * bytes taken as CPython's getrandbits(8 n) lays them out (32-bit outputs, little-endian). */
void iotsb_filler(uint64_t seed, uint8_t *out, size_t n);

#endif
