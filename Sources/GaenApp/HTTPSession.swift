import CCurl
import Foundation

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
}

/// Why a request failed before an HTTP status arrived.
public enum HTTPError: Error, Equatable, CustomStringConvertible {
    /// Connection refused, DNS, timeout, reset: worth retrying.
    case transport(url: String, reason: String)
    /// The body passed the bound: a server sending more than any package is not retried.
    case tooLarge(url: String, limit: Int)
    case setup(reason: String)

    public var description: String {
        switch self {
        case .transport(let u, let r): return "\(u): \(r)"
        case .tooLarge(let u, let l): return "\(u): more than \(l) bytes, refused"
        case .setup(let r): return "libcurl: \(r)"
        }
    }
}

/// HTTP through libcurl (Debian's libcurl4: security updates through the OS, proxies from
/// the environment, IPv6, HTTP/2 where the server offers it, TLS with the system's CAs).
///
/// One easy handle serves every request of a run, so libcurl keeps the connection alive
/// between files (one TCP and TLS handshake for the whole catch-up). Not thread-safe: one
/// run, one session. Only http and https are allowed, also for redirects (at most 3).
public final class HTTPSession {
    private let handle: UnsafeMutableRawPointer
    public var userAgent = "gaenctl-app"
    /// Connection setup bound per request.
    public var connectTimeout: Double = 10

    public init() throws {
        guard curl_global_init(3 /* CURL_GLOBAL_DEFAULT: SSL | WIN32 */) == CURLE_OK, let h = curl_easy_init() else {
            throw HTTPError.setup(reason: "curl_easy_init failed")
        }
        handle = h
    }

    deinit { curl_easy_cleanup(handle) }

    /// Per-request state the C callbacks write into.
    private final class Transfer {
        var body = Data()
        var headers: [String: String] = [:]
        let limit: Int
        var overflow = false
        init(limit: Int) { self.limit = limit }
    }

    /// GET `url`; with `etag`, a conditional GET (304 when unchanged). The body is bounded by
    /// `maxBytes` (the transfer stops there: `HTTPError.tooLarge`), the whole request by `timeout`.
    public func get(_ url: String, etag: String? = nil, maxBytes: Int, timeout: Double) throws -> HTTPResponse {
        try perform(url, method: "GET", headers: etag.map { ["If-None-Match: \($0)"] } ?? [], upload: nil, credentials: nil,
                    maxBytes: maxBytes, timeout: timeout)
    }

    /// PUT `body` to `url` with HTTP basic authentication.
    public func put(_ url: String, body: Data, user: String, password: String, timeout: Double) throws -> HTTPResponse {
        try perform(url, method: "PUT", headers: ["Content-Type: application/zip"], upload: body, credentials: (user, password),
                     maxBytes: 64 << 10, timeout: timeout)
    }

    private func set(_ option: CURLoption, _ value: Int) throws {
        let rc = gaend_curl_set_long(handle, option, value)
        guard rc == CURLE_OK else { throw HTTPError.setup(reason: "option \(option.rawValue): \(String(cString: curl_easy_strerror(rc)))") }
    }

    private func set(_ option: CURLoption, _ value: String) throws {
        let rc = value.withCString { gaend_curl_set_string(handle, option, $0) }
        guard rc == CURLE_OK else { throw HTTPError.setup(reason: "option \(option.rawValue): \(String(cString: curl_easy_strerror(rc)))") }
    }

