import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import PlatformSupport

/// The app's status as `gaenctl status` and `gaenctl app status` print it. Text that came from
/// a server (its URL, an error it caused) is printed escaped: it cannot run terminal escapes
/// or forge a line.
public enum AppStatusText {
    static func time(_ t: Int64) -> String { Date(timeIntervalSince1970: Double(t)).formatted(.iso8601) }

    public static func lines(_ s: AppStatus) -> [String] {
        var out: [String] = []
        if let l = s.lastSync {
            out.append("app last sync:  \(time(l.finishedAt)) from \(TextSafety.escaped(l.server)): \(l.newPackages) new, \(l.provided) provided, \(l.refused) refused"
                       + (l.error.isEmpty ? "" : "; failed: \(TextSafety.escaped(l.error))"))
        } else {
            out.append("app last sync:  never")
        }
        out.append("app packages:   \(s.packagesHeld) held, \(s.packagesProvided) provided, \(s.packagesWaiting) waiting"
                   + (s.oldestWaitingFetchedAt.map { " (the oldest since \(time($0)))" } ?? "")
                   + ", \(s.packagesRefused ?? 0) refused by gaend")
        out.append("app provide:    last accepted " + (s.lastProvidedAt.map(time) ?? "never")
                   + "; refused in all: \(s.refusedDownloadsTotal ?? 0) at download, \(s.refusedByGaendTotal ?? 0) by gaend")
        if let r = s.risk {
            out.append("app risk:       \(TextSafety.escaped(r.level)) (\(TextSafety.escaped(r.engine)), \(r.windows) windows, \(time(r.computedAt)))"
                       + (s.highRiskSince.map { "; high since \(time($0))" } ?? ""))
        } else {
            out.append("app risk:       not computed yet")
        }
        return out
    }

    public static func json(_ s: AppStatus) -> JSONValue {
        var o: [String: JSONValue] = [
            "packagesHeld": .int(Int64(s.packagesHeld)), "packagesProvided": .int(Int64(s.packagesProvided)),
            "packagesWaiting": .int(Int64(s.packagesWaiting)), "packagesRefused": .int(Int64(s.packagesRefused ?? 0)),
            "oldestWaitingFetchedAt": s.oldestWaitingFetchedAt.map { .int($0) } ?? .null,
            "lastProvidedAt": s.lastProvidedAt.map { .int($0) } ?? .null,
            "refusedDownloadsTotal": .int(Int64(s.refusedDownloadsTotal ?? 0)), "refusedByGaendTotal": .int(Int64(s.refusedByGaendTotal ?? 0)),
        ]
        if let l = s.lastSync {
            o["lastSync"] = .object(["startedAt": .int(l.startedAt), "finishedAt": .int(l.finishedAt), "server": .string(l.server),
                                     "newPackages": .int(Int64(l.newPackages)), "provided": .int(Int64(l.provided)),
                                     "refused": .int(Int64(l.refused)), "refusedByGaend": .int(Int64(l.refusedByGaend ?? 0)), "pending": .int(Int64(l.pending)), "bytes": .int(Int64(l.bytes)),
                                     "error": .string(l.error)])
        } else {
            o["lastSync"] = .null
        }
        o["riskLevel"] = .string(s.risk?.level ?? "unknown")
        o["riskEngine"] = s.risk.map { .string($0.engine) } ?? .null
        o["riskComputedAt"] = s.risk.map { .int($0.computedAt) } ?? .null
        o["highRiskSince"] = s.highRiskSince.map { .int($0) } ?? .null
        return .object(o)
    }
}
