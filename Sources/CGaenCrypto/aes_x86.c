// AES-128 on x86-64: AES-NI (1 block per instruction), VAES on ymm (2) and zmm (4). Each
// function carries its own target attribute, so the file builds for any x86-64 and the
// dispatcher only calls what CPUID reported.
#include "internal.h"
#if GAEN_HAVE_X86
#include <immintrin.h>
#include <string.h>

#define AESNI_TARGET __attribute__((target("aes,sse4.1,ssse3")))
#define VAES256_TARGET __attribute__((target("aes,sse4.1,ssse3,avx,avx2,vaes")))
#define VAES512_TARGET __attribute__((target("aes,sse4.1,ssse3,avx,avx2,avx512f,avx512dq,avx512bw,avx512vl,vaes,popcnt")))

// "EN-RPI" 0x000000000000 as the first three little-endian words of PaddedData; the fourth is j.
#define PAD0 0x522D4E45
#define PAD1 0x00004950

static inline AESNI_TARGET __m128i expand_step(__m128i key, __m128i assist) {
    assist = _mm_shuffle_epi32(assist, 0xff);
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    key = _mm_xor_si128(key, _mm_slli_si128(key, 4));
    return _mm_xor_si128(key, assist);
}

// FIPS-197 key expansion for AES-128 (the round constants are the assist's immediates).
static inline AESNI_TARGET void expand_key(const uint8_t key[16], __m128i rk[11]) {
    rk[0] = _mm_loadu_si128((const __m128i *)key);
#define STEP(i, rcon) rk[i] = expand_step(rk[i - 1], _mm_aeskeygenassist_si128(rk[i - 1], rcon))
    STEP(1, 0x01); STEP(2, 0x02); STEP(3, 0x04); STEP(4, 0x08); STEP(5, 0x10);
    STEP(6, 0x20); STEP(7, 0x40); STEP(8, 0x80); STEP(9, 0x1b); STEP(10, 0x36);
#undef STEP
}

static inline AESNI_TARGET __m128i enc1(__m128i x, const __m128i rk[11]) {
    x = _mm_xor_si128(x, rk[0]);
    for (int r = 1; r < 10; r++) x = _mm_aesenc_si128(x, rk[r]);
    return _mm_aesenclast_si128(x, rk[10]);
}

// Eight independent blocks at a time: AESENC's latency is several cycles, its throughput one or two a cycle.
static inline AESNI_TARGET void enc8(__m128i x[8], const __m128i rk[11]) {
    for (int i = 0; i < 8; i++) x[i] = _mm_xor_si128(x[i], rk[0]);
    for (int r = 1; r < 10; r++)
        for (int i = 0; i < 8; i++) x[i] = _mm_aesenc_si128(x[i], rk[r]);
    for (int i = 0; i < 8; i++) x[i] = _mm_aesenclast_si128(x[i], rk[10]);
}

AESNI_TARGET void gaen_ecb_aesni(const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks) {
    __m128i rk[11];
    expand_key(key, rk);
    size_t b = 0;
    for (; b + 8 <= blocks; b += 8) {
        __m128i x[8];
        for (int i = 0; i < 8; i++) x[i] = _mm_loadu_si128((const __m128i *)(in + 16 * (b + i)));
        enc8(x, rk);
        for (int i = 0; i < 8; i++) _mm_storeu_si128((__m128i *)(out + 16 * (b + i)), x[i]);
    }
    for (; b < blocks; b++)
        _mm_storeu_si128((__m128i *)(out + 16 * b), enc1(_mm_loadu_si128((const __m128i *)(in + 16 * b)), rk));
}

AESNI_TARGET void gaen_rpis_aesni(const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out) {
    __m128i rk[11];
    expand_key(rpik, rk);
    size_t b = 0;
    for (; b + 8 <= count; b += 8) {
        __m128i x[8];
        for (int i = 0; i < 8; i++) x[i] = _mm_set_epi32((int)(first + (uint32_t)(b + i)), 0, PAD1, PAD0);
        enc8(x, rk);
        for (int i = 0; i < 8; i++) _mm_storeu_si128((__m128i *)(out + 16 * (b + i)), x[i]);
    }
    for (; b < count; b++)
        _mm_storeu_si128((__m128i *)(out + 16 * b), enc1(_mm_set_epi32((int)(first + (uint32_t)b), 0, PAD1, PAD0), rk));
}

// ---- VAES, 256-bit: two blocks per vector, eight vectors in flight.

