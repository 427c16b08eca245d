// CGaenCrypto's fast paths against OpenSSL EVP (the portable path the matcher falls back to)
// and published vectors, in one C program that runs on the machine it is built for. Built for
// aarch64 and run under qemu-aarch64 by scripts/test-arm64-crypto.sh, so the ARMv8 code runs
// as it will on a board; it also builds and runs natively on x86-64 (the same checks of the
// AES-NI/VAES/SHA-NI paths, which keeps the checker itself honest on known-good code).
//
//   crypto_check --vectors FILE --keys N --expect-aes NAME --expect-hkdf lockstep|openssl
//
// FILE: GAEN's published vectors as "name value" lines (the script writes them from
// Tests/ENProtocolTests/Fixtures/gaen-crypto-vectors.json, Google's TestVectors.java v1.2).
// --expect-*: what the run-time dispatch must choose on this CPU (the script knows which CPU
// qemu models and which HWCAP bits it hides). Prints one line per check group and a closing
// "N passed, N failed" line; exits 1 on any mismatch.
//
// GAEN_TEST_HWCAP_CLEAR (aarch64 builds, hex): AT_HWCAP bits to hide from the whole program
// (CGaenCrypto's dispatch and OpenSSL's own detection alike), through the linker's
// --wrap=getauxval. qemu-user's CPU models all have the crypto extensions, so this is how the
// run stands in for a board whose kernel does not report them (the Pi 4).
#include "gaen_crypto.h"
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__)
#include <sys/auxv.h>
unsigned long __real_getauxval(unsigned long type);
unsigned long __wrap_getauxval(unsigned long type);
unsigned long __wrap_getauxval(unsigned long type) {
    unsigned long v = __real_getauxval(type);
    const char *clear = getenv("GAEN_TEST_HWCAP_CLEAR");
    if (type == AT_HWCAP && clear) v &= ~strtoul(clear, NULL, 16);
    return v;
}
#endif

static long passed, failed;

// SHA-256 over every OpenSSL output of the random-key part, printed at the end: the inputs are
// the same on every run, so the script compares the digests across runs (this CPU's OpenSSL with
// and without the extensions, x86-64's) as well as each fast path with OpenSSL within a run.
static EVP_MD_CTX *digest_ctx;
static void digest(const uint8_t *b, size_t n) {
    if (EVP_DigestUpdate(digest_ctx, b, n) != 1) { fprintf(stderr, "crypto_check: EVP_DigestUpdate failed\n"); exit(2); }
}

static void check(int ok, const char *what) {
    if (ok) { passed++; return; }
    failed++;
    if (failed <= 20) fprintf(stderr, "MISMATCH: %s\n", what);
}

static int unhex(const char *s, uint8_t *out, size_t n) {
    if (strlen(s) != 2 * n) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) return -1;
        out[i] = (uint8_t)v;
    }
    return 0;
}

static void die(const char *msg) {
    fprintf(stderr, "crypto_check: %s\n", msg);
    exit(2);
}

// ---- the reference: OpenSSL EVP, as ENProtocol's portable path calls it ----

static EVP_CIPHER_CTX *ecb_ctx;

static void evp_ecb(const uint8_t key[16], const uint8_t *in, uint8_t *out, size_t blocks) {
    int len = 0;
    if (EVP_EncryptInit_ex(ecb_ctx, EVP_aes_128_ecb(), NULL, key, NULL) != 1) die("EVP_EncryptInit_ex failed");
    EVP_CIPHER_CTX_set_padding(ecb_ctx, 0);
    if (blocks && EVP_EncryptUpdate(ecb_ctx, out, &len, in, (int)(16 * blocks)) != 1) die("EVP_EncryptUpdate failed");
}

static void evp_hkdf16(const uint8_t ikm[16], const uint8_t *info, size_t info_len, uint8_t out[16]) {
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    size_t len = 16;
    if (!c || EVP_PKEY_derive_init(c) != 1 || EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha256()) != 1 ||
        EVP_PKEY_CTX_set1_hkdf_key(c, ikm, 16) != 1 || EVP_PKEY_CTX_add1_hkdf_info(c, info, (int)info_len) != 1 ||
        EVP_PKEY_derive(c, out, &len) != 1 || len != 16)
        die("OpenSSL HKDF failed");
    EVP_PKEY_CTX_free(c);
}

