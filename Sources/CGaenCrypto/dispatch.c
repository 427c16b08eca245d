// Run-time choice of the implementation and the portable parts (compiled on every CPU).
#include "gaen_crypto.h"
#include "internal.h"
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned detect(void) {
    unsigned mask = 1u << GAEN_AES_NONE;
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return mask;
    const int aesni = (c >> 25) & 1, ssse3 = (c >> 9) & 1, sse41 = (c >> 19) & 1, osxsave = (c >> 27) & 1;
    const int avx = (c >> 28) & 1;
    if (aesni && ssse3 && sse41) mask |= 1u << GAEN_AES_AESNI;
    if (!osxsave || !avx) return mask;
    // The OS must save the vector state it would have to restore: XCR0 bits 1-2 (SSE, AVX)
    // for 256-bit, plus 5-7 (opmask, upper ZMM halves, ZMM16-31) for 512-bit.
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    const int ymmState = (xlo & 0x6) == 0x6, zmmState = (xlo & 0xe6) == 0xe6;
    if (__get_cpuid_max(0, 0) < 7) return mask;
    __cpuid_count(7, 0, a, b, c, d);
    const int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512dq = (b >> 17) & 1, avx512bw = (b >> 30) & 1;
    const int avx512vl = (b >> 31) & 1, vaes = (c >> 9) & 1;
    if (aesni && vaes && avx2 && ymmState) mask |= 1u << GAEN_AES_VAES256;
    if (aesni && vaes && avx512f && avx512dq && avx512bw && avx512vl && zmmState) mask |= 1u << GAEN_AES_VAES512;
    return mask;
}

static int detect_sha(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int ssse3 = (c >> 9) & 1, sse41 = (c >> 19) & 1;
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return ssse3 && sse41 && ((b >> 29) & 1);
}

#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
// The kernel's AT_HWCAP bits (arch/arm64/include/uapi/asm/hwcap.h), for libcs that lack them.
#ifndef HWCAP_AES
#define HWCAP_AES (1 << 3)
#endif
#ifndef HWCAP_SHA2
#define HWCAP_SHA2 (1 << 6)
#endif
// The kernel sets these only where the SoC enables the crypto extensions (the Pi 5's BCM2712
// does; the Pi 4's BCM2711 does not, and there everything goes through OpenSSL).
static unsigned detect(void) {
    unsigned mask = 1u << GAEN_AES_NONE;
    if (getauxval(AT_HWCAP) & HWCAP_AES) mask |= 1u << GAEN_AES_ARMV8;
    return mask;
}
static int detect_sha(void) { return (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0; }

#else
static unsigned detect(void) { return 1u << GAEN_AES_NONE; }
static int detect_sha(void) { return 0; }
#endif

// Detection is idempotent, so a race between first callers only repeats it.
static unsigned supported_cache;
static int sha_cache = -1;

unsigned gaen_aes_supported(void) {
    unsigned m = __atomic_load_n(&supported_cache, __ATOMIC_RELAXED);
    if (m == 0) {
        m = detect();
        __atomic_store_n(&supported_cache, m, __ATOMIC_RELAXED);
    }
    return m;
}

int gaen_aes_best(void) {
    const unsigned m = gaen_aes_supported();
    static const int order[] = {GAEN_AES_VAES512, GAEN_AES_VAES256, GAEN_AES_ARMV8, GAEN_AES_AESNI};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (m & (1u << order[i])) return order[i];
    return GAEN_AES_NONE;
}

int gaen_sha_lockstep_supported(void) {
    int s = __atomic_load_n(&sha_cache, __ATOMIC_RELAXED);
    if (s < 0) {
        s = detect_sha();
        __atomic_store_n(&sha_cache, s, __ATOMIC_RELAXED);
    }
    return s;
}

static int usable(int impl) {
    return impl > GAEN_AES_NONE && impl <= GAEN_AES_ARMV8 && (gaen_aes_supported() & (1u << impl));
}

int gaen_aes128_ecb(int impl, const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks) {
    if (!usable(impl)) return -1;
    switch (impl) {
#if GAEN_HAVE_X86
    case GAEN_AES_AESNI: gaen_ecb_aesni(key, in, out, blocks); return 0;
    case GAEN_AES_VAES256: gaen_ecb_vaes256(key, in, out, blocks); return 0;
    case GAEN_AES_VAES512: gaen_ecb_vaes512(key, in, out, blocks); return 0;
#endif
#if GAEN_HAVE_ARMV8
    case GAEN_AES_ARMV8: gaen_ecb_armv8(key, in, out, blocks); return 0;
#endif
    default: return -1;
    }
}

size_t gaen_derive_rpis(int impl, const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out,
                        const uint64_t *bitmap, uint64_t mask, int32_t *candidates) {
    if (!usable(impl)) return (size_t)-1;
    switch (impl) {
#if GAEN_HAVE_X86
    case GAEN_AES_VAES512:
        // The fused filter takes 32-bit bit indices; larger bitmaps (never built) go the long way.
        if (bitmap && mask <= 0xffffffffu) return gaen_rpis_vaes512(rpik, first, count, out, bitmap, (uint32_t)mask, candidates);
        gaen_rpis_vaes512(rpik, first, count, out, NULL, 0, candidates);
        break;
    case GAEN_AES_VAES256: gaen_rpis_vaes256(rpik, first, count, out); break;
    case GAEN_AES_AESNI: gaen_rpis_aesni(rpik, first, count, out); break;
#endif
#if GAEN_HAVE_ARMV8
    case GAEN_AES_ARMV8: gaen_rpis_armv8(rpik, first, count, out); break;
#endif
    default: return (size_t)-1;
    }
    return bitmap ? gaen_first_stage(out, count, bitmap, mask, candidates) : 0;
}

size_t gaen_first_stage(const uint8_t *rpis, size_t count, const uint64_t *bitmap, uint64_t mask, int32_t *candidates) {
    // Branch-free: every index is written, and the cursor moves only past those that pass.
    size_t n = 0;
    for (size_t k = 0; k < count; k++) {
        uint32_t high;
        memcpy(&high, rpis + 16 * k + 12, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        high = __builtin_bswap32(high);
#endif
        const uint64_t a = (uint64_t)high & mask;
        candidates[n] = (int32_t)k;
        n += (bitmap[a >> 6] >> (a & 63)) & 1;
    }
    return n;
}

int gaen_hkdf16(unsigned lanes, const uint8_t *ikm, size_t stride, size_t n, const uint8_t *info, size_t info_len,
                uint8_t *out) {
    if (!(lanes == 1 || lanes == 2 || lanes == 4) || info_len > 54 || !gaen_sha_lockstep_supported()) return -1;
#if GAEN_HAVE_X86
    gaen_hkdf16_shani(lanes, ikm, stride, n, info, info_len, out);
    return 0;
#elif GAEN_HAVE_ARMV8
    gaen_hkdf16_armv8(lanes, ikm, stride, n, info, info_len, out);
    return 0;
#else
    (void)ikm; (void)stride; (void)n; (void)info; (void)out;
    return -1;
#endif
}
