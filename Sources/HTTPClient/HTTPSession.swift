import CCurl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP response, its body bounded.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var body: Data
    public var etag: String?
    public var lastModified: String?
    /// The server's `Date` header, as Unix seconds.
    public var date: Int64?
    /// `Retry-After` in seconds (delta or HTTP date), on 429 and 503.
    public var retryAfter: Double?
    /// `Content-Length` as the server announced it (a HEAD's size of the file).
    public var contentLength: Int64?
    /// `Location`, on a redirect that was not followed.
    public var location: String?

    public init(status: Int, body: Data = Data(), etag: String? = nil, lastModified: String? = nil, date: Int64? = nil,
                retryAfter: Double? = nil, contentLength: Int64? = nil, location: String? = nil) {
        self.status = status; self.body = body; self.etag = etag; self.lastModified = lastModified; self.date = date
        self.retryAfter = retryAfter; self.contentLength = contentLength; self.location = location
    }

    public var isSuccess: Bool { (200..<300).contains(status) }
    public var isRedirect: Bool { (300..<400).contains(status) && status != 304 }
}

/// Why a request failed before an HTTP status arrived.
public enum HTTPError: Error, Equatable, CustomStringConvertible {
    /// Connection refused, DNS, timeout, reset, TLS: worth retrying.
    case transport(url: String, reason: String)
    /// The body passed the bound: a server sending more than any package is not retried.
    case tooLarge(url: String, limit: Int)
    case setup(reason: String)
    /// A local file to upload could not be read.
    case file(path: String, reason: String)

    public var description: String {
        switch self {
        case .transport(let u, let r): return "\(HTTPSession.redacted(u)): \(r)"
        case .tooLarge(let u, let l): return "\(HTTPSession.redacted(u)): more than \(l) bytes, refused"
        case .setup(let r): return "libcurl: \(r)"
        case .file(let p, let r): return "\(p): \(r)"
        }
    }
}

/// Basic-authentication credentials; never printed.
public struct HTTPCredentials: Sendable {
    public var user: String
    public var password: String
    public init(user: String, password: String) { self.user = user; self.password = password }
}

/// The one HTTP client of the project (the app's downloads and uploads, `gaenctl collect`), on
/// libcurl (Debian's libcurl4: security updates through the OS, proxies from the environment,
/// IPv6, HTTP/2 where the server offers it, TLS with the system's CAs or a trial's own CA).
///
/// One easy handle serves every request of a session, so libcurl keeps the connection alive
/// between files (one TCP and TLS handshake for a whole catch-up). Not thread-safe: one run, one
/// session. Only http and https are spoken. Redirects: an anonymous GET follows at most 3 (a CDN
/// in front of a key server); a request that carries credentials or a body (PUT, collect's GET
/// and HEAD) never follows one: a moved server is a configuration error, and an upload must land
/// where the board was told to send it (the 3xx comes back as the response's status).
public final class HTTPSession {
    private let handle: UnsafeMutableRawPointer
    public var userAgent: String
    /// Connection setup bound per request, seconds.
    public var connectTimeout: Double
    /// A PEM file of CA certificates to trust instead of the system's (a trial's private CA).
    public let caFile: String?
    /// Sent with every request when set (basic authentication).
    public var credentials: HTTPCredentials?
    /// Seconds a transfer may move less than one byte a second before it is abandoned (a cut link).
    public var stallSeconds: Int = 60
    /// Uploads at most this many bytes a second (a metered link).
    public var uploadRateLimit: Int?

    public init(userAgent: String = "gaenctl", connectTimeout: Double = 10, caFile: String? = nil) throws {
        if let caFile {
            // Checked here so a typo is one clear message, not a TLS failure per file.
            var st = stat()
            guard stat(caFile, &st) == 0 else { throw HTTPError.file(path: caFile, reason: "cannot be opened: " + SystemCallError.lastReason) }
            guard (st.st_mode & S_IFMT) == S_IFREG else { throw HTTPError.file(path: caFile, reason: "is not a regular file") }
        }
        guard gaend_curl_load() == 0 else { throw HTTPError.setup(reason: String(cString: gaend_curl_load_error())) }
        guard gaend_curl_global_init(3 /* CURL_GLOBAL_DEFAULT: SSL | WIN32 */) == CURLE_OK, let h = gaend_curl_easy_init() else {
            throw HTTPError.setup(reason: "curl_easy_init failed")
        }
        handle = h
        self.userAgent = userAgent
        self.connectTimeout = connectTimeout
        self.caFile = caFile
    }

