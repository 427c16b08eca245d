// HKDF-SHA256 with a 16-byte IKM, no salt and L = 16 (GAEN's RPIK and AEMK) on SHA-NI, for
// several keys in lockstep.
//
// One key is six SHA-256 compressions, each a chain of 32 dependent SHA256RNDS2: alone, the
// core waits on that latency. Running 2 or 4 keys' compressions interleaved fills it (the
// keys are independent). The HKDF steps, in SHA-256 message words (a digest's words are the
// next block's first words as they are, so nothing is byte-swapped between steps):
//   PRK  = HMAC(0^32, IKM):  inner = C(I0, IKM || pad), PRK = C(O0, inner || pad)
//   T(1) = HMAC(PRK, info || 0x01): ipad = C(IV, PRK ^ 0x36..), opad = C(IV, PRK ^ 0x5c..),
//          inner = C(ipad, info || 0x01 || pad), OKM = C(opad, inner || pad)[0..16)
// where I0 and O0 are the zero salt's pad states (computed here once per call).
#include "internal.h"
#if GAEN_HAVE_X86
#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#define SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};
static const uint32_t IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

/// A SHA-256 state in SHA-NI's layout: abef = (A, B, E, F) from the top lane down, cdgh likewise.
typedef struct { __m128i abef, cdgh; } state;
/// A 64-byte block as message words W0..W15, four per vector, W0 in lane 0.
typedef struct { __m128i w[4]; } block;

static inline SHA_TARGET state from_words(__m128i abcd, __m128i efgh) {
    const __m128i t = _mm_shuffle_epi32(abcd, 0xB1);  // B A D C (lane 0 first)
    const __m128i u = _mm_shuffle_epi32(efgh, 0x1B);  // H G F E
    state s = {_mm_alignr_epi8(t, u, 8), _mm_blend_epi16(u, t, 0xF0)};
    return s;
}

static inline SHA_TARGET void to_words(state s, __m128i *abcd, __m128i *efgh) {
    const __m128i t = _mm_shuffle_epi32(s.abef, 0x1B); // A B E F
    const __m128i u = _mm_shuffle_epi32(s.cdgh, 0xB1); // G H C D
    *abcd = _mm_blend_epi16(t, u, 0xF0);
    *efgh = _mm_alignr_epi8(u, t, 8);
}

/// One compression of each of `n` (state, block) pairs, round group by round group across
/// the lanes. Inlined with a constant n, the lane loops unroll into interleaved code.
static inline __attribute__((always_inline)) SHA_TARGET void compress(const int n, state *s, const block *m) {
    __m128i w[8][4], a[8], c[8];
    for (int l = 0; l < n; l++) {
        a[l] = s[l].abef; c[l] = s[l].cdgh;
        for (int i = 0; i < 4; i++) w[l][i] = m[l].w[i];
    }
    for (int g = 0; g < 16; g++) {
        const __m128i k = _mm_loadu_si128((const __m128i *)(K + 4 * g));
        for (int l = 0; l < n; l++) {
            __m128i *W = w[l];
            if (g >= 4) {
                // W[g] = sigma1 terms (msg2) + W[g-7] (alignr) + sigma0 terms and W[g-16] (msg1).
                const __m128i t = _mm_add_epi32(_mm_sha256msg1_epu32(W[g & 3], W[(g + 1) & 3]),
                                                _mm_alignr_epi8(W[(g + 3) & 3], W[(g + 2) & 3], 4));
                W[g & 3] = _mm_sha256msg2_epu32(t, W[(g + 3) & 3]);
            }
            __m128i x = _mm_add_epi32(W[g & 3], k);
            c[l] = _mm_sha256rnds2_epu32(c[l], a[l], x);
            x = _mm_shuffle_epi32(x, 0x0E);
            a[l] = _mm_sha256rnds2_epu32(a[l], c[l], x);
        }
    }
    for (int l = 0; l < n; l++) {
        s[l].abef = _mm_add_epi32(s[l].abef, a[l]);
        s[l].cdgh = _mm_add_epi32(s[l].cdgh, c[l]);
    }
}

/// Message words of 16 bytes (big-endian, as SHA-256 reads them).
static inline SHA_TARGET __m128i load_be(const uint8_t *p) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    return _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)p), swap);
}

/// The block after a 64-byte pad: `len` message bytes already placed, then 0x80, zeros and
/// the bit length of pad + message.
static inline void pad_bytes(uint8_t b[64], size_t len) {
    memset(b + len, 0, 64 - len);
    b[len] = 0x80;
    const uint64_t bits = (uint64_t)(64 + len) * 8;
    for (int i = 0; i < 8; i++) b[63 - i] = (uint8_t)(bits >> (8 * i));
}

static inline SHA_TARGET block block_of(const uint8_t b[64]) {
    block m = {{load_be(b), load_be(b + 16), load_be(b + 32), load_be(b + 48)}};
    return m;
}

static inline SHA_TARGET state iv_state(void) {
    return from_words(_mm_loadu_si128((const __m128i *)IV), _mm_loadu_si128((const __m128i *)(IV + 4)));
}