static inline VAES256_TARGET void enc8y(__m256i x[8], const __m256i rk[11]) {
    for (int i = 0; i < 8; i++) x[i] = _mm256_xor_si256(x[i], rk[0]);
    for (int r = 1; r < 10; r++)
        for (int i = 0; i < 8; i++) x[i] = _mm256_aesenc_epi128(x[i], rk[r]);
    for (int i = 0; i < 8; i++) x[i] = _mm256_aesenclast_epi128(x[i], rk[10]);
}

VAES256_TARGET void gaen_ecb_vaes256(const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks) {
    __m128i k[11];
    __m256i rk[11];
    expand_key(key, k);
    for (int r = 0; r < 11; r++) rk[r] = _mm256_broadcastsi128_si256(k[r]);
    size_t b = 0;
    for (; b + 16 <= blocks; b += 16) {
        __m256i x[8];
        for (int i = 0; i < 8; i++) x[i] = _mm256_loadu_si256((const __m256i *)(in + 16 * (b + 2 * i)));
        enc8y(x, rk);
        for (int i = 0; i < 8; i++) _mm256_storeu_si256((__m256i *)(out + 16 * (b + 2 * i)), x[i]);
    }
    for (; b < blocks; b++)
        _mm_storeu_si128((__m128i *)(out + 16 * b), enc1(_mm_loadu_si128((const __m128i *)(in + 16 * b)), k));
}

VAES256_TARGET void gaen_rpis_vaes256(const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out) {
    __m128i k[11];
    __m256i rk[11];
    expand_key(rpik, k);
    for (int r = 0; r < 11; r++) rk[r] = _mm256_broadcastsi128_si256(k[r]);
    // Lane pair (j, j + 1) as one vector; the counter lives in word 3 of each lane.
    __m256i ctr = _mm256_set_epi32((int)(first + 1), 0, PAD1, PAD0, (int)first, 0, PAD1, PAD0);
    const __m256i two = _mm256_set_epi32(2, 0, 0, 0, 2, 0, 0, 0);
    size_t b = 0;
    for (; b + 16 <= count; b += 16) {
        __m256i x[8];
        for (int i = 0; i < 8; i++) { x[i] = ctr; ctr = _mm256_add_epi32(ctr, two); }
        enc8y(x, rk);
        for (int i = 0; i < 8; i++) _mm256_storeu_si256((__m256i *)(out + 16 * (b + 2 * i)), x[i]);
    }
    for (; b < count; b++)
        _mm_storeu_si128((__m128i *)(out + 16 * b), enc1(_mm_set_epi32((int)(first + (uint32_t)b), 0, PAD1, PAD0), k));
}

// ---- VAES, 512-bit: four blocks per vector; 144 RPIs are three rounds of twelve vectors.

static inline VAES512_TARGET void broadcast_keys(const uint8_t key[16], __m512i rk[11]) {
    __m128i k[11];
    expand_key(key, k);
    for (int r = 0; r < 11; r++) rk[r] = _mm512_broadcast_i32x4(k[r]);
}

#define ENC_N(N)                                                                                   \
    static inline VAES512_TARGET void enc##N##z(__m512i x[N], const __m512i rk[11]) {              \
        for (int i = 0; i < N; i++) x[i] = _mm512_xor_si512(x[i], rk[0]);                          \
        for (int r = 1; r < 10; r++)                                                               \
            for (int i = 0; i < N; i++) x[i] = _mm512_aesenc_epi128(x[i], rk[r]);                  \
        for (int i = 0; i < N; i++) x[i] = _mm512_aesenclast_epi128(x[i], rk[10]);                 \
    }
ENC_N(12)
ENC_N(4)
#undef ENC_N

VAES512_TARGET void gaen_ecb_vaes512(const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks) {
    __m512i rk[11];
    broadcast_keys(key, rk);
    size_t b = 0;
    for (; b + 48 <= blocks; b += 48) {
        __m512i x[12];
        for (int i = 0; i < 12; i++) x[i] = _mm512_loadu_si512((const void *)(in + 16 * (b + 4 * i)));
        enc12z(x, rk);
        for (int i = 0; i < 12; i++) _mm512_storeu_si512((void *)(out + 16 * (b + 4 * i)), x[i]);
    }
    for (; b < blocks; b += 16) {
        // Up to 16 blocks; vectors past the end are masked off on load and store.
        const size_t left = blocks - b;
        __m512i x[4];
        for (int i = 0; i < 4; i++) {
            const size_t have = left > 4u * i ? (left - 4u * i > 4 ? 4 : left - 4u * i) : 0;
            const __mmask16 m = (__mmask16)((1u << (4 * have)) - 1);
            x[i] = _mm512_maskz_loadu_epi32(m, in + 16 * (b + 4 * i));
        }
        enc4z(x, rk);
        for (int i = 0; i < 4; i++) {
            const size_t have = left > 4u * i ? (left - 4u * i > 4 ? 4 : left - 4u * i) : 0;
            const __mmask16 m = (__mmask16)((1u << (4 * have)) - 1);
            _mm512_mask_storeu_epi32(out + 16 * (b + 4 * i), m, x[i]);
        }
    }
}