    deinit { gaend_curl_easy_cleanup(handle) }

    /// GET `url`; with `etag`, a conditional GET (304 when unchanged). The body is bounded by
    /// `maxBytes` (the transfer stops there: `HTTPError.tooLarge`), the whole request by `timeout`.
    public func get(_ url: String, etag: String? = nil, maxBytes: Int, timeout: Double) throws -> HTTPResponse {
        try perform(url, method: .get, headers: etag.map { ["If-None-Match: \($0)"] } ?? [], maxBytes: maxBytes, timeout: timeout)
    }

    /// GET `url`, the body handed to `consume` piece by piece as it arrives (not kept: the
    /// response's `body` is empty), at most `maxBytes` of it.
    public func get(_ url: String, maxBytes: Int, timeout: Double, consume: @escaping (UnsafeRawBufferPointer) -> Void) throws -> HTTPResponse {
        try perform(url, method: .get, headers: [], maxBytes: maxBytes, timeout: timeout, consume: consume)
    }

    /// HEAD `url`: status, Content-Length.
    public func head(_ url: String, timeout: Double) throws -> HTTPResponse {
        try perform(url, method: .head, headers: [], maxBytes: 0, timeout: timeout)
    }

    /// PUT `body` to `url`.
    public func put(_ url: String, body: Data, contentType: String, timeout: Double) throws -> HTTPResponse {
        try perform(url, method: .put(.bytes(body)), headers: ["Content-Type: \(contentType)"], maxBytes: 64 << 10, timeout: timeout)
    }

