// The matcher's hot loop in C: AES-128 through AES-NI / VAES (x86-64) or the ARMv8 crypto
// extensions, chosen at run time from what the CPU says it has, and HKDF-SHA256 for several keys
// in lockstep on SHA-NI or the ARMv8 SHA2 extension.
//
// Why C and not OpenSSL: GaenBench match measured the matcher at 0.9M keys per CPU-second on
// OpenSSL EVP, with 13% of the time in EVP's per-key set-up (provider dispatch, parameter
// look-ups) and AES at about half the VAES rate, and HKDF's six dependent SHA-256 compressions
// per key waiting on SHA-NI latency one key at a time. Intrinsics in Swift are not available,
// so this small target holds the loops; OpenSSL EVP stays the portable path (and the reference
// the tests compare every path against).
//
// Every function is pure (no allocation, no I/O); detection reads CPUID/auxv once.
#ifndef GAEN_CRYPTO_H
#define GAEN_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// AES-128 implementations. GAEN_AES_NONE: none in this target (use OpenSSL EVP).
enum {
    GAEN_AES_NONE = 0,
    GAEN_AES_AESNI = 1,   // x86-64 AES-NI, one block per instruction
    GAEN_AES_VAES256 = 2, // x86-64 VAES on 256-bit vectors (AVX2), two blocks per instruction
    GAEN_AES_VAES512 = 3, // x86-64 VAES on 512-bit vectors (AVX-512), four blocks per instruction
    GAEN_AES_ARMV8 = 4,   // ARMv8 crypto extensions (AESE/AESMC)
};

/// Bit (1 << impl) set for each implementation this CPU and OS support (GAEN_AES_NONE always).
unsigned gaen_aes_supported(void);
/// The fastest supported implementation (GAEN_AES_NONE when there is none).
int gaen_aes_best(void);
/// 1 when HKDF in lockstep (SHA-NI on x86-64, the SHA2 extension on arm64) is available.
int gaen_sha_lockstep_supported(void);

/// AES-128-ECB of `blocks` blocks of `in` under `key` into `out` (may alias), with `impl`
/// (must be supported; returns -1 otherwise, 0 on success).
int gaen_aes128_ecb(int impl, const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks);

/// The RPIs of `count` consecutive intervals from `first` under `rpik` (GAEN crypto spec:
/// RPI_j = AES-128(RPIK, "EN-RPI" || 0x000000000000 || LE32(j))), written to `out` (16 x count
/// bytes). When `bitmap` is not NULL, also the matcher's first-stage filter, fused with the
/// AES output: the indices k (0-based) of the RPIs whose bit ((bytes 12..15 as LE32) & mask)
/// is set in `bitmap` go to `candidates` in increasing order (room for count + 16 entries);
/// returns their number (0 without a bitmap). Returns (size_t)-1 if `impl` is unsupported.
size_t gaen_derive_rpis(int impl, const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out,
                        const uint64_t *bitmap, uint64_t mask, int32_t *candidates);

/// The same first-stage filter on RPIs already derived (portable C; room for count entries).
size_t gaen_first_stage(const uint8_t *rpis, size_t count, const uint64_t *bitmap, uint64_t mask, int32_t *candidates);

/// HKDF-SHA256(IKM = 16 bytes, salt = none, info, L = 16) for `n` keys: key i's IKM at
/// ikm + i * stride, its output at out + 16 * i. `lanes` keys (1, 2 or 4) go through SHA-NI
/// (arm64: the SHA2 extension) together so that one key's compressions fill the others'
/// latency. info_len <= 54.
/// Returns 0, or -1 when the SHA extension is missing or an argument is out of range.
int gaen_hkdf16(unsigned lanes, const uint8_t *ikm, size_t stride, size_t n, const uint8_t *info, size_t info_len,
                uint8_t *out);

#ifdef __cplusplus
}
#endif
#endif