static inline __attribute__((always_inline)) SHA_TARGET void hkdf_lanes(const int n, const uint8_t *ikm, size_t stride,
                                                                       const state *i0, const state *o0,
                                                                       const block *infoBlock, uint8_t *out) {
    state s[8];
    block m[8];
    // The tail words of a block that carries one digest (32 bytes) after a pad block, and
    // of one that carries 16 bytes: 0x80, zeros, bit length.
    const __m128i tail80 = _mm_set_epi32(0, 0, 0, (int)0x80000000u);
    const __m128i len768 = _mm_set_epi32((64 + 32) * 8, 0, 0, 0);
    const __m128i len640 = _mm_set_epi32((64 + 16) * 8, 0, 0, 0);
    const __m128i zero = _mm_setzero_si128();
    // PRK inner: C(I0, IKM || pad).
    for (int l = 0; l < n; l++) {
        s[l] = *i0;
        m[l].w[0] = load_be(ikm + (size_t)l * stride);
        m[l].w[1] = tail80; m[l].w[2] = zero; m[l].w[3] = len640;
    }
    compress(n, s, m);
    // PRK = C(O0, inner || pad).
    for (int l = 0; l < n; l++) {
        to_words(s[l], &m[l].w[0], &m[l].w[1]);
        m[l].w[2] = tail80; m[l].w[3] = len768;
        s[l] = *o0;
    }
    compress(n, s, m);
    // HMAC(PRK) pad states: ipad and opad of every lane, 2n independent compressions.
    state p[8];
    block q[8];
    const __m128i x36 = _mm_set1_epi32(0x36363636), x5c = _mm_set1_epi32(0x5c5c5c5c);
    for (int l = 0; l < n; l++) {
        __m128i prk0, prk1;
        to_words(s[l], &prk0, &prk1);
        p[2 * l] = iv_state();
        p[2 * l + 1] = p[2 * l];
        q[2 * l].w[0] = _mm_xor_si128(prk0, x36); q[2 * l].w[1] = _mm_xor_si128(prk1, x36);
        q[2 * l].w[2] = x36; q[2 * l].w[3] = x36;
        q[2 * l + 1].w[0] = _mm_xor_si128(prk0, x5c); q[2 * l + 1].w[1] = _mm_xor_si128(prk1, x5c);
        q[2 * l + 1].w[2] = x5c; q[2 * l + 1].w[3] = x5c;
    }
    compress(2 * n, p, q);
    // T(1) inner: C(ipad, info || 0x01 || pad).
    for (int l = 0; l < n; l++) { s[l] = p[2 * l]; m[l] = *infoBlock; }
    compress(n, s, m);
    // T(1) = C(opad, inner || pad); the OKM is its first 16 bytes.
    for (int l = 0; l < n; l++) {
        to_words(s[l], &m[l].w[0], &m[l].w[1]);
        m[l].w[2] = tail80; m[l].w[3] = len768;
        s[l] = p[2 * l + 1];
    }
    compress(n, s, m);
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    for (int l = 0; l < n; l++) {
        __m128i abcd, efgh;
        to_words(s[l], &abcd, &efgh);
        _mm_storeu_si128((__m128i *)(out + 16 * l), _mm_shuffle_epi8(abcd, swap));
    }
}

static state pads[2];
static pthread_once_t padsOnce = PTHREAD_ONCE_INIT;

static SHA_TARGET void compute_pads(void) {
    uint8_t b[64];
    state p2[2] = {iv_state(), iv_state()};
    block m2[2];
    memset(b, 0x36, 64);
    m2[0] = block_of(b);
    memset(b, 0x5c, 64);
    m2[1] = block_of(b);
    compress(2, p2, m2);
    pads[0] = p2[0];
    pads[1] = p2[1];
}

SHA_TARGET void gaen_hkdf16_shani(unsigned lanes, const uint8_t *ikm, size_t stride, size_t n, const uint8_t *info,
                                  size_t info_len, uint8_t *out) {
    // The zero salt's HMAC pad states: C(IV, 0x36 x 64) and C(IV, 0x5c x 64), computed once.
    pthread_once(&padsOnce, compute_pads);
    uint8_t b[64];
    const state i0 = pads[0], o0 = pads[1];
    memcpy(b, info, info_len);
    b[info_len] = 1;
    pad_bytes(b, info_len + 1);
    const block infoBlock = block_of(b);
    memset(b, 0, sizeof b);

    size_t i = 0;
    if (lanes >= 4)
        for (; i + 4 <= n; i += 4) hkdf_lanes(4, ikm + i * stride, stride, &i0, &o0, &infoBlock, out + 16 * i);
    if (lanes >= 2)
        for (; i + 2 <= n; i += 2) hkdf_lanes(2, ikm + i * stride, stride, &i0, &o0, &infoBlock, out + 16 * i);
    for (; i < n; i++) hkdf_lanes(1, ikm + i * stride, stride, &i0, &o0, &infoBlock, out + 16 * i);
}

#endif
