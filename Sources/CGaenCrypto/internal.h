// Per-architecture entry points behind gaen_crypto.h's dispatch (not part of the module's API).
#ifndef GAEN_CRYPTO_INTERNAL_H
#define GAEN_CRYPTO_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
#define GAEN_HAVE_X86 1
#else
#define GAEN_HAVE_X86 0
#endif
#if defined(__aarch64__)
#define GAEN_HAVE_ARMV8 1
#else
#define GAEN_HAVE_ARMV8 0
#endif

#if GAEN_HAVE_X86
void gaen_ecb_aesni(const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks);
void gaen_ecb_vaes256(const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks);
void gaen_ecb_vaes512(const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks);
void gaen_rpis_aesni(const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out);
void gaen_rpis_vaes256(const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out);
size_t gaen_rpis_vaes512(const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out, const uint64_t *bitmap,
                         uint32_t mask, int32_t *candidates);
void gaen_hkdf16_shani(unsigned lanes, const uint8_t *ikm, size_t stride, size_t n, const uint8_t *info, size_t info_len,
                       uint8_t *out);
#endif
#if GAEN_HAVE_ARMV8
void gaen_ecb_armv8(const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks);
void gaen_rpis_armv8(const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out);
void gaen_hkdf16_armv8(unsigned lanes, const uint8_t *ikm, size_t stride, size_t n, const uint8_t *info, size_t info_len,
                       uint8_t *out);
#endif

#endif
