import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
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
        guard case .object(let object)? = try? JSONValue.parse(data) else {
            throw DistributionError.badConfiguration(reason: "not a JSON object")
        }
        guard case .string(let engine)? = object["riskEngine"], Self.engines.contains(engine) else {
            throw DistributionError.badConfiguration(reason: "riskEngine must be one of \(Self.engines.sorted().joined(separator: ", "))")
        }
        // An object or an array, as JSONSerialization.isValidJSONObject took (the engine judges which).
        guard let parameters = object["parameters"], Self.isContainer(parameters) else {
            throw DistributionError.badConfiguration(reason: "parameters must be a JSON object (the engine's parameter file)")
        }
        var revoked: Set<String> = []
        if let list = object["revokedPackages"] {
            let items: [JSONValue]
            if case .array(let a) = list { items = a } else { items = [.null] }
            let strings = items.compactMap { if case .string(let s) = $0 { s } else { nil } }
            guard strings.count == items.count, strings.allSatisfy({ $0.count == 64 && $0.allSatisfy(\.isHexDigit) }) else {
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
        self.parameters = Data(Self.integral(parameters).serialized().utf8)
        self.revokedPackages = revoked
        // The engine reads its parameters here, so the publisher never signs, and the app never
        // keeps, a configuration whose engine would refuse them at every run.
        do {
            _ = try RiskEngineRegistry.named(engine)!.rule(parameters: self.parameters, source: "parameters", dated: nil, options: RiskRuleOptions())
        } catch {
            throw DistributionError.badConfiguration(reason: "the \(engine) engine refuses its parameters: \(error)")
        }
    }

    static func isContainer(_ value: JSONValue) -> Bool {
        switch value {
        case .object, .array: true
        default: false
        }
    }

    /// The parameters with their whole numbers written as integers ("3", not "3.0"), as
    /// JSONSerialization wrote them: JSONValue reads every number as a double, and an engine's
    /// integer field reads "3", whatever it makes of "3.0".
    static func integral(_ value: JSONValue) -> JSONValue {
        switch value {
        case .double(let d) where d == d.rounded() && abs(d) < 9_007_199_254_740_992: .int(Int64(d))
        case .array(let a): .array(a.map(integral))
        case .object(let o): .object(o.mapValues(integral))
        default: value
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
