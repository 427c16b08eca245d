import ENProtocol
import Foundation
import RiskEngines

/// The app configuration a key server publishes signed beside its packages (the CWA's
/// `app_config`, here JSON): which risk engine the boards run and with which parameters,
/// and the packages the server has revoked.
///
///     {"riskEngine": one of RiskEngineRegistry.appEngineNames (cwa, nhs, swisscovid, immuni),
///      "parameters": { the engine's parameter file, as `gaenctl risk ENGINE` reads it },
///      "revokedPackages": ["<SHA-256 of a package's bytes, hex>", ...],
///      "version": N}
///
/// `version` (an integer from 0, 0 when absent) only moves forward: an app refuses a
/// configuration whose version is lower than the highest it accepted under the same signing
/// key, so an older configuration, validly signed, cannot be replayed (it would bring back
/// the packages a later one revoked). The server raises it with every change.
///
/// It travels as a zip of export.bin (these JSON bytes) and export.sig (a TEKSignatureList
/// over them), signed with the same keys as the packages, so one trust list covers both.
public struct AppConfiguration: Sendable, Equatable {
    /// The engines a configuration may name: the registry's app engines.
    public static var engines: Set<String> { Set(RiskEngineRegistry.appEngineNames) }
    /// Bounded: a configuration is a few KiB.
    public static let maxSize = 1 << 20

    public var riskEngine: String
    /// The engine's parameters, as JSON bytes.
    public var parameters: Data
    public var revokedPackages: Set<String>
    public var version: Int

    /// Versions are JSON integers a double holds exactly.
    public static let maxVersion = 1 << 53

    public init(riskEngine: String, parameters: Data, revokedPackages: Set<String> = [], version: Int = 0) {
        self.riskEngine = riskEngine
        self.parameters = parameters
        self.revokedPackages = revokedPackages
        self.version = version
    }

    public init(json data: Data) throws {
        guard data.count <= Self.maxSize else { throw DistributionError.badConfiguration(reason: "\(data.count) bytes, more than \(Self.maxSize)") }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw DistributionError.badConfiguration(reason: "not a JSON object")
        }
        guard let engine = object["riskEngine"] as? String, Self.engines.contains(engine) else {
            throw DistributionError.badConfiguration(reason: "riskEngine must be one of \(Self.engines.sorted().joined(separator: ", "))")
        }
        guard let parameters = object["parameters"], JSONSerialization.isValidJSONObject(parameters) else {
            throw DistributionError.badConfiguration(reason: "parameters must be a JSON object (the engine's parameter file)")
        }
        var revoked: Set<String> = []
        if let list = object["revokedPackages"] {
            guard let strings = list as? [String], strings.allSatisfy({ $0.count == 64 && $0.allSatisfy(\.isHexDigit) }) else {
                throw DistributionError.badConfiguration(reason: "revokedPackages must be an array of SHA-256 hashes (64 hex digits)")
            }
            revoked = Set(strings.map { $0.lowercased() })
        }
        // JSONDecoder's Int: true, 1.5 and "1" are not versions.
        struct Versioned: Decodable { var version: Int? }
        guard let version = try? JSONDecoder().decode(Versioned.self, from: data).version ?? 0, (0...Self.maxVersion).contains(version) else {
            throw DistributionError.badConfiguration(reason: "version must be an integer from 0 to \(Self.maxVersion)")
        }
        self.version = version
        self.riskEngine = engine
        self.parameters = try JSONSerialization.data(withJSONObject: parameters, options: [.sortedKeys])
        self.revokedPackages = revoked
        // The engine reads its parameters here, so the publisher never signs, and the app never
        // keeps, a configuration whose engine would refuse them at every run.
        do {
            _ = try RiskEngineRegistry.named(engine)!.rule(parameters: self.parameters, source: "parameters", dated: nil, options: RiskRuleOptions())
        } catch {
            throw DistributionError.badConfiguration(reason: "the \(engine) engine refuses its parameters: \(error)")
        }
    }

    /// The signed configuration (zip) checked against `trust`.
    public init(signed zip: Data, trust: KeyExportTrustSet) throws {
        self = try Self.verified(signed: zip, trust: trust).configuration
    }

    /// The signed configuration and the keys it is signed with (`ID:VERSION` of each
    /// signature info in export.sig, the verified one first), for the app's per-key version
    /// check. Only the payload is verified; an info added beside a valid signature can only
    /// make that check stricter.
    public static func verified(signed zip: Data, trust: KeyExportTrustSet) throws -> (configuration: AppConfiguration, signers: [String]) {
        let (payload, by, infos) = try KeyExportFile.verifiedPayload(zip: zip, trust: trust,
                                                                  limits: KeyExportLimits(maxFileSize: Self.maxSize, maxExportSize: Self.maxSize))
        let first = "\(by.keyId):\(by.keyVersion)"
        return (try AppConfiguration(json: payload), [first] + infos.map { "\($0.keyId):\($0.keyVersion)" }.filter { $0 != first })
    }
}
