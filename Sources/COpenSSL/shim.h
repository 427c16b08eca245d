// Umbrella header for the parts of OpenSSL libcrypto that ENProtocol uses.
#ifndef GAEND_COPENSSL_SHIM_H
#define GAEND_COPENSSL_SHIM_H
// The low-level SHA-256 API is deprecated in OpenSSL 3 but is the only allocation-free way to
// reuse precomputed HMAC pad states, which HKDF for a million keys a second needs.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#endif