// First-stage filter on 16 fresh RPIs in registers: word 3 of each block, masked, picks a bit
// of the bitmap (gathered as 64-bit words); the passing block indices are compressed into
// `candidates` (in a register, then one plain store: compress-to-memory is slow on some cores).
static inline VAES512_TARGET size_t filter16(const __m512i x[4], uint32_t base, unsigned valid, const uint64_t *bitmap,
                                              __m512i mask, int32_t *candidates) {
    const __m512i pick = _mm512_set_epi32(31, 27, 23, 19, 15, 11, 7, 3, 31, 27, 23, 19, 15, 11, 7, 3);
    const __m512i lo = _mm512_permutex2var_epi32(x[0], pick, x[1]); // blocks 0-7 in words 0-7
    const __m512i hi = _mm512_permutex2var_epi32(x[2], pick, x[3]); // blocks 8-15 in words 0-7
    const __m512i a = _mm512_and_si512(_mm512_inserti64x4(lo, _mm512_castsi512_si256(hi), 1), mask);
    // On a little-endian machine bit a of the 64-bit-word bitmap is bit (a & 31) of 32-bit
    // word a >> 5: one 16-lane gather instead of two 8-lane ones.
    const __m512i word = _mm512_srli_epi32(a, 5);
    const __m512i bit = _mm512_and_si512(a, _mm512_set1_epi32(31));
    const __m512i w = _mm512_i32gather_epi32(word, (const void *)bitmap, 4);
    const __mmask16 m = (__mmask16)(_mm512_test_epi32_mask(_mm512_srlv_epi32(w, bit), _mm512_set1_epi32(1)) & valid);
    const __m512i ids = _mm512_add_epi32(_mm512_set1_epi32((int)base),
                                         _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
    _mm512_storeu_si512((void *)candidates, _mm512_maskz_compress_epi32(m, ids));
    return (size_t)__builtin_popcount(m);
}

VAES512_TARGET size_t gaen_rpis_vaes512(const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out,
                                        const uint64_t *bitmap, uint32_t mask, int32_t *candidates) {
    __m512i rk[11];
    broadcast_keys(rpik, rk);
    const __m512i vmask = _mm512_set1_epi32((int)mask);
    __m512i ctr = _mm512_set_epi32((int)(first + 3), 0, PAD1, PAD0, (int)(first + 2), 0, PAD1, PAD0,
                                   (int)(first + 1), 0, PAD1, PAD0, (int)first, 0, PAD1, PAD0);
    const __m512i four = _mm512_set_epi32(4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0);
    size_t n = 0, b = 0;
    for (; b + 48 <= count; b += 48) {
        __m512i x[12];
        for (int i = 0; i < 12; i++) { x[i] = ctr; ctr = _mm512_add_epi32(ctr, four); }
        enc12z(x, rk);
        for (int i = 0; i < 12; i++) _mm512_storeu_si512((void *)(out + 16 * (b + 4 * i)), x[i]);
        if (bitmap)
            for (int g = 0; g < 3; g++) n += filter16(x + 4 * g, (uint32_t)(b + 16 * g), 0xffff, bitmap, vmask, candidates + n);
    }
    for (; b < count; b += 16) {
        const size_t left = count - b;
        __m512i x[4];
        for (int i = 0; i < 4; i++) { x[i] = ctr; ctr = _mm512_add_epi32(ctr, four); }
        enc4z(x, rk);
        for (int i = 0; i < 4; i++) {
            const size_t have = left > 4u * i ? (left - 4u * i > 4 ? 4 : left - 4u * i) : 0;
            _mm512_mask_storeu_epi32(out + 16 * (b + 4 * i), (__mmask16)((1u << (4 * have)) - 1), x[i]);
        }
        if (bitmap) {
            const unsigned valid = left >= 16 ? 0xffffu : (1u << left) - 1;
            n += filter16(x, (uint32_t)b, valid, bitmap, vmask, candidates + n);
        }
    }
    return n;
}

#endif
