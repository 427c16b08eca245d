import CCurl
import Foundation

/// HTTP PUT, HEAD and GET on libcurl, for `gaenctl collect`: basic authentication, http and
/// https only (no redirects followed: a moved server is a configuration error), bounded
/// connect and stall times, optional upload rate limit, response bodies bounded.
final class HTTPTransfer {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    struct Response {
        var status: Int
        var contentLength: Int64?
        var body: Data
    }

    private let user: String
    private let password: String
    private let connectTimeout: Int
    /// Seconds below `lowSpeedBytes` per second before a transfer is abandoned (a cut link).
    private let stallSeconds: Int
    private let limitRate: Int?

    private static let initialise: Void = { _ = curl_global_init(3 /* CURL_GLOBAL_DEFAULT: SSL | WIN32 */) }()

    init(user: String, password: String, connectTimeout: Int = 20, stallSeconds: Int = 60, limitRate: Int? = nil) {
        _ = Self.initialise
        self.user = user
        self.password = password
        self.connectTimeout = connectTimeout
        self.stallSeconds = stallSeconds
        self.limitRate = limitRate
    }

    /// PUT the file at `path` to `url`; returns the HTTP status.
    func put(_ url: String, file path: String) throws -> Response {
        guard let f = fopen(path, "rb") else { throw Failure(description: "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { fclose(f) }
        var st = stat()
        guard fstat(fileno(f), &st) == 0 else { throw Failure(description: "cannot stat \(path)") }
        return try perform(url) { h in
            try Self.check(gaend_curl_set_long(h, CURLOPT_UPLOAD, 1), "upload")
            // libcurl's own read function freads READDATA.
            try Self.check(gaend_curl_set_pointer(h, CURLOPT_READDATA, UnsafeMutableRawPointer(f)), "read data")
            try Self.check(gaend_curl_set_offset(h, CURLOPT_INFILESIZE_LARGE, curl_off_t(st.st_size)), "size")
            if let limitRate { try Self.check(gaend_curl_set_offset(h, CURLOPT_MAX_SEND_SPEED_LARGE, curl_off_t(limitRate)), "rate") }
        }
    }

    func head(_ url: String) throws -> Response {
        try perform(url) { h in try Self.check(gaend_curl_set_long(h, CURLOPT_NOBODY, 1), "head") }
    }

    /// GET with the body kept up to `limit` bytes (more is an error).
    func get(_ url: String, limit: Int) throws -> Response {
        try perform(url, bodyLimit: limit) { _ in }
    }

    /// Collects a response body, refusing more than `limit` bytes.
    private final class Sink {
        var data = Data()
        let limit: Int
        var overflow = false
        init(limit: Int) { self.limit = limit }
    }

    private func perform(_ url: String, bodyLimit: Int = 64 << 10, _ configure: (UnsafeMutableRawPointer) throws -> Void) throws -> Response {
        guard let h = curl_easy_init() else { throw Failure(description: "libcurl: cannot create a handle") }
        defer { curl_easy_cleanup(h) }
        let sink = Sink(limit: bodyLimit)
        let box = Unmanaged.passRetained(sink)
        defer { box.release() }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code: CURLcode = try errorBuffer.withUnsafeMutableBufferPointer { buf in
            try Self.check(gaend_curl_set_string(h, CURLOPT_URL, url), "URL")
            try Self.check(gaend_curl_set_string(h, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
            try Self.check(gaend_curl_set_long(h, CURLOPT_FOLLOWLOCATION, 0), "redirects")
            try Self.check(gaend_curl_set_long(h, CURLOPT_HTTPAUTH, 1 /* CURLAUTH_BASIC */), "auth")
            try Self.check(gaend_curl_set_string(h, CURLOPT_USERNAME, user), "user")
            try Self.check(gaend_curl_set_string(h, CURLOPT_PASSWORD, password), "password")
            try Self.check(gaend_curl_set_long(h, CURLOPT_CONNECTTIMEOUT, connectTimeout), "connect timeout")
            try Self.check(gaend_curl_set_long(h, CURLOPT_LOW_SPEED_LIMIT, 1), "low speed")
            try Self.check(gaend_curl_set_long(h, CURLOPT_LOW_SPEED_TIME, stallSeconds), "low speed time")
            try Self.check(gaend_curl_set_long(h, CURLOPT_NOSIGNAL, 1), "no signal")
            try Self.check(gaend_curl_set_pointer(h, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(buf.baseAddress!)), "error buffer")
            try Self.check(gaend_curl_set_pointer(h, CURLOPT_WRITEDATA, box.toOpaque()), "write data")
            try Self.check(gaend_curl_set_callback(h, CURLOPT_WRITEFUNCTION) { ptr, size, count, user in
                let sink = Unmanaged<Sink>.fromOpaque(user!).takeUnretainedValue()
                let n = size * count
                guard sink.data.count + n <= sink.limit else {
                    sink.overflow = true
                    return 0 // aborts the transfer
                }
                if let ptr { sink.data.append(UnsafeRawPointer(ptr).assumingMemoryBound(to: UInt8.self), count: n) }
                return n
            }, "write function")
            try configure(h)
            return curl_easy_perform(h)
        }
        if sink.overflow { throw Failure(description: "\(Self.redacted(url)): response larger than \(bodyLimit) bytes") }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw Failure(description: "\(Self.redacted(url)): \(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)")
        }
        var status = 0
        _ = gaend_curl_get_long(h, CURLINFO_RESPONSE_CODE, &status)
        var length: curl_off_t = -1
        _ = gaend_curl_get_offset(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        return Response(status: status, contentLength: length >= 0 ? Int64(length) : nil, body: sink.data)
    }

    private static func check(_ code: CURLcode, _ what: String) throws {
        guard code == CURLE_OK else { throw Failure(description: "libcurl: cannot set \(what): \(String(cString: curl_easy_strerror(code)))") }
    }

    /// The URL without any user information, for messages.
    static func redacted(_ url: String) -> String {
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
              !url[scheme.upperBound..<at].contains("/") else { return url }
        return String(url[..<scheme.upperBound]) + String(url[url.index(after: at)...])
    }
}