// AES-128-CTR of a few bytes, as the AEM is defined (GAEN crypto spec v1.2: AEM = AES-128-CTR(AEMK, RPI, metadata)).
static void evp_ctr(const uint8_t key[16], const uint8_t iv[16], const uint8_t *in, uint8_t *out, int n) {
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0;
    if (!c || EVP_EncryptInit_ex(c, EVP_aes_128_ctr(), NULL, key, iv) != 1 || EVP_EncryptUpdate(c, out, &len, in, n) != 1)
        die("EVP CTR failed");
    EVP_CIPHER_CTX_free(c);
}

// PaddedData_j = "EN-RPI" || 0x000000000000 || LE32(j) (GAEN crypto spec v1.2).
static void padded(uint32_t j, uint8_t b[16]) {
    memcpy(b, "EN-RPI", 6);
    memset(b + 6, 0, 6);
    for (int i = 0; i < 4; i++) b[12 + i] = (uint8_t)(j >> (8 * i));
}

// ---- deterministic random input (splitmix64), so a failure reproduces ----

static uint64_t rng_state = 0x6761656e61726d36ULL;
static uint64_t next64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static void fill(uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(next64() >> 56);
}

static const char *const names[] = {"none", "aesni", "vaes256", "vaes512", "armv8"};
enum { IMPLS = 5 };

static const uint8_t INFO_RPIK[] = {'E', 'N', '-', 'R', 'P', 'I', 'K'};
static const uint8_t INFO_AEMK[] = {'E', 'N', '-', 'A', 'E', 'M', 'K'};

// ---- checks ----

/// The dispatch chooses what the CPU (as its kernel reports it) has, and refuses the rest.
static void check_dispatch(const char *expectAES, const char *expectHKDF) {
    const unsigned m = gaen_aes_supported();
    const int best = gaen_aes_best(), lock = gaen_sha_lockstep_supported();
    printf("dispatch: supported AES paths:");
    for (int i = 0; i < IMPLS; i++)
        if (m & (1u << i)) printf(" %s", names[i]);
    printf("; best %s; lockstep HKDF %s\n", best >= 0 && best < IMPLS ? names[best] : "?", lock ? "yes" : "no (OpenSSL SHA-256)");
    char msg[160];
    snprintf(msg, sizeof msg, "dispatch chose AES path %s, expected %s", best >= 0 && best < IMPLS ? names[best] : "?", expectAES);
    check(best >= 0 && best < IMPLS && strcmp(names[best], expectAES) == 0, msg);
    snprintf(msg, sizeof msg, "lockstep HKDF %s, expected %s", lock ? "lockstep" : "openssl", expectHKDF);
    check(strcmp(lock ? "lockstep" : "openssl", expectHKDF) == 0, msg);
    check(m & 1u, "GAEN_AES_NONE must always be listed");
    // Every path this CPU lacks is refused, never run (it would fault or, worse, be wrong).
    uint8_t key[16] = {0}, buf[64] = {0};
    for (int i = 0; i <= IMPLS; i++) {
        if (m & (1u << i) && i != GAEN_AES_NONE) continue;
        snprintf(msg, sizeof msg, "unsupported AES path %d was not refused", i);
        check(gaen_aes128_ecb(i, key, buf, buf, 1) == -1 && gaen_derive_rpis(i, key, 0, 1, buf, NULL, 0, NULL) == (size_t)-1, msg);
    }
    if (!lock) check(gaen_hkdf16(1, key, 16, 1, INFO_RPIK, sizeof INFO_RPIK, buf) == -1, "gaen_hkdf16 ran without the SHA extension");
    else check(gaen_hkdf16(3, key, 16, 1, INFO_RPIK, sizeof INFO_RPIK, buf) == -1, "gaen_hkdf16 accepted 3 lanes");
}

