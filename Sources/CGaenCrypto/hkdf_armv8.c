// HKDF-SHA256 with a 16-byte IKM, no salt and L = 16 (GAEN's RPIK and AEMK) on the ARMv8 SHA2
// extension (SHA256H/SHA256H2/SHA256SU0/SU1), for several keys in lockstep: the arm64 twin of
// hkdf_x86.c, with the same six compressions per key (see there for the HKDF steps in
// message words). Each SHA256H is a multi-cycle operation whose result the next one needs, so
// one key alone leaves the unit waiting; 2 or 4 independent keys interleaved fill it.
//
// ARM keeps the state in natural order (lane 0 = A in the ABCD vector, E in EFGH), so a
// digest's words go into the next block as they are, without the shuffles SHA-NI needs.
// Built and run on the development machine only under qemu-aarch64 (scripts/test-arm64-crypto.sh),
// against OpenSSL's HKDF and Google's published vectors.
#include "internal.h"
#if GAEN_HAVE_ARMV8
#include <arm_neon.h>
#include <pthread.h>
#include <string.h>

#define SHA2_TARGET __attribute__((target("sha2")))

// SHA-256 round constants (FIPS 180-4, section 4.2.2).
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
// Initial hash value (FIPS 180-4, section 5.3.3).
static const uint32_t IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

typedef struct { uint32x4_t abcd, efgh; } state;
/// A 64-byte block as message words W0..W15, four per vector, W0 in lane 0.
typedef struct { uint32x4_t w[4]; } block;

/// One compression of each of `n` (state, block) pairs, four rounds at a time across the
/// lanes. Inlined with a constant n, the lane loops unroll into interleaved code.
static inline __attribute__((always_inline)) SHA2_TARGET void compress(const int n, state *s, const block *m) {
    uint32x4_t w[8][4], a[8], e[8];
    for (int l = 0; l < n; l++) {
        a[l] = s[l].abcd; e[l] = s[l].efgh;
        for (int i = 0; i < 4; i++) w[l][i] = m[l].w[i];
    }
    for (int g = 0; g < 16; g++) {
        const uint32x4_t k = vld1q_u32(K + 4 * g);
        for (int l = 0; l < n; l++) {
            uint32x4_t *W = w[l];
            // Words 4g..4g+3 from the four vectors before them (the oldest is the one replaced).
            if (g >= 4) W[g & 3] = vsha256su1q_u32(vsha256su0q_u32(W[g & 3], W[(g + 1) & 3]), W[(g + 2) & 3], W[(g + 3) & 3]);
            const uint32x4_t wk = vaddq_u32(W[g & 3], k);
            const uint32x4_t a0 = a[l];
            a[l] = vsha256hq_u32(a[l], e[l], wk);
            e[l] = vsha256h2q_u32(e[l], a0, wk);
        }
    }
    for (int l = 0; l < n; l++) {
        s[l].abcd = vaddq_u32(s[l].abcd, a[l]);
        s[l].efgh = vaddq_u32(s[l].efgh, e[l]);
    }
}

/// Message words of 16 bytes (big-endian, as SHA-256 reads them).
static inline SHA2_TARGET uint32x4_t load_be(const uint8_t *p) { return vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p))); }

static inline SHA2_TARGET block block_of(const uint8_t b[64]) {
    block m = {{load_be(b), load_be(b + 16), load_be(b + 32), load_be(b + 48)}};
    return m;
}

/// The block after a 64-byte pad: `len` message bytes already placed, then 0x80, zeros and
/// the bit length of pad + message.
static inline void pad_bytes(uint8_t b[64], size_t len) {
    memset(b + len, 0, 64 - len);
    b[len] = 0x80;
    const uint64_t bits = (uint64_t)(64 + len) * 8;
    for (int i = 0; i < 8; i++) b[63 - i] = (uint8_t)(bits >> (8 * i));
}

static inline SHA2_TARGET state iv_state(void) {
    state s = {vld1q_u32(IV), vld1q_u32(IV + 4)};
    return s;
}

