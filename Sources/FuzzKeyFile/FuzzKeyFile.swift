import ENProtocol
import Foundation
import FuzzSupport

// Fuzz target for the key-file reader (ZIP layer, header, protobuf walk, key validation,
// signature checks, batch decoding) on arbitrary bytes, and for the fast key decoder against
// swift-protobuf (the input as one key message, and every key of a file that parses).
//
// Built with `-sanitize=fuzzer -DFUZZING` (tools/fuzz/run.sh) FuzzSupport hands control to
// libFuzzer, which calls `LLVMFuzzerTestOneInput`; in a normal build the target replays the
// files given as arguments, so it always links and a crash input can be rerun directly.

/// The signed sample's public key, so that inputs derived from the sample reach the
/// signature check.
let trust: KeyExportTrustSet = {
    var t = KeyExportTrustSet()
    let pem = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEml59itec9qzwVojreLXdPNRsUWzf
        YHc1cKvIIi6/H56AJS/kZEYQnfDpxrgyGhdAm+pNN2GAJ3XdnQZ1Sk4amg==
        -----END PUBLIC KEY-----
        """
    t.add(keyId: "some_id", key: try! P256PublicKey(pem: pem))
    return t
}()

/// Small limits keep each run fast and let the fuzzer reach the limit checks.
let limits = KeyExportLimits(maxFileSize: 1 << 20, maxExportSize: 1 << 20, maxSignatureFileSize: 4 << 10)

/// Parses `data`; any input must either be rejected with a KeyExportError or yield a file
/// whose invariants hold. A trap or a sanitizer report is a finding.
func fuzzOne(_ data: Data) {
    // The input as one encoded key: the fast key decoder must decline it or agree with
    // swift-protobuf (the reader of record).
    precondition(KeyDecoderCheck.agree(data), "fast key decoder disagrees with swift-protobuf")
    let file: KeyExportFile
    do {
        file = try KeyExportFile(parsing: data, limits: limits)
    } catch is KeyExportError {
        return
    } catch {
        fatalError("reader threw something other than KeyExportError: \(error)")
    }
    precondition(file.exportBin.count <= limits.maxExportSize)
    precondition(KeyDecoderCheck.agreeOnEveryKey(of: file), "fast key decoder disagrees with swift-protobuf on a key of the file")
    _ = file.verify(against: trust)
    _ = try? file.requireTrustedSignature(trust)
    // Batches must yield exactly the keys the validating pass counted, each valid.
    var keys = 0, revised = 0
    for batch in file.keyBatches(size: 7) {
        precondition(!batch.isEmpty && batch.count <= 7)
        for k in batch { precondition((1...144).contains(k.rollingPeriod) && k.key.bytes.count == 16) }
        keys += batch.count
    }
    for batch in file.revisedKeyBatches(size: 7) { revised += batch.count }
    precondition(keys == file.keyCount && revised == file.revisedKeyCount, "batches disagree with the validating pass")
    // Independent encoded batches must decode to the same keys, batch by batch.
    let encoded = file.encodedKeyBatches(size: 5)
    precondition(encoded.reduce(0) { $0 + $1.count } == file.keyCount)
    for b in encoded { precondition(b.decode().count == b.count, "encoded batch decodes to another count") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeyFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { FuzzEntry.run(data, size, fuzzOne) }

// Under -DFUZZING (tools/fuzz/run.sh) libFuzzer's own main() calls LLVMFuzzerTestOneInput and an
// entry point of ours would collide with it; only the ordinary build gets one, the corpus replayer.
#if !FUZZING
@main struct FuzzKeyFileMain { static func main() { FuzzEntry.main(name: "FuzzKeyFile", fuzzKeyFile) } }
#endif