/// AES-128 known answers, on EVP and on every supported fast path, in place and not.
static void check_aes_vectors(unsigned m) {
    // FIPS-197 Appendix B (cipher example) and C.1 (AES-128 example vector); NIST SP 800-38A
    // F.1.1 (ECB-AES128.Encrypt, four blocks).
    static const struct { const char *key, *pt, *ct; } kat[] = {
        {"2b7e151628aed2a6abf7158809cf4f3c", "3243f6a8885a308d313198a2e0370734", "3925841d02dc09fbdc118597196a0b32"},
        {"000102030405060708090a0b0c0d0e0f", "00112233445566778899aabbccddeeff", "69c4e0d86a7b0430d8cdb78070b4c55a"},
        {"2b7e151628aed2a6abf7158809cf4f3c",
         "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e5130c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710",
         "3ad77bb40d7a3660a89ecaf32466ef97f5d3d58503b9699de785895a96fdbaaf43b1cd7f598ece23881b00e3ed030688"
         "7b0c785e27e8ad3f8223207104725dd4"},
    };
    long before = passed + failed;
    for (size_t v = 0; v < sizeof kat / sizeof kat[0]; v++) {
        uint8_t key[16], pt[64], ct[64], out[64];
        const size_t blocks = strlen(kat[v].pt) / 32;
        if (unhex(kat[v].key, key, 16) || unhex(kat[v].pt, pt, 16 * blocks) || unhex(kat[v].ct, ct, 16 * blocks)) die("bad KAT");
        char msg[96];
        evp_ecb(key, pt, out, blocks);
        snprintf(msg, sizeof msg, "AES KAT %zu on EVP", v);
        check(memcmp(out, ct, 16 * blocks) == 0, msg);
        for (int i = 1; i < IMPLS; i++) {
            if (!(m & (1u << i))) continue;
            memset(out, 0, sizeof out);
            snprintf(msg, sizeof msg, "AES KAT %zu on %s", v, names[i]);
            check(gaen_aes128_ecb(i, key, pt, out, blocks) == 0 && memcmp(out, ct, 16 * blocks) == 0, msg);
            memcpy(out, pt, 16 * blocks);
            snprintf(msg, sizeof msg, "AES KAT %zu on %s in place", v, names[i]);
            check(gaen_aes128_ecb(i, key, out, out, blocks) == 0 && memcmp(out, ct, 16 * blocks) == 0, msg);
        }
    }
    printf("AES-128 known answers (FIPS-197 App. B, C.1; SP 800-38A F.1.1): %ld checks\n", passed + failed - before);
}

struct gaen_vectors {
    uint8_t tek[16], rpik[16], aemk[16], meta[4], rpi[144][16], aem[144][4];
    uint32_t interval;
    int rpis, aems;
};

static void read_vectors(const char *path, struct gaen_vectors *v) {
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open the vectors file");
    memset(v, 0, sizeof *v);
    char name[32], value[80];
    int have = 0;
    while (fscanf(f, "%31s %79s", name, value) == 2) {
        int i = -1;
        if (!strcmp(name, "tek")) have |= !unhex(value, v->tek, 16);
        else if (!strcmp(name, "rpik")) have |= !unhex(value, v->rpik, 16) << 1;
        else if (!strcmp(name, "aemk")) have |= !unhex(value, v->aemk, 16) << 2;
        else if (!strcmp(name, "meta")) have |= !unhex(value, v->meta, 4) << 3;
        else if (!strcmp(name, "interval")) { v->interval = (uint32_t)strtoul(value, NULL, 10); have |= 16; }
        else if (sscanf(name, "rpi%d", &i) == 1 && i == v->rpis && i < 144 && !unhex(value, v->rpi[i], 16)) v->rpis++;
        else if (sscanf(name, "aem%d", &i) == 1 && i == v->aems && i < 144 && !unhex(value, v->aem[i], 4)) v->aems++;
        else die("bad line in the vectors file");
    }
    fclose(f);
    if (have != 31 || v->rpis == 0 || v->aems != v->rpis) die("vectors file incomplete");
}

