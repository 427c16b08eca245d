import ArgumentParser

/// Range checks for numeric options, with one message form. ArgumentParser accepts any
/// `Double` it can parse (`inf`, `nan`, `1e308`); converting such a value to an integer count
/// of milliseconds traps, so every option that becomes a duration or a count goes through here.
package enum NumericOption {
    /// Formats a value as typed back to the user (`inf`, `nan`, `1e+308`).
    package static func shown(_ v: Double) -> String { v.isNaN ? "nan" : v.isInfinite ? (v < 0 ? "-inf" : "inf") : "\(v)" }

    /// Requires a finite number within `range`.
    package static func check(_ value: Double, _ option: String, _ range: ClosedRange<Double>, unit: String = "seconds") throws {
        guard value.isFinite, range.contains(value) else {
            throw ValidationError("\(option) must be a number of \(unit) in \(shown(range.lowerBound))...\(shown(range.upperBound)), got \(shown(value))")
        }
    }

    package static func check(_ value: Int, _ option: String, _ range: ClosedRange<Int>, unit: String = "seconds") throws {
        guard range.contains(value) else {
            throw ValidationError("\(option) must be a number of \(unit) in \(range.lowerBound)...\(range.upperBound), got \(value)")
        }
    }

    /// One day: no reply, wait or interval on the command line is meant to be longer.
    package static let day: Double = 86_400
}
