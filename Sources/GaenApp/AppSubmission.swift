import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HTTPClient
import PlatformSupport
import GaendAPI
import GaendClient

/// `gaenctl app submit`: the board's own keys of the days that have rolled, uploaded once to the
/// trial server's inbox as one key export ZIP (WebDAV PUT, basic authentication).
public struct AppSubmission {
    public var server: String
    public var user: String
    public var password: String
    public var stateDirectory: String
    public var timeout: Double
    public var http: HTTPSession

    public init(server: String, user: String, password: String, stateDirectory: String, timeout: Double, http: HTTPSession) {
        var base = server
        while base.hasSuffix("/") { base.removeLast() }
        self.server = base
        self.user = user
        self.password = password
        self.stateDirectory = stateDirectory
        self.timeout = timeout
        self.http = http
    }

    public struct Outcome: Sendable, Equatable {
        public var keys: Int
        /// Where they went; nil when there was nothing new.
        public var url: String?
    }

    /// Uploads the keys of the closed days not uploaded yet. A day is recorded as uploaded
    /// only after the server answered 2xx to the PUT at the URL the board was given (a
    /// redirect is not followed and is a failure naming where it pointed).
    public func run(client: GaendClient, today: UTCDay) async throws -> Outcome {
        let store = try AppStateStore(directory: stateDirectory)
        let recordPath = stateDirectory + "/submitted.json"
        var done = try Self.uploadedDays(recordPath)
        let keys = try await client.temporaryExposureKeyHistory().map {
            DiagnosisKey(key: try TemporaryExposureKey(bytes: $0.keyData), rollingStartIntervalNumber: ENIntervalNumber($0.rollingStartIntervalNumber),
                         rollingPeriod: $0.rollingPeriod)
        }.filter { $0.rollingStartIntervalNumber.utcDay < today && !done.contains($0.rollingStartIntervalNumber.utcDay.isoDate) }
        guard let newest = keys.map(\.rollingStartIntervalNumber.utcDay).max() else { return Outcome(keys: 0, url: nil) }
        let bin = try KeyExportWriter.exportBin(header: KeyExportHeader(covering: keys, region: ""), keys: keys)
        let zip = try KeyExportWriter.signedZip(exportBin: bin, signers: [])
        let url = "\(server)/inbox/\(user)/keys-\(newest.isoDate).zip"
        http.credentials = HTTPCredentials(user: user, password: password)
        let response = try http.put(url, body: zip, contentType: "application/zip", timeout: timeout)
        guard response.isSuccess else {
            if response.isRedirect {
                throw AppError.server("\(url): HTTP \(response.status) redirect to \(TextSafety.quoted(response.location ?? "nowhere")) refused: uploads go only where the board was told (check --server)")
            }
            throw AppError.server("\(url): HTTP \(response.status)")
        }
        for k in keys { done.insert(k.rollingStartIntervalNumber.utcDay.isoDate) }
        try store.write(try JSONEncoder().encode(done.sorted()), to: "submitted.json")
        return Outcome(keys: keys.count, url: url)
    }

    /// The UTC days whose keys were uploaded (`STATE_DIR/submitted.json`), for the collected outcomes.
    public static func submittedDays(stateDirectory: String) throws -> Set<String> {
        try uploadedDays(stateDirectory + "/submitted.json")
    }

    /// The days uploaded before: bounded and a regular file before it is read; an unreadable
    /// record stops the run (read as empty it would upload every day again).
    static func uploadedDays(_ path: String) throws -> Set<String> {
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let bytes: [UInt8]
        do { bytes = try SmallFile.read(path, limit: 1 << 20) } catch { throw AppError.state("\(path) \(error)") }
        do { return Set(try JSONDecoder().decode([String].self, from: Data(bytes))) } catch {
            throw AppError.state("\(path) is not the list of days uploaded (\(error)); move it away to upload every day again")
        }
    }
}
