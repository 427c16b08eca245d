// AES-128 on the ARMv8 crypto extensions (arm64 boards such as the Raspberry Pi 4/5's
// Cortex-A72/A76 where the SoC enables them; the Pi 4's BCM2711 does not, and then the
// dispatcher never calls this). The Swift tests cannot run it on the x86-64 development
// machine; scripts/test-arm64-crypto.sh builds it for aarch64 and runs it under qemu-aarch64
// against OpenSSL EVP and the published vectors.
#include "internal.h"
#if GAEN_HAVE_ARMV8
#include <arm_neon.h>
#include <string.h>

#define ARM_TARGET __attribute__((target("aes")))

// SubWord of every 32-bit lane: AESE with a zero round key is SubBytes(ShiftRows(x)); with the
// word repeated in all four columns, ShiftRows moves nothing that differs.
static inline ARM_TARGET uint32_t sub_word(uint32_t w) {
    const uint8x16_t x = vreinterpretq_u8_u32(vdupq_n_u32(w));
    return vgetq_lane_u32(vreinterpretq_u32_u8(vaeseq_u8(x, vdupq_n_u8(0))), 0);
}

static inline ARM_TARGET void expand_key(const uint8_t key[16], uint8x16_t rk[11]) {
    static const uint8_t rcon[10] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1b, 0x36};
    uint32_t w[44];
    memcpy(w, key, 16); // little-endian words: byte 0 of the key in the low byte of w[0]
    for (int i = 4; i < 44; i++) {
        uint32_t t = w[i - 1];
        if (i % 4 == 0) { const uint32_t s = sub_word(t); t = ((s >> 8) | (s << 24)) ^ rcon[i / 4 - 1]; }
        w[i] = w[i - 4] ^ t;
    }
    for (int r = 0; r < 11; r++) rk[r] = vreinterpretq_u8_u32(vld1q_u32(w + 4 * r));
}

static inline ARM_TARGET uint8x16_t enc1(uint8x16_t x, const uint8x16_t rk[11]) {
    for (int r = 0; r < 9; r++) x = vaesmcq_u8(vaeseq_u8(x, rk[r]));
    return veorq_u8(vaeseq_u8(x, rk[9]), rk[10]);
}

static inline ARM_TARGET void enc4(uint8x16_t x[4], const uint8x16_t rk[11]) {
    for (int r = 0; r < 9; r++)
        for (int i = 0; i < 4; i++) x[i] = vaesmcq_u8(vaeseq_u8(x[i], rk[r]));
    for (int i = 0; i < 4; i++) x[i] = veorq_u8(vaeseq_u8(x[i], rk[9]), rk[10]);
}

ARM_TARGET void gaen_ecb_armv8(const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks) {
    uint8x16_t rk[11];
    expand_key(key, rk);
    size_t b = 0;
    for (; b + 4 <= blocks; b += 4) {
        uint8x16_t x[4];
        for (int i = 0; i < 4; i++) x[i] = vld1q_u8(in + 16 * (b + i));
        enc4(x, rk);
        for (int i = 0; i < 4; i++) vst1q_u8(out + 16 * (b + i), x[i]);
    }
    for (; b < blocks; b++) vst1q_u8(out + 16 * b, enc1(vld1q_u8(in + 16 * b), rk));
}

ARM_TARGET void gaen_rpis_armv8(const uint8_t rpik[16], uint32_t first, size_t count, uint8_t *out) {
    uint8x16_t rk[11];
    expand_key(rpik, rk);
    uint32_t pad[4] = {0x522D4E45, 0x00004950, 0, 0}; // "EN-RPI", six zeros, then LE32(j)
    size_t b = 0;
    for (; b + 4 <= count; b += 4) {
        uint8x16_t x[4];
        for (int i = 0; i < 4; i++) {
            pad[3] = first + (uint32_t)(b + i);
            x[i] = vreinterpretq_u8_u32(vld1q_u32(pad));
        }
        enc4(x, rk);
        for (int i = 0; i < 4; i++) vst1q_u8(out + 16 * (b + i), x[i]);
    }
    for (; b < count; b++) {
        pad[3] = first + (uint32_t)b;
        vst1q_u8(out + 16 * b, enc1(vreinterpretq_u8_u32(vld1q_u32(pad)), rk));
    }
}

#endif
