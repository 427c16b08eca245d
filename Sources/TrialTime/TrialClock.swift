import ENProtocol
import PlatformSupport
import YAMLReader

/// The one clock of a rehearsal: a trial in compressed time, which every process of the trial
/// reads the same way (gaend on each board, `gaenctl app sync|submit`, `gaenctl collect`, the
/// publisher `gaenctl keys publish`). A real instant `realEpoch` (R0) is the trial instant
/// `trialEpoch` (T0), and trial time runs `scale` times faster than real time from there:
///
///     trial time = T0 + (real time - R0) x scale
///
/// So trial time is a function of the real clock alone: two processes started at different
/// moments, or a node restarted an hour later, read the same trial time (`--time-scale N`
/// alone starts again from real time at each start). Wall times only: timers and deadlines
/// (an HTTP timeout, the app's run time) stay real, except in gaend, whose whole schedule runs
/// on the scaled clock (`ScaledClock(trialClock:)`).
///
/// Its description is a small file (docs/runbook.md, "Rehearsal"), read by `load` and written by
/// `text`, the one reader and writer:
///
///     # gaend trial clock: trial time = trial_epoch + (real time - real_epoch) x scale
///     scale: 480
///     real_epoch: 2026-11-28T18:40:00Z
///     trial_epoch: 2026-03-02T00:00:00Z
public struct TrialClock: Sendable, Equatable, CustomStringConvertible {
    /// As `--time-scale`: at most 100000 (a day in under a second).
    public static let scales: ClosedRange<Double> = 1...100_000
    /// Trial times the key rules and the publisher accept: 2020-01-01...2100-01-01 UTC.
    public static let plausibleTimes: ClosedRange<Double> = 1_577_836_800...4_102_444_800
    /// The file is a few lines.
    public static let maximumFileSize = 4_096

    public let scale: Double
    /// R0, Unix seconds (whole seconds: the file's ISO 8601 has no fraction).
    public let realEpoch: Double
    /// T0, Unix seconds.
    public let trialEpoch: Double

    /// A clock that holds at real time `now`: scale in 1...100000, R0 not after `now` (a clock
    /// that has not started yet is a mistake in the file or in this machine's clock), and trial
    /// time from 2020 (T0) to 2100 (now).
    public init(scale: Double, realEpoch: Double, trialEpoch: Double, now: Double) throws(TrialClockError) {
        guard scale.isFinite, Self.scales.contains(scale) else { throw .scale(scale) }
        guard realEpoch.isFinite, trialEpoch.isFinite else { throw .notATime("an epoch is not a finite number") }
        guard realEpoch <= now else { throw .epochInFuture(realEpoch: realEpoch, now: now) }
        guard trialEpoch >= Self.plausibleTimes.lowerBound else { throw .trialTimeBefore2020(trialEpoch) }
        self.scale = scale
        self.realEpoch = realEpoch
        self.trialEpoch = trialEpoch
        let t = trialTime(real: now)
        guard t <= Self.plausibleTimes.upperBound else { throw .trialTimeAfter2100(t) }
    }

    /// The trial time at real time `real` (both Unix seconds).
    public func trialTime(real: Double) -> Double { trialEpoch + (real - realEpoch) * scale }

    /// The real time at which the trial reaches `trial`.
    public func realTime(trial: Double) -> Double { realEpoch + (trial - trialEpoch) / scale }

    public var description: String {
        "trial clock x\(Self.number(scale)) (\(Self.isoTime(trialEpoch)) at \(Self.isoTime(realEpoch)))"
    }

    // MARK: the file

    /// The file's text (`load` reads it back as this clock).
    public var text: String {
        """
        # gaend trial clock (docs/runbook.md, "Rehearsal"): every process of the trial reads this
        # file, so they all agree: trial time = trial_epoch + (real time - real_epoch) x scale.
        scale: \(Self.number(scale))
        real_epoch: \(Self.isoTime(realEpoch))
        trial_epoch: \(Self.isoTime(trialEpoch))

        """
    }