    /// PUT the regular file at `path` to `url`, streamed from disk.
    public func put(_ url: String, file path: String, timeout: Double) throws -> HTTPResponse {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw HTTPError.file(path: path, reason: "cannot be opened: " + SystemCallError.lastReason) }
        // A FIFO or device would block or never end: only regular files are sent.
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw HTTPError.file(path: path, reason: "is not a regular file")
        }
        guard let f = fdopen(fd, "rb") else {
            close(fd)
            throw HTTPError.file(path: path, reason: "cannot be read: " + SystemCallError.lastReason)
        }
        defer { fclose(f) }
        return try perform(url, method: .put(.file(f, size: Int64(st.st_size))), headers: [], maxBytes: 64 << 10, timeout: timeout)
    }

    private enum Upload {
        case bytes(Data)
        case file(UnsafeMutablePointer<FILE>, size: Int64)
    }

    private enum Method {
        case get, head
        case put(Upload)
    }

    /// Per-request state the C callbacks write into and read from.
    private final class Transfer {
        var body = Data()
        var headers: [String: String] = [:]
        let limit: Int
        var received = 0
        var overflow = false
        var upload: Data
        var uploadOffset = 0
        var consume: ((UnsafeRawBufferPointer) -> Void)?
        init(limit: Int, upload: Data = Data()) { self.limit = limit; self.upload = upload }
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        let rc = gaend_curl_set_long(handle, option, value)
        guard rc == CURLE_OK else { throw HTTPError.setup(reason: "option \(option.rawValue): \(String(cString: gaend_curl_easy_strerror(rc)))") }
    }

    private func set(_ option: CURLoption, _ value: String) throws {
        let rc = value.withCString { gaend_curl_set_string(handle, option, $0) }
        guard rc == CURLE_OK else { throw HTTPError.setup(reason: "option \(option.rawValue): \(String(cString: gaend_curl_easy_strerror(rc)))") }
    }

    private func setOffset(_ option: CURLoption, _ value: Int64) throws {
        let rc = gaend_curl_set_offset(handle, option, curl_off_t(value))
        guard rc == CURLE_OK else { throw HTTPError.setup(reason: "option \(option.rawValue): \(String(cString: gaend_curl_easy_strerror(rc)))") }
    }

    private func perform(_ url: String, method: Method, headers: [String], maxBytes: Int, timeout: Double,
                         consume: ((UnsafeRawBufferPointer) -> Void)? = nil) throws -> HTTPResponse {
        guard timeout.isFinite, timeout > 0 else { throw HTTPError.setup(reason: "timeout \(timeout) is not a positive number of seconds") }
        let h = handle
        var uploadData = Data()
        if case .put(.bytes(let d)) = method { uploadData = d }
        let transfer = Transfer(limit: maxBytes, upload: uploadData)
        transfer.consume = consume
        let context = Unmanaged.passRetained(transfer)
        defer { context.release() }
        // Options are set afresh each time (a handle keeps them), the connection stays.
        gaend_curl_easy_reset(h)
        try set(CURLOPT_URL, url)
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        let anonymousGet: Bool
        if case .get = method, credentials == nil { anonymousGet = true } else { anonymousGet = false }
        try set(CURLOPT_FOLLOWLOCATION, anonymousGet ? 1 : 0)
        if anonymousGet { try set(CURLOPT_MAXREDIRS, 3) }
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_USERAGENT, userAgent)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Int(min(connectTimeout, 86_400) * 1000))
        try set(CURLOPT_TIMEOUT_MS, max(1, Int(min(timeout, 86_400 * 7) * 1000)))
        try set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try set(CURLOPT_LOW_SPEED_TIME, stallSeconds)
        if let caFile { try set(CURLOPT_CAINFO, caFile) }
        if case .get = method { try set(CURLOPT_ACCEPT_ENCODING, "") } // whatever libcurl decodes; the bound applies to the decoded bytes
        if maxBytes > 0, maxBytes < Int.max { try setOffset(CURLOPT_MAXFILESIZE_LARGE, Int64(maxBytes)) }
        _ = gaend_curl_set_pointer(h, CURLOPT_WRITEDATA, context.toOpaque())
        _ = gaend_curl_set_callback(h, CURLOPT_WRITEFUNCTION) { data, size, count, ctx in
            let t = Unmanaged<Transfer>.fromOpaque(ctx!).takeUnretainedValue()
            let n = size * count
            if t.received + n > t.limit { t.overflow = true; return 0 } // stops the transfer
            t.received += n
            guard let data else { return n }
            if let consume = t.consume { consume(UnsafeRawBufferPointer(start: data, count: n)) } else {
                t.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: n)
            }
            return n
        }
        _ = gaend_curl_set_pointer(h, CURLOPT_HEADERDATA, context.toOpaque())
        _ = gaend_curl_set_callback(h, CURLOPT_HEADERFUNCTION) { data, size, count, ctx in
            let t = Unmanaged<Transfer>.fromOpaque(ctx!).takeUnretainedValue()
            let n = size * count
            guard let data, n < 8192 else { return n }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
            if line.hasPrefix("HTTP/") { t.headers = [:] } // a new response (after a redirect or 100)
            if let colon = line.firstIndex(of: ":"), t.headers.count < 64 {
                let name = line[..<colon].lowercased()
                let value = String(line[line.index(after: colon)...]).trimmingWhitespacesAndNewlines()
                t.headers[name] = value
            }
            return n
        }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for header in headers { list = gaend_curl_slist_append(list, header) }
        // No "Expect: 100-continue": nginx answers a refused PUT at once either way.
        if case .put = method { list = gaend_curl_slist_append(list, "Expect:") }
        defer { gaend_curl_slist_free_all(list) }
        if let list { _ = gaend_curl_set_slist(h, CURLOPT_HTTPHEADER, list) }
        if let credentials {
            try set(CURLOPT_HTTPAUTH, 1 /* CURLAUTH_BASIC */)
            try set(CURLOPT_USERNAME, credentials.user)
            try set(CURLOPT_PASSWORD, credentials.password)
        }
        switch method {
        case .get: break
        case .head: try set(CURLOPT_NOBODY, 1)
        case .put(let upload):
            try set(CURLOPT_UPLOAD, 1)
            if let uploadRateLimit { try setOffset(CURLOPT_MAX_SEND_SPEED_LARGE, Int64(uploadRateLimit)) }
            switch upload {
            case .file(let f, let size):
                // libcurl's own read function freads READDATA.
                _ = gaend_curl_set_pointer(h, CURLOPT_READDATA, UnsafeMutableRawPointer(f))
                try setOffset(CURLOPT_INFILESIZE_LARGE, size)
            case .bytes(let d):
                _ = gaend_curl_set_pointer(h, CURLOPT_READDATA, context.toOpaque())
                _ = gaend_curl_set_callback(h, CURLOPT_READFUNCTION) { buffer, size, count, ctx in
                    let t = Unmanaged<Transfer>.fromOpaque(ctx!).takeUnretainedValue()
                    let n = min(size * count, t.upload.count - t.uploadOffset)
                    guard n > 0, let buffer else { return 0 }
                    t.upload.withUnsafeBytes { raw in
                        UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress! + t.uploadOffset, byteCount: n)
                    }
                    t.uploadOffset += n
                    return n
                }
                try setOffset(CURLOPT_INFILESIZE_LARGE, Int64(d.count))
            }
        }
        let rc = gaend_curl_easy_perform(h)
        if transfer.overflow || rc == CURLE_FILESIZE_EXCEEDED { throw HTTPError.tooLarge(url: url, limit: maxBytes) }
        guard rc == CURLE_OK else { throw HTTPError.transport(url: url, reason: String(cString: gaend_curl_easy_strerror(rc))) }
        var status = 0
        _ = gaend_curl_get_long(h, CURLINFO_RESPONSE_CODE, &status)
        var length: curl_off_t = -1
        _ = gaend_curl_get_offset(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        let hdr = transfer.headers
        return HTTPResponse(status: status, body: transfer.body, etag: hdr["etag"], lastModified: hdr["last-modified"],
                            date: hdr["date"].flatMap(Self.httpDate), retryAfter: hdr["retry-after"].flatMap { Self.retryAfter($0) },
                            contentLength: length >= 0 ? Int64(length) : nil, location: hdr["location"])
    }

    /// An HTTP date (IMF-fixdate and the two obsolete forms) as Unix seconds, through libcurl's parser.
    public static func httpDate(_ text: String) -> Int64? {
        let t = gaend_curl_getdate(text)
        return t < 0 ? nil : Int64(t)
    }

    /// Retry-After: delta seconds, or an HTTP date (relative to now).
    public static func retryAfter(_ text: String, now: Int64 = Int64(Date().timeIntervalSince1970)) -> Double? {
        if let s = Double(text), s.isFinite, s >= 0 { return s }
        return httpDate(text).map { Double(max(0, $0 - now)) }
    }

    /// The URL without any user information, for messages.
    public static func redacted(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
              !url[scheme.upperBound..<at].contains("/") else { return url }
        return String(url[..<scheme.upperBound]) + String(url[url.index(after: at)...])
    }
}

extension HTTPCredentials {
    /// The password from a file of one line (a systemd credential, a 0600 file), never from the
    /// command line; read as every small input file is (SmallFile: a FIFO or device is refused at once).
    public static func readPassword(_ path: String) throws(HTTPError) -> String {
        let bytes: [UInt8]
        do { bytes = try SmallFile.read(path, limit: 4096) } catch { throw .file(path: path, reason: error.description) }
        guard var text = String(validating: bytes, as: UTF8.self) else { throw .file(path: path, reason: "is not UTF-8 text") }
        // By scalar: "\r\n" is one Character, which hasSuffix("\n") does not match.
        while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
        guard !text.isEmpty else { throw .file(path: path, reason: "is empty; it must hold the password on one line") }
        guard !text.contains("\n"), !text.contains("\r") else { throw .file(path: path, reason: "holds more than one line") }
        return text
    }
}
