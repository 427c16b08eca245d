// Fuzz target for the GAEN advertisement payload parser and the metadata decoder: the bytes a
// scanner hands over from any advertiser in radio range.
import ENProtocol
import Foundation
import FuzzSupport

/// A parse must either throw a specific error or yield a value whose payload, re-built,
/// parses back to the same RPI and AEM (a silent mis-parse becomes a crash the fuzzer reports).
func fuzzOne(_ data: Data) {
    guard let ad = try? ExposureNotificationAdvertisement(advertisingData: data) else { return }
    let rebuilt = ad.advertisingData
    guard rebuilt.count == 31, let again = try? ExposureNotificationAdvertisement(advertisingData: rebuilt), again == ad else {
        fatalError("round trip of a parsed advertisement failed")
    }
    if let m = try? BluetoothMetadata(bytes: ad.aem.bytes), (try? BluetoothMetadata(bytes: m.bytes)) != m {
        fatalError("metadata round trip differs")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAdvertisement(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { FuzzEntry.run(data, size, fuzzOne) }

// Under -DFUZZING (tools/fuzz/run.sh) libFuzzer's own main() calls LLVMFuzzerTestOneInput and an
// entry point of ours would collide with it; only the ordinary build gets one, the corpus replayer.
#if !FUZZING
@main struct FuzzAdvertisementMain { static func main() { FuzzEntry.main(name: "FuzzAdvertisement", fuzzAdvertisement) } }
#endif