    /// Reads the clock file at `path`, as of real time `now` (the checks of `init`). Errors
    /// name the file, and the line where there is one.
    public static func load(path: String, now: Double) throws(TrialClockError) -> TrialClock {
        let bytes: [UInt8]
        do { bytes = try SmallFile.read(path, limit: maximumFileSize) } catch { throw .file(path: path, reason: "\(error)") }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .file(path: path, reason: "is not UTF-8 text") }
        do { return try parse(text, now: now) } catch { throw .file(path: path, reason: error.description) }
    }

    /// The clock of a file's text (see `text`): the three keys, each once; nothing else.
    public static func parse(_ text: String, now: Double) throws(TrialClockError) -> TrialClock {
        let root: YAMLNode?
        do { root = try YAML.compose(text) } catch { throw .syntax("\(error)") }
        guard case .mapping(let m) = root else { throw .syntax("expected the keys scale, real_epoch and trial_epoch") }
        var values: [String: (String, Int)] = [:]
        for entry in m.entries {
            guard let key = entry.key.string, ["scale", "real_epoch", "trial_epoch"].contains(key) else {
                throw .syntax("line \(entry.key.mark.line): unknown key '\(entry.key.string ?? "?")' (scale, real_epoch, trial_epoch)")
            }
            guard let value = entry.value.string else { throw .syntax("line \(entry.value.mark.line): '\(key)' must be a single value") }
            values[key] = (value, entry.value.mark.line)
        }
        func required(_ key: String) throws(TrialClockError) -> (String, Int) {
            guard let v = values[key] else { throw .syntax("'\(key)' is missing") }
            return v
        }
        let (scaleText, scaleLine) = try required("scale")
        guard let scale = Double(scaleText) else { throw .syntax("line \(scaleLine): scale '\(scaleText)' is not a number") }
        let (realText, realLine) = try required("real_epoch")
        let (trialText, trialLine) = try required("trial_epoch")
        guard let real = isoTime(realText) else { throw .syntax("line \(realLine): real_epoch '\(realText)' is not YYYY-MM-DDTHH:MM:SSZ") }
        guard let trial = isoTime(trialText) else { throw .syntax("line \(trialLine): trial_epoch '\(trialText)' is not YYYY-MM-DDTHH:MM:SSZ") }
        return try TrialClock(scale: scale, realEpoch: real, trialEpoch: trial, now: now)
    }

    // MARK: times as the file writes them

    /// `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds, rounded down).
    public static func isoTime(_ t: Double) -> String {
        let s = Int64(t.rounded(.down))
        let day = s >= 0 ? s / 86_400 : (s - 86_399) / 86_400
        let c = CivilDate(daysSinceEpoch: day)
        let r = s - day * 86_400
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = c.year >= 1000 ? "\(c.year)" : String(repeating: "0", count: 4 - "\(c.year)".count) + "\(c.year)"
        return "\(year)-\(two(c.month))-\(two(c.day))T\(two(r / 3600)):\(two(r / 60 % 60)):\(two(r % 60))Z"
    }

    /// The Unix time of `YYYY-MM-DDTHH:MM:SSZ` (exactly that form: UTC, no fraction), or nil.
    public static func isoTime(_ text: String) -> Double? {
        let u = Array(text.utf8)
        guard u.count == 20, u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-"), u[10] == UInt8(ascii: "T"),
              u[13] == UInt8(ascii: ":"), u[16] == UInt8(ascii: ":"), u[19] == UInt8(ascii: "Z") else { return nil }
        func digits(_ from: Int, _ count: Int) -> Int64? {
            var n: Int64 = 0
            for b in u[from..<(from + count)] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) else { return nil }
                n = n * 10 + Int64(b - UInt8(ascii: "0"))
            }
            return n
        }
        guard let y = digits(0, 4), let mo = digits(5, 2), let d = digits(8, 2), let h = digits(11, 2), let mi = digits(14, 2),
              let s = digits(17, 2), h < 24, mi < 60, s < 60 else { return nil }
        let date = CivilDate(year: y, month: mo, day: d)
        guard date.isValid else { return nil }
        return Double(date.daysSinceEpoch * 86_400 + h * 3600 + mi * 60 + s)
    }

    /// A scale as written: 480, not 480.0.
    static func number(_ x: Double) -> String {
        x == x.rounded() && abs(x) < 1e15 ? "\(Int64(x))" : "\(x)"
    }
}

/// A trial clock that cannot be used, said so that the file or the option can be fixed.
public enum TrialClockError: Error, Equatable, Sendable, CustomStringConvertible {
    case scale(Double)
    case notATime(String)
    case epochInFuture(realEpoch: Double, now: Double)
    case trialTimeBefore2020(Double)
    case trialTimeAfter2100(Double)
    case syntax(String)
    case file(path: String, reason: String)

    public var description: String {
        switch self {
        case .scale(let s): return "scale must be a number in 1...100000, got \(s)"
        case .notATime(let r): return r
        case .epochInFuture(let r, let now):
            return "real_epoch \(TrialClock.isoTime(r)) is in the future (this machine's clock says \(TrialClock.isoTime(now))): "
                + "the trial clock starts when real time reaches it; write the moment the rehearsal starts, or check this machine's clock"
        case .trialTimeBefore2020(let t):
            return "trial_epoch \(TrialClock.isoTime(t)) is before 2020-01-01: keys and packages of that time are refused as implausible"
        case .trialTimeAfter2100(let t):
            return "the trial clock has run to \(TrialClock.isoTime(t)), past 2100-01-01: a new real_epoch (or a smaller scale) is needed"
        case .syntax(let r): return r
        case .file(let path, let reason): return "trial clock \(path): \(reason)"
        }
    }
}
