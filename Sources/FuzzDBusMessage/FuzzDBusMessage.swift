// Fuzz target for the D-Bus message decoder: any bytes libdbus accepts as a message are
// decoded within DBusLimits, as a hostile caller's message would be.
import DBusCore
import Foundation
import FuzzSupport

/// Tight limits so the fuzzer reaches them with small inputs.
let limits = DBusLimits(maxDepth: 8, maxArrayElements: 64, maxStringBytes: 256, maxByteArrayBytes: 256, maxValues: 512)

/// A decode either throws a specific error or yields values that, sent again, encode to the
/// same bytes and decode to the same body (compared as bytes: NaN doubles are never ==).
func fuzzOne(_ data: Data) {
    guard let m = try? BusMessage(marshalled: data, limits: limits) else { return }
    var carrier = BusMessage.signal(path: "/f", interface: "f.f", member: "F", body: m.body)
    carrier.serial = 1
    let first: Data
    do {
        first = try carrier.marshalled()
    } catch {
        fatalError("a decoded body cannot be encoded again: \(error)")
    }
    guard let again = try? BusMessage(marshalled: first, limits: limits) else {
        fatalError("a re-encoded body does not decode")
    }
    carrier.body = again.body
    guard (try? carrier.marshalled()) == first else { fatalError("re-encoding changed the bytes") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDBusMessage(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { FuzzEntry.run(data, size, fuzzOne) }

// Under -DFUZZING (tools/fuzz/run.sh) libFuzzer's own main() calls LLVMFuzzerTestOneInput and an
// entry point of ours would collide with it; only the ordinary build gets one, the corpus replayer.
#if !FUZZING
@main struct FuzzDBusMessageMain { static func main() { FuzzEntry.main(name: "FuzzDBusMessage", fuzzDBusMessage) } }
#endif
