#!/usr/bin/env bash
# CGaenCrypto's arm64 paths, run the way a board runs them: the C sources built for aarch64
# with a checker (Tests/arm64/crypto_check.c) and OpenSSL's arm64 libcrypto, run under
# qemu-aarch64 on CPU models with and without the crypto extensions, against FIPS-197 / SP
# 800-38A AES vectors, Google's GAEN vectors and OpenSSL EVP on thousands of random keys. The
# same checker also runs natively first (x86-64 paths). Independent of the Swift build; part
# of ./scripts/test.sh. Exits non-zero, naming the run and the mismatch, when a path differs.
#
#   scripts/test-arm64-crypto.sh [KEYS]     (random keys per run, default 3000)
set -euo pipefail
cd "$(dirname "$0")/.."
keys="${1:-3000}"
out=.build/arm64-crypto
mkdir -p "$out"

# --- what it needs (idempotent: installs only what is missing) ---
# qemu-user: runs aarch64 binaries; the arm64 cross libc and libgcc, and an aarch64 linker,
# for clang --target=aarch64-linux-gnu; libssl-dev: libcrypto for the native run.
packages=(qemu-user libc6-dev-arm64-cross libgcc-12-dev-arm64-cross binutils-aarch64-linux-gnu libssl-dev)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ((${#missing[@]})); then
    echo "arm64-crypto: installing ${missing[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
CC="${CC:-clang}"
command -v "$CC" >/dev/null || { echo "arm64-crypto: $CC not found (the Swift toolchain's clang, or apt's clang)" >&2; exit 1; }

# OpenSSL's arm64 libcrypto (the reference, and the portable path a board falls back to),
# unpacked from Debian's libssl-dev:arm64 into a private directory rather than installed:
# installing it needs dpkg's arm64 architecture and the same version as the host's libssl-dev,
# which could upgrade the host's OpenSSL under everything else on the machine. apt reads the
# arm64 package index into a private lists directory for this one download.
cache="${GAEN_ARM64_CACHE:-/var/cache/gaend-arm64}"
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache="${XDG_CACHE_HOME:-$HOME/.cache}/gaend-arm64"
ssl="$cache/root"
# One fetch at a time: two test runs on one machine share this cache.
exec 9>"$cache/.lock"
flock 9
if [ ! -f "$ssl/usr/lib/aarch64-linux-gnu/libcrypto.a" ]; then
    echo "arm64-crypto: fetching libssl-dev:arm64 into $cache" >&2
    mkdir -p "$cache/lists/partial" "$cache/apt-cache/archives/partial" "$cache/debs"
    apt_arm64=(-qq -o "Dir::State::Lists=$cache/lists" -o "Dir::Cache=$cache/apt-cache" -o APT::Architecture=arm64
               -o APT::Architectures::=arm64 -o APT::Sandbox::User=root)
    apt-get "${apt_arm64[@]}" update >/dev/null
    (cd "$cache/debs" && rm -f ./*.deb && apt-get "${apt_arm64[@]}" download libssl-dev:arm64 >/dev/null)
    rm -rf "$ssl" && mkdir -p "$ssl"
    dpkg-deb -x "$cache"/debs/libssl-dev_*_arm64.deb "$ssl"
    rm -rf "$cache/lists" "$cache/apt-cache"
fi
flock -u 9

# --- GAEN's published vectors as name/value lines for the checker ---
fixture=Tests/ENProtocolTests/Fixtures/gaen-crypto-vectors.json
python3 - "$fixture" >"$out/gaen-vectors.txt" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))  # Google's TestVectors.java (v1.2); provenance inside the file
print("tek", v["tek"]); print("rpik", v["rpik"]); print("aemk", v["aemk"])
print("meta", v["ble_metadata"]); print("interval", v["en_interval_number_of_key"])
for a in v["advertised"]:
    print(f"rpi{a['interval_index']}", a["rpi"]); print(f"aem{a['interval_index']}", a["aem"])
PY

# --- build ---
sources=(Tests/arm64/crypto_check.c Sources/CGaenCrypto/*.c)
flags=(-Wall -Wextra -Werror -ISources/CGaenCrypto/include -ISources/CGaenCrypto)
build() { # build NAME LOG ARGS...: the log is shown only when the build fails
    local name=$1 log=$2; shift 2
    "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "arm64-crypto: FAILED to build $name" >&2; exit 1; }
}
build "the native checker" "$out/build-native.log" "$CC" "${flags[@]}" -O2 "${sources[@]}" -lcrypto -lpthread -o "$out/crypto_check-native"
# Static, so qemu needs no arm64 root; --wrap=getauxval lets a run hide HWCAP bits (see below).
# The checker's own sources get -Werror; OpenSSL's static-link notes (dlopen) are not ours.
# -O2 as the release build (make build) compiles C, -O0 as swift build's debug configuration.
for opt in O2 O0; do
    build "the aarch64 checker (-$opt)" "$out/build-aarch64-$opt.log" "$CC" --target=aarch64-linux-gnu "${flags[@]}" -$opt \
        -I"$ssl/usr/include/aarch64-linux-gnu" -I"$ssl/usr/include" "${sources[@]}" \
        "$ssl/usr/lib/aarch64-linux-gnu/libcrypto.a" -static -Wl,--wrap=getauxval -lpthread -o "$out/crypto_check-aarch64-$opt"
done

# --- runs ---
status=0
reference_digest="" reference_label="" runs=0
run() { # run LABEL EXPECT_AES EXPECT_HKDF COMMAND...
    local label=$1 aes=$2 hkdf=$3; shift 3
    runs=$((runs + 1))
    local log="$out/run-$runs.log"
    echo "== $label: expect AES path $aes, HKDF $hkdf"
    if ! "$@" --vectors "$out/gaen-vectors.txt" --keys "$keys" --expect-aes "$aes" --expect-hkdf "$hkdf" | tee "$log"; then
        echo "arm64-crypto: MISMATCH in run '$label' (see above)" >&2
        status=1
    fi
    # Every run feeds the same inputs to OpenSSL: its outputs must be the same bytes on every
    # CPU, with or without the extensions (the fallback path agrees across machines too).
    local digest
    digest=$(sed -n 's/^OpenSSL outputs digest: //p' "$log")
    if [ -z "$reference_digest" ]; then
        reference_digest=$digest reference_label=$label
    elif [ "$digest" != "$reference_digest" ]; then
        echo "arm64-crypto: MISMATCH: OpenSSL's outputs in run '$label' ($digest) differ from run '$reference_label' ($reference_digest)" >&2
        status=1
    fi
}
# The native run's expectation from the kernel's CPU flags (an independent reading of CPUID).
flags_of() { grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n'; }
has() { flags_of | grep -qx "$1"; }
if [ "$(uname -m)" = x86_64 ]; then
    native_aes=none
    has aes && has ssse3 && has sse4_1 && native_aes=aesni
    [ $native_aes = aesni ] && has vaes && has avx2 && native_aes=vaes256
    [ $native_aes = vaes256 ] && has avx512f && has avx512dq && has avx512bw && has avx512vl && native_aes=vaes512
    native_hkdf=openssl; has sha_ni && has ssse3 && has sse4_1 && native_hkdf=lockstep
    run "native x86_64 (this machine's CPU)" "$native_aes" "$native_hkdf" "$out/crypto_check-native"
fi
# HWCAP bits (Linux arch/arm64/include/uapi/asm/hwcap.h): AES 1<<3, PMULL 1<<4, SHA1 1<<5, SHA2 1<<6.
# QEMU's CPU models all have the crypto extensions (cortex-a53/a72 included), so a board whose
# kernel does not report them (the Pi 4's BCM2711: "fp asimd evtstrm crc32 cpuid") is modelled by
# hiding the bits from getauxval, for our dispatch and for OpenSSL's alike.
bin="$out/crypto_check-aarch64-O2"
run "qemu-aarch64 -cpu cortex-a76 (Pi 5: crypto extensions)" armv8 lockstep qemu-aarch64 -cpu cortex-a76 "$bin"
run "qemu-aarch64 -cpu cortex-a76, built -O0" armv8 lockstep qemu-aarch64 -cpu cortex-a76 "$out/crypto_check-aarch64-O0"
run "qemu-aarch64 -cpu cortex-a72, AES/PMULL/SHA1/SHA2 hidden (Pi 4)" none openssl \
    env GAEN_TEST_HWCAP_CLEAR=0x78 qemu-aarch64 -cpu cortex-a72 "$bin"
run "qemu-aarch64 -cpu cortex-a53, SHA2 hidden (AES only)" armv8 openssl \
    env GAEN_TEST_HWCAP_CLEAR=0x40 qemu-aarch64 -cpu cortex-a53 "$bin"
run "qemu-aarch64 -cpu max, AES/PMULL hidden (SHA2 only)" none lockstep \
    env GAEN_TEST_HWCAP_CLEAR=0x18 qemu-aarch64 -cpu max "$bin"
if ((status)); then
    echo "arm64-crypto: FAILED: a CGaenCrypto path or the dispatch differs from OpenSSL/the vectors" >&2
else
    echo "arm64-crypto: every run agreed"
fi
exit $status
