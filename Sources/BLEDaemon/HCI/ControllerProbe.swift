import HCIProtocol
import Logging

/// Facts a controller reports about itself; what `gaenctl radio probe` prints as JSON.
public struct ControllerFacts: Codable, Equatable, Sendable {
    public var controller: String
    public var address: String
    public var hciVersion: String
    public var hciVersionNumber: Int
    public var hciSubversion: Int
    public var lmpVersion: String
    public var lmpVersionNumber: Int
    public var lmpSubversion: Int
    public var manufacturer: String
    public var manufacturerId: Int
    /// Named LE feature bits (Vol 6 Part B, 4.6), lowest bit first.
    public var leFeatures: [String]
    /// The LE feature bits as a hex number.
    public var leFeaturesMask: String
    public var supportedCommandCount: Int
    /// LE Read Advertising Physical Channel Tx Power (dBm); nil when the controller did not answer.
    public var advertisingTxPowerDbm: Int?

    public init(controller: String, info: ControllerInfo, advertisingTxPowerDbm: Int?) {
        self.controller = controller
        address = info.address.description
        hciVersion = CoreVersion.name(info.version.hciVersion)
        hciVersionNumber = Int(info.version.hciVersion)
        hciSubversion = Int(info.version.hciSubversion)
        lmpVersion = CoreVersion.name(info.version.lmpVersion)
        lmpVersionNumber = Int(info.version.lmpVersion)
        lmpSubversion = Int(info.version.lmpSubversion)
        manufacturer = CompanyIdentifier.name(info.version.companyIdentifier)
        manufacturerId = Int(info.version.companyIdentifier)
        leFeatures = info.leFeatures.names
        leFeaturesMask = "0x" + String(info.leFeatures.rawValue, radix: 16)
        supportedCommandCount = info.supportedCommands.count
        self.advertisingTxPowerDbm = advertisingTxPowerDbm
    }
}

/// One-shot bring-up of a controller to read its facts (for board bring-up before the
/// daemon runs, and for tests). Never reconnects.
public enum ControllerProbe {
    public static func run(connector: any HCITransportConnector, commandTimeout: Duration = .seconds(2), logger: Logger) async throws -> ControllerFacts {
        var config = HCISessionConfiguration()
        config.commandTimeout = commandTimeout
        config.reconnect = false
        let session = HCIControllerSession(connector: connector, configuration: config, logger: logger)
        let info = try await session.start()
        var power: Int?
        do {
            power = Int(try await session.send(HCILEReadAdvertisingPhysicalChannelTxPower()).txPowerDBm)
        } catch {
            logger.warning("advertising TX power not available", metadata: ["hci.error": "\(error)"])
        }
        await session.stop()
        return ControllerFacts(controller: connector.description, info: info, advertisingTxPowerDbm: power)
    }
}
