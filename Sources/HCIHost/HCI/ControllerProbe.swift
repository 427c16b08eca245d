import HCIProtocol
import Logging

/// Facts a controller reports about itself; what `gaenctl radio probe` prints as JSON.
package struct ControllerFacts: Codable, Equatable, Sendable {
    package var controller: String
    package var address: String
    package var hciVersion: String
    package var hciVersionNumber: Int
    package var hciSubversion: Int
    package var lmpVersion: String
    package var lmpVersionNumber: Int
    package var lmpSubversion: Int
    package var manufacturer: String
    package var manufacturerId: Int
    /// Named LE feature bits (Vol 6 Part B, 4.6), lowest bit first.
    package var leFeatures: [String]
    /// The LE feature bits as a hex number.
    package var leFeaturesMask: String
    package var supportedCommandCount: Int
    /// LE Read Advertising Physical Channel Tx Power (dBm); nil when the controller did not answer.
    package var advertisingTxPowerDbm: Int?

    package init(controller: String, info: ControllerInfo, advertisingTxPowerDbm: Int?) {
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
package enum ControllerProbe {
    package static func run(connector: any HCITransportConnector, commandTimeout: Duration = .seconds(2), logger: Logger) async throws -> ControllerFacts {
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