/// Google's published GAEN vectors: RPIK and AEMK by HKDF (EVP and lockstep, the vector's TEK
/// in every position of a group of 7 so every lane and the tails see it), the RPIs of the
/// key's 144 intervals and their AEMs.
static void check_gaen_vectors(const struct gaen_vectors *v, unsigned m) {
    long before = passed + failed;
    char msg[128];
    uint8_t out[16];
    evp_hkdf16(v->tek, INFO_RPIK, sizeof INFO_RPIK, out);
    check(memcmp(out, v->rpik, 16) == 0, "RPIK by OpenSSL HKDF");
    evp_hkdf16(v->tek, INFO_AEMK, sizeof INFO_AEMK, out);
    check(memcmp(out, v->aemk, 16) == 0, "AEMK by OpenSSL HKDF");
    if (gaen_sha_lockstep_supported()) {
        for (unsigned lanes = 1; lanes <= 4; lanes *= 2)
            for (int pos = 0; pos < 7; pos++) {
                uint8_t teks[7 * 16], keys[7 * 16];
                for (int i = 0; i < 7; i++) {
                    if (i == pos) memcpy(teks + 16 * i, v->tek, 16);
                    else for (int b = 0; b < 16; b++) teks[16 * i + b] = (uint8_t)(b * 31 + i);
                }
                snprintf(msg, sizeof msg, "RPIK by lockstep HKDF, %u lanes, position %d", lanes, pos);
                check(gaen_hkdf16(lanes, teks, 16, 7, INFO_RPIK, sizeof INFO_RPIK, keys) == 0 && !memcmp(keys + 16 * pos, v->rpik, 16), msg);
                snprintf(msg, sizeof msg, "AEMK by lockstep HKDF, %u lanes, position %d", lanes, pos);
                check(gaen_hkdf16(lanes, teks, 16, 7, INFO_AEMK, sizeof INFO_AEMK, keys) == 0 && !memcmp(keys + 16 * pos, v->aemk, 16), msg);
            }
    }
    // RPIs: EVP over PaddedData, and each fast path's counter-in-registers derivation.
    for (int k = 0; k < v->rpis; k++) {
        uint8_t pd[16];
        padded(v->interval + (uint32_t)k, pd);
        evp_ecb(v->rpik, pd, out, 1);
        snprintf(msg, sizeof msg, "RPI of interval index %d by EVP", k);
        check(memcmp(out, v->rpi[k], 16) == 0, msg);
    }
    for (int i = 1; i < IMPLS; i++) {
        if (!(m & (1u << i))) continue;
        uint8_t rpis[144 * 16];
        const size_t r = gaen_derive_rpis(i, v->rpik, v->interval, (size_t)v->rpis, rpis, NULL, 0, NULL);
        for (int k = 0; k < v->rpis; k++) {
            snprintf(msg, sizeof msg, "RPI of interval index %d on %s", k, names[i]);
            check(r == 0 && memcmp(rpis + 16 * k, v->rpi[k], 16) == 0, msg);
        }
    }
    // AEMs: AES-128-CTR(AEMK, RPI) by EVP, and the first keystream block by each fast path's ECB.
    for (int k = 0; k < v->rpis; k++) {
        uint8_t aem[4];
        evp_ctr(v->aemk, v->rpi[k], v->meta, aem, 4);
        snprintf(msg, sizeof msg, "AEM of interval index %d by EVP CTR", k);
        check(memcmp(aem, v->aem[k], 4) == 0, msg);
        for (int i = 1; i < IMPLS; i++) {
            if (!(m & (1u << i))) continue;
            uint8_t ks[16];
            const int r = gaen_aes128_ecb(i, v->aemk, v->rpi[k], ks, 1);
            for (int b = 0; b < 4; b++) ks[b] ^= v->meta[b];
            snprintf(msg, sizeof msg, "AEM of interval index %d on %s", k, names[i]);
            check(r == 0 && memcmp(ks, v->aem[k], 4) == 0, msg);
        }
    }
    printf("GAEN vectors (TestVectors.java v1.2: RPIK, AEMK, %d RPIs, %d AEMs): %ld checks\n", v->rpis, v->aems,
           passed + failed - before);
}