static inline __attribute__((always_inline)) SHA2_TARGET void hkdf_lanes(const int n, const uint8_t *ikm, size_t stride,
                                                                        const state *i0, const state *o0,
                                                                        const block *infoBlock, uint8_t *out) {
    state s[4];
    block m[4];
    // W8 = 0x80 then W15 = bit length, for a block carrying one digest (32 bytes) after a pad
    // block; W4 = 0x80 and W15 for one carrying 16 bytes.
    const uint32_t tail80w[4] = {0x80000000u, 0, 0, 0}, len768w[4] = {0, 0, 0, (64 + 32) * 8},
                   len640w[4] = {0, 0, 0, (64 + 16) * 8};
    const uint32x4_t tail80 = vld1q_u32(tail80w), len768 = vld1q_u32(len768w), len640 = vld1q_u32(len640w);
    const uint32x4_t zero = vdupq_n_u32(0);
    // PRK inner: C(I0, IKM || pad).
    for (int l = 0; l < n; l++) {
        s[l] = *i0;
        m[l].w[0] = load_be(ikm + (size_t)l * stride);
        m[l].w[1] = tail80; m[l].w[2] = zero; m[l].w[3] = len640;
    }
    compress(n, s, m);
    // PRK = C(O0, inner || pad).
    for (int l = 0; l < n; l++) {
        m[l].w[0] = s[l].abcd; m[l].w[1] = s[l].efgh;
        m[l].w[2] = tail80; m[l].w[3] = len768;
        s[l] = *o0;
    }
    compress(n, s, m);
    // HMAC(PRK) pad states: ipad and opad of every lane, 2n independent compressions. PRK is
    // 32 bytes, so the HMAC key block is PRK then 32 zero bytes, XORed with the pad byte.
    state p[8];
    block q[8];
    const uint32x4_t x36 = vdupq_n_u32(0x36363636), x5c = vdupq_n_u32(0x5c5c5c5c);
    for (int l = 0; l < n; l++) {
        p[2 * l] = iv_state();
        p[2 * l + 1] = p[2 * l];
        q[2 * l].w[0] = veorq_u32(s[l].abcd, x36); q[2 * l].w[1] = veorq_u32(s[l].efgh, x36);
        q[2 * l].w[2] = x36; q[2 * l].w[3] = x36;
        q[2 * l + 1].w[0] = veorq_u32(s[l].abcd, x5c); q[2 * l + 1].w[1] = veorq_u32(s[l].efgh, x5c);
        q[2 * l + 1].w[2] = x5c; q[2 * l + 1].w[3] = x5c;
    }
    compress(2 * n, p, q);
    // T(1) inner: C(ipad, info || 0x01 || pad).
    for (int l = 0; l < n; l++) { s[l] = p[2 * l]; m[l] = *infoBlock; }
    compress(n, s, m);
    // T(1) = C(opad, inner || pad); the OKM is its first 16 bytes (A..D, big-endian).
    for (int l = 0; l < n; l++) {
        m[l].w[0] = s[l].abcd; m[l].w[1] = s[l].efgh;
        m[l].w[2] = tail80; m[l].w[3] = len768;
        s[l] = p[2 * l + 1];
    }
    compress(n, s, m);
    for (int l = 0; l < n; l++) vst1q_u8(out + 16 * l, vrev32q_u8(vreinterpretq_u8_u32(s[l].abcd)));
}

static state pads[2];
static pthread_once_t padsOnce = PTHREAD_ONCE_INIT;

// The zero salt's HMAC pad states: HMAC's key is 32 zero bytes, so its key blocks are 0x36 x 64
// and 0x5c x 64, the same for every key: one compression each, once per process.
static SHA2_TARGET void compute_pads(void) {
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

SHA2_TARGET void gaen_hkdf16_armv8(unsigned lanes, const uint8_t *ikm, size_t stride, size_t n, const uint8_t *info,
                                   size_t info_len, uint8_t *out) {
    pthread_once(&padsOnce, compute_pads);
    uint8_t b[64];
    const state i0 = pads[0], o0 = pads[1];
    memcpy(b, info, info_len);
    b[info_len] = 1;
    pad_bytes(b, info_len + 1);
    const block infoBlock = block_of(b);

    size_t i = 0;
    if (lanes >= 4)
        for (; i + 4 <= n; i += 4) hkdf_lanes(4, ikm + i * stride, stride, &i0, &o0, &infoBlock, out + 16 * i);
    if (lanes >= 2)
        for (; i + 2 <= n; i += 2) hkdf_lanes(2, ikm + i * stride, stride, &i0, &o0, &infoBlock, out + 16 * i);
    for (; i < n; i++) hkdf_lanes(1, ikm + i * stride, stride, &i0, &o0, &infoBlock, out + 16 * i);
}

#endif
