#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ENProtocol

/// Configuration files as datasets ship them.
public enum ConfigurationText {
    /// `#` comment lines (a line whose first non-blank character is `#`) blanked out, so JSON
    /// parsers take files that start with a comment header; line numbers stay as they were.
    public static func strippingCommentLines(_ data: Data) -> Data {
        guard data.contains(UInt8(ascii: "#")) else { return data }
        var out = [UInt8]()
        out.reserveCapacity(data.count)
        var atLineStart = true, inComment = false
        for b in data {
            if b == 0x0A { inComment = false; atLineStart = true; out.append(b); continue }
            if inComment { continue }
            if atLineStart {
                if b == 0x20 || b == 0x09 || b == 0x0D { out.append(b); continue }
                atLineStart = false
                if b == UInt8(ascii: "#") { inComment = true; continue }
            }
            out.append(b)
        }
        return Data(out)
    }

    /// The CWA v1 configuration: JSON (framework v1 names plus the CWA ones) or the app
    /// configuration in protobuf text format (CWAv1Configuration.decode(textFormat:)).
    public static func cwaV1(_ data: Data, file: String) throws -> CWAv1Configuration {
        let clean = strippingCommentLines(data)
        if TextProto.looksLikeTextFormat(clean) { return try CWAv1Configuration.decode(textFormat: data, file: file) }
        return try RiskJSON.decodeParameters(CWAv1Configuration.self, from: clean, file: file)
    }
}