/// Random keys: 144-block ECB and RPI derivation with the fused first-stage filter on every
/// supported path against EVP (and the portable filter against its definition), and the
/// lockstep HKDF against OpenSSL's, for both infos, in batches with a stride.
static void check_random(long nkeys, unsigned m) {
    long before = passed + failed;
    uint8_t key[16], in[144 * 16], want[144 * 16], got[145 * 16];
    char msg[160];
    enum { BITMAP_WORDS = 1 << 12 };
    static uint64_t bitmap[BITMAP_WORDS];
    for (int i = 0; i < BITMAP_WORDS; i++) bitmap[i] = next64() & next64(); // about a quarter of the bits set
    int fast = 0;
    for (int i = 1; i < IMPLS; i++) fast += (m >> i) & 1;
    for (long n = 0; n < nkeys; n++) {
        fill(key, 16);
        // A full key's 144 blocks, and every count 0..144 over the run (the 4- and 8-wide loops' tails).
        const size_t counts[2] = {144, (size_t)(n % 145)};
        for (int c = 0; c < 2; c++) {
            const size_t blocks = counts[c];
            fill(in, 16 * blocks);
            evp_ecb(key, in, want, blocks);
            digest(want, 16 * blocks);
            for (int i = 1; i < IMPLS; i++) {
                if (!(m & (1u << i))) continue;
                memset(got, 0xEE, sizeof got);
                const int r = gaen_aes128_ecb(i, key, in, got, blocks);
                int tail = 1;
                for (size_t b = 16 * blocks; b < sizeof got; b++) tail &= got[b] == 0xEE;
                snprintf(msg, sizeof msg, "random key %ld, %zu blocks on %s (wrote past the end: %s)", n, blocks, names[i], tail ? "no" : "yes");
                check(r == 0 && memcmp(got, want, 16 * blocks) == 0 && tail, msg);
            }
        }
        // RPIs from this key as an RPIK; some first intervals near the 32-bit wrap.
        const size_t count = n % 3 == 0 ? 144 : (size_t)(n % 145);
        const uint32_t first = n % 7 == 0 ? UINT32_MAX - (uint32_t)(n % 150) : (uint32_t)next64();
        const uint64_t mask = n % 2 == 0 ? (1u << 18) - 1 : 1023;
        for (size_t k = 0; k < count; k++) padded(first + (uint32_t)k, in + 16 * k);
        evp_ecb(key, in, want, count);
        digest(want, 16 * count);
        int32_t reference[145], portable[145 + 16], fused[145 + 16];
        size_t nref = 0;
        for (size_t k = 0; k < count; k++) {
            const uint64_t a = ((uint64_t)want[16 * k + 12] | (uint64_t)want[16 * k + 13] << 8 | (uint64_t)want[16 * k + 14] << 16 |
                                (uint64_t)want[16 * k + 15] << 24) & mask;
            if (bitmap[a >> 6] >> (a & 63) & 1) reference[nref++] = (int32_t)k;
        }
        const size_t np = gaen_first_stage(want, count, bitmap, mask, portable);
        snprintf(msg, sizeof msg, "portable first stage, key %ld", n);
        check(np == nref && memcmp(portable, reference, nref * sizeof(int32_t)) == 0, msg);
        for (int i = 1; i < IMPLS; i++) {
            if (!(m & (1u << i))) continue;
            memset(got, 0xEE, sizeof got);
            const size_t nf = gaen_derive_rpis(i, key, first, count, got, bitmap, mask, fused);
            int tail = 1;
            for (size_t b = 16 * count; b < sizeof got; b++) tail &= got[b] == 0xEE;
            snprintf(msg, sizeof msg, "random RPIK %ld, %zu RPIs from %u on %s", n, count, first, names[i]);
            check(memcmp(got, want, 16 * count) == 0 && tail, msg);
            snprintf(msg, sizeof msg, "random RPIK %ld, fused first stage on %s", n, names[i]);
            check(nf == nref && memcmp(fused, reference, nref * sizeof(int32_t)) == 0, msg);
        }
    }
    // HKDF in batches of 1..37 records of 16 to 40 bytes (the matcher's compact key records,
    // 32 bytes, carry the TEK at their start), every lane count, both infos. OpenSSL's outputs
    // go into the digest on every run, lockstep or not.
    long hkdfKeys = 0;
    enum { MAXSTRIDE = 40, MAXN = 37 };
    uint8_t records[MAXN * MAXSTRIDE], outs[MAXN * 16], refs[2][MAXN * 16];
    for (long done = 0, batch = 0; done < nkeys; batch++) {
        const size_t n = (size_t)(batch % MAXN) + 1, STRIDE = 16 + 8 * (size_t)(batch % 4);
        fill(records, sizeof records);
        for (int which = 0; which < 2; which++) {
            for (size_t k = 0; k < n; k++) evp_hkdf16(records + STRIDE * k, which ? INFO_AEMK : INFO_RPIK, 7, refs[which] + 16 * k);
            digest(refs[which], 16 * n);
        }
        done += (long)n;
        if (!gaen_sha_lockstep_supported()) continue;
        for (unsigned lanes = 1; lanes <= 4; lanes *= 2)
            for (int which = 0; which < 2; which++) {
                memset(outs, 0, sizeof outs);
                const int r = gaen_hkdf16(lanes, records, STRIDE, n, which ? INFO_AEMK : INFO_RPIK, 7, outs);
                for (size_t k = 0; k < n; k++) {
                    snprintf(msg, sizeof msg, "lockstep HKDF (%s), batch of %zu, stride %zu, %u lanes, key %zu", which ? "AEMK" : "RPIK", n,
                             STRIDE, lanes, k);
                    check(r == 0 && memcmp(outs + 16 * k, refs[which] + 16 * k, 16) == 0, msg);
                }
            }
        hkdfKeys += (long)n;
    }
    printf("random: %ld keys x 144 blocks (+ a 0..144-block run each) and %ld RPI sets on %d fast AES path(s); "
           "%ld TEKs through lockstep HKDF x 3 lane counts x 2 infos: %ld checks\n",
           nkeys, nkeys, fast, hkdfKeys, passed + failed - before);
}

