import ENProtocol
import Foundation
import HCIProtocol
import Logging

/// An advertising report with the protocol time (Unix seconds) it arrived at.
public struct TimedReport: Equatable, Sendable {
    public var time: Double
    public var report: LEAdvertisingReport
    public init(time: Double, report: LEAdvertisingReport) {
        self.time = time
        self.report = report
    }
}

/// One finished scan: its start and end and every report it received, also when empty
/// (exposure windows need every scan for secondsSinceLastScan).
public struct ScanRecord: Equatable, Sendable {
    public var start: Double
    public var end: Double
    public var reports: [TimedReport]

    /// The GAEN sightings among the reports: those carrying 0xFD6F service data.
    public var sightings: [Sighting] { reports.compactMap(Sighting.init) }
}

/// A received GAEN advertisement.
public struct Sighting: Equatable, Sendable {
    public var time: Double
    public var address: BDAddress
    public var rpi: RollingProximityIdentifier
    public var aem: AssociatedEncryptedMetadata
    /// dBm as the controller reported it, before any correction.
    public var rssi: Int

    public init?(_ r: TimedReport) {
        guard let rssi = r.report.rssi,
              let ad = try? ExposureNotificationAdvertisement(advertisingData: Data(r.report.data)) else { return nil }
        self.time = r.time
        self.address = r.report.address
        self.rpi = ad.rpi
        self.aem = ad.aem
        self.rssi = Int(rssi)
    }
}

/// Passive scanning with window = interval (all three channels covered all the time) and the
/// duplicate filter off (every advertisement counts for RSSI). It owns the session's report
/// stream: reports that arrive outside a scan are dropped.
public actor Scanner {
    private let session: HCIControllerSession
    private let logger: Logger
    private let now: @Sendable () -> Double
    private var pump: Task<Void, Never>?
    private var collecting: [TimedReport]? = nil
    private var live: AsyncStream<TimedReport>.Continuation?
    /// Reports received since start, for the watchdog and status counters.
    public private(set) var reportsReceived = 0
    public private(set) var scansCompleted = 0

    /// Scan interval and window (equal): 60 ms, a common controller default, in 0.625 ms units.
    static let scanTiming = 96

    /// `now` gives protocol time in Unix seconds (the node's possibly scaled clock).
    public init(session: HCIControllerSession, logger: Logger, now: @escaping @Sendable () -> Double) {
        self.session = session
        self.logger = logger
        self.now = now
    }

    /// Starts consuming the session's advertising reports. Call once.
    public func start() {
        guard pump == nil else { return }
        let reports = session.advertisingReports
        pump = Task { [weak self] in
            for await report in reports {
                guard let self else { return }
                await self.received(report)
            }
        }
    }

    private func received(_ report: LEAdvertisingReport) {
        reportsReceived += 1
        let timed = TimedReport(time: now(), report: report)
        collecting?.append(timed)
        live?.yield(timed)
    }

    /// Runs one scan of `duration` seconds of protocol time, sleeping with `sleep` (which maps
    /// protocol seconds to the clock in use), and returns its record.
    public func scan(duration: Double, sleep: @Sendable (Double) async throws -> Void) async throws -> ScanRecord {
        try await enable()
        let start = now()
        collecting = []
        defer { collecting = nil }
        do {
            try await sleep(duration)
        } catch {
            try? await session.setScanEnable(false)
            throw error
        }
        let reports = collecting ?? []
        let end = now()
        collecting = nil
        try await session.setScanEnable(false)
        scansCompleted += 1
        return ScanRecord(start: start, end: end, reports: reports)
    }

    /// Scans until the returned stream's consumer stops; reports are yielded as they arrive.
    public func scanContinuously() async throws -> AsyncStream<TimedReport> {
        let (stream, continuation) = AsyncStream<TimedReport>.makeStream(bufferingPolicy: .bufferingNewest(8192))
        live = continuation
        try await enable()
        return stream
    }

    /// Enables scanning again (after a stall, or after the controller was reset) when a
    /// continuous scan is running; a no-op otherwise.
    public func resumeContinuous() async throws {
        guard live != nil else { return }
        try await enable()
    }

    public func stop() async {
        live?.finish()
        live = nil
        try? await session.setScanEnable(false)
    }

    private func enable() async throws {
        try await session.setScanEnable(false) // tolerates Command Disallowed when already off
        // Passive scanning sends nothing, so the own address type is irrelevant on air; public
        // avoids controllers that refuse a random type before a random address is set.
        let timing = try ScanTiming(units: UInt16(Self.scanTiming))
        try await session.send(HCILESetScanParameters(type: .passive, interval: timing, window: timing, ownAddressType: .public))
        try await session.setScanEnable(true, filterDuplicates: false)
    }
}