    private func perform(_ url: String, method: String, headers: [String], upload: Data?, credentials: (String, String)?,
                         maxBytes: Int, timeout: Double) throws -> HTTPResponse {
        let h = handle
        let transfer = Transfer(limit: maxBytes)
        let context = Unmanaged.passRetained(transfer)
        defer { context.release() }
        // Options are set afresh each time (a handle keeps them), the connection stays.
        curl_easy_reset(h)
        try set(CURLOPT_URL, url)
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try set(CURLOPT_FOLLOWLOCATION, 1)
        try set(CURLOPT_MAXREDIRS, 3)
        try set(CURLOPT_NOSIGNAL, 1)
        try set(CURLOPT_USERAGENT, userAgent)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Int(connectTimeout * 1000))
        try set(CURLOPT_TIMEOUT_MS, max(1, Int(timeout * 1000)))
        try set(CURLOPT_ACCEPT_ENCODING, "") // whatever libcurl decodes
        if maxBytes < Int.max { try set(CURLOPT_MAXFILESIZE_LARGE, maxBytes) }
        _ = gaend_curl_set_pointer(h, CURLOPT_WRITEDATA, context.toOpaque())
        _ = gaend_curl_set_callback(h, CURLOPT_WRITEFUNCTION) { data, size, count, ctx in
            let t = Unmanaged<Transfer>.fromOpaque(ctx!).takeUnretainedValue()
            let n = size * count
            if t.body.count + n > t.limit { t.overflow = true; return 0 } // stops the transfer
            if let data { t.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: n) }
            return n
        }
        _ = gaend_curl_set_pointer(h, CURLOPT_HEADERDATA, context.toOpaque())
        _ = gaend_curl_set_callback(h, CURLOPT_HEADERFUNCTION) { data, size, count, ctx in
            let t = Unmanaged<Transfer>.fromOpaque(ctx!).takeUnretainedValue()
            let n = size * count
            guard let data, n < 8192 else { return n }
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
            if line.hasPrefix("HTTP/") { t.headers = [:] } // a new response (after a redirect or 100)
            if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
                t.headers[name] = value
            }
            return n
        }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for header in headers { list = curl_slist_append(list, header) }
        defer { curl_slist_free_all(list) }
        if let list { _ = gaend_curl_set_slist(h, CURLOPT_HTTPHEADER, list) }
        if let (user, password) = credentials {
            try set(CURLOPT_HTTPAUTH, 1 /* CURLAUTH_BASIC */)
            try set(CURLOPT_USERNAME, user)
            try set(CURLOPT_PASSWORD, password)
        }

        var rc: CURLcode
        if let upload {
            try set(CURLOPT_CUSTOMREQUEST, method)
            try set(CURLOPT_POSTFIELDSIZE_LARGE, upload.count)
            rc = upload.withUnsafeBytes { raw in
                _ = gaend_curl_set_pointer(h, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
                return curl_easy_perform(h)
            }
            _ = gaend_curl_set_pointer(h, CURLOPT_POSTFIELDS, nil)
        } else {
            rc = curl_easy_perform(h)
        }
        if transfer.overflow || rc == CURLE_FILESIZE_EXCEEDED { throw HTTPError.tooLarge(url: url, limit: maxBytes) }
        guard rc == CURLE_OK else { throw HTTPError.transport(url: url, reason: String(cString: curl_easy_strerror(rc))) }
        var status = 0
        _ = gaend_curl_get_long(h, CURLINFO_RESPONSE_CODE, &status)
        let hdr = transfer.headers
        return HTTPResponse(status: status, body: transfer.body, etag: hdr["etag"], lastModified: hdr["last-modified"],
                            date: hdr["date"].flatMap(Self.httpDate), retryAfter: hdr["retry-after"].flatMap { Self.retryAfter($0) })
    }

    /// An HTTP date (IMF-fixdate and the two obsolete forms) as Unix seconds, through libcurl's parser.
    public static func httpDate(_ text: String) -> Int64? {
        let t = curl_getdate(text, nil)
        return t < 0 ? nil : Int64(t)
    }

    /// Retry-After: delta seconds, or an HTTP date (relative to now).
    static func retryAfter(_ text: String, now: Int64 = Int64(Date().timeIntervalSince1970)) -> Double? {
        if let s = Double(text), s >= 0 { return s }
        return httpDate(text).map { Double(max(0, $0 - now)) }
    }
}
