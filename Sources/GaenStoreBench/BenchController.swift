import ENProtocol
import Foundation
import HCIHost
import HCIProtocol
import Synchronization

/// An in-process controller for `schedule-idle`: it answers every command as a healthy
/// controller would (bring-up facts, success for the rest, LE Set Random Address refused
/// while scanning or advertising as Core Vol 4 Part E 7.8.4 allows) and, when scanning is
/// switched on, delivers `reportsPerScan` GAEN reports at once, so that the benchmark runs the
/// radio owner and the effects gaend runs, with the HCI encoding and decoding on both sides,
/// and only the radio itself left out.
final class BenchController: HCITransport, HCITransportConnector, @unchecked Sendable {
    let packets: AsyncThrowingStream<H4Packet, any Error>
    private let sink: AsyncThrowingStream<H4Packet, any Error>.Continuation
    /// What the controller is doing, changed by the commands the host sends.
    private struct Link {
        var scanning = false
        var advertising = false
        var refused = 0
    }
    private let link = Mutex(Link())
    private let report: [UInt8]
    let reportsPerScan: Int
    /// LE Set Random Address commands refused while scanning or advertising.
    var refused: Int { link.withLock { $0.refused } }

    init(reportsPerScan: Int) throws {
        self.reportsPerScan = reportsPerScan
        (packets, sink) = AsyncThrowingStream.makeStream(of: H4Packet.self, throwing: (any Error).self)
        var random = SecureRandom()
        let tek = try TemporaryExposureKey(bytes: try random.bytes(16))
        let schedule = try GAENKeySchedule()
        let rpi = try schedule.rollingProximityIdentifier(for: tek, interval: ENIntervalNumber(2_700_000))
        let aem = try GAENKeySchedule.associatedEncryptedMetadata(.v1_0(txPower: -20), rpi: rpi, aemk: schedule.associatedEncryptedMetadataKey(for: tek))
        report = [UInt8](ExposureNotificationAdvertisement(rpi: rpi, aem: aem).advertisingData)
    }

    var description: String { "bench" }
    func connect() async throws -> any HCITransport { self }
    func close() {}

    func send(_ packet: H4Packet) throws {
        let command = try HCICommandPacket(packet)
        let op = command.opcode
        var status = HCIStatusCode.success
        var returned: [UInt8] = []
        var startReports = false
        link.withLock { link in
            switch op {
            case HCIReadLocalVersionInformation.opcode:
                returned = HCIReadLocalVersionInformation.encodeReturnParameters(.init(hciVersion: 0x0c, hciSubversion: 0, lmpVersion: 0x0c,
                                                                                       companyIdentifier: 0xFFFF, lmpSubversion: 0))
            case HCIReadLocalSupportedCommands.opcode: returned = [UInt8](repeating: 0xFF, count: 64)
            case HCIReadLocalSupportedFeatures.opcode: returned = HCIReadLocalSupportedFeatures.encodeReturnParameters(.leSupportedController)
            case HCILEReadLocalSupportedFeatures.opcode: returned = HCILEReadLocalSupportedFeatures.encodeReturnParameters([])
            case HCIReadBDAddr.opcode: returned = [1, 2, 3, 4, 5, 6]
            case HCILESetRandomAddress.opcode where link.scanning || link.advertising:
                status = .commandDisallowed
                link.refused += 1
            case HCILESetScanEnable.opcode:
                let enable = (try? HCILESetScanEnable(parameters: command.parameters[...]))?.enabled ?? false
                if !enable && !link.scanning { status = .commandDisallowed } // as a BCM43455
                startReports = enable && !link.scanning
                link.scanning = enable
            case HCILESetAdvertisingEnable.opcode:
                link.advertising = (try? HCILESetAdvertisingEnable(parameters: command.parameters[...]))?.enabled ?? false
            default: break
            }
        }
        sink.yield(HCIEvent.commandComplete(.init(numHCICommandPackets: 1, opcode: op,
                                                  returnParameters: [status.rawValue] + (status == .success ? returned : []))).packet)
        if startReports {
            let address = BDAddress(littleEndian: [9, 8, 7, 6, 5, 0x3A])
            for _ in 0..<reportsPerScan {
                sink.yield(HCIEvent.leMeta(.advertisingReport(HCILEAdvertisingReportEvent(reports: [
                    .init(eventType: .advNonconnInd, addressType: .random, address: address, data: report, rssi: -60)]))).packet)
            }
        }
    }
}
