import ArgumentParser
import Foundation
import TrialKit
#if canImport(Glibc)
import Glibc
#endif

/// Range checks for numeric options, with one message form. ArgumentParser accepts any
/// `Double` it can parse (`inf`, `nan`, `1e308`); converting such a value to an integer count
/// of milliseconds traps, so every option that becomes a duration or a count goes through here.
enum NumericOption {
    /// Formats a value as typed back to the user (`inf`, `nan`, `1e+308`).
    static func shown(_ v: Double) -> String { v.isNaN ? "nan" : v.isInfinite ? (v < 0 ? "-inf" : "inf") : "\(v)" }

    /// Requires a finite number within `range`.
    static func check(_ value: Double, _ option: String, _ range: ClosedRange<Double>, unit: String = "seconds") throws {
        guard value.isFinite, range.contains(value) else {
            throw ValidationError("\(option) must be a number of \(unit) in \(shown(range.lowerBound))...\(shown(range.upperBound)), got \(shown(value))")
        }
    }

    static func check(_ value: Int, _ option: String, _ range: ClosedRange<Int>, unit: String = "seconds") throws {
        guard range.contains(value) else {
            throw ValidationError("\(option) must be a number of \(unit) in \(range.lowerBound)...\(range.upperBound), got \(value)")
        }
    }

    /// One day: no reply, wait or interval on the command line is meant to be longer.
    static let day: Double = 86_400
}

extension TimeArgument {
    /// The time option's problem, if any (`TimeArgument` keeps it so the message can name
    /// the option): unparsable, or outside 1970-01-01...3000-01-01.
    func check(_ option: String) throws {
        if let problem { throw ValidationError("\(option): \(problem)") }
    }
}

/// A small input file read whole: opened without waiting (O_NONBLOCK: a FIFO with no writer
/// must not hang the command), required to be a regular file, and bounded.
enum SmallInputFile {
    struct Failure: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    static func read(_ path: String, limit: Int) throws -> Data {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(reason: "cannot be opened: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw Failure(reason: "cannot be read: \(String(cString: strerror(errno)))") }
        if let kind = KeysProvide.notAFile(st.st_mode) { throw Failure(reason: "is \(kind), not a regular file") }
        guard Int(st.st_size) <= limit else { throw Failure(reason: "is \(st.st_size) bytes, more than the limit of \(limit)") }
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(reason: "cannot be read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { return out }
            out.append(contentsOf: buffer[0..<n])
            guard out.count <= limit else { throw Failure(reason: "is more than \(limit) bytes") }
        }
    }
}