int main(int argc, char **argv) {
    const char *vectors = NULL, *expectAES = NULL, *expectHKDF = NULL;
    long nkeys = 3000;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--vectors")) vectors = argv[i + 1];
        else if (!strcmp(argv[i], "--keys")) nkeys = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--expect-aes")) expectAES = argv[i + 1];
        else if (!strcmp(argv[i], "--expect-hkdf")) expectHKDF = argv[i + 1];
        else die("usage: crypto_check --vectors FILE --keys N --expect-aes NAME --expect-hkdf lockstep|openssl");
    }
    if (!vectors || !expectAES || !expectHKDF || nkeys < 1) die("usage: crypto_check --vectors FILE --keys N --expect-aes NAME --expect-hkdf lockstep|openssl");
    ecb_ctx = EVP_CIPHER_CTX_new();
    if (!ecb_ctx) die("EVP_CIPHER_CTX_new failed");
    struct gaen_vectors v;
    read_vectors(vectors, &v);

    check_dispatch(expectAES, expectHKDF);
    const unsigned m = gaen_aes_supported();
    check_aes_vectors(m);
    check_gaen_vectors(&v, m);
    if (!(digest_ctx = EVP_MD_CTX_new()) || EVP_DigestInit_ex(digest_ctx, EVP_sha256(), NULL) != 1) die("EVP digest failed");
    check_random(nkeys, m);
    uint8_t md[32];
    if (EVP_DigestFinal_ex(digest_ctx, md, NULL) != 1) die("EVP digest failed");
    EVP_MD_CTX_free(digest_ctx);
    printf("OpenSSL outputs digest:");
    for (int i = 0; i < 32; i++) printf("%s%02x", i ? "" : " ", md[i]);
    printf("\n");

    EVP_CIPHER_CTX_free(ecb_ctx);
    printf("%ld passed, %ld failed\n", passed, failed);
    return failed ? 1 : 0;
}
