/// The wall time the node trusts for what cannot be undone: deleting by retention.
///
/// A synchronised clock can still be wrong (a bad NTP source, a faulty RTC restored at boot,
/// an operator's typo), and a clock stepped weeks ahead would make retention delete every
/// scan and key. So the node keeps a high-water mark of wall time that has *held*, persisted
/// in the store, and retention never runs ahead of it (docs/schedule.md, "Held time"):
///
/// - A reading on the same time line as the last accepted one (wall minus monotonic time
///   unchanged within `lineTolerance`), or one that moves the mark forward by at most
///   `stepBound` (a restart after a short power cut), raises the mark at once.
/// - A forward step beyond `stepBound` makes the clock *suspect*: the mark stays where it was
///   until the new time line has held for `confirmation` seconds of monotonic time. Then it
///   is genuine (a board kept in a drawer for 40 days) and the mark jumps to it.
/// - A backward step never lowers the mark, and retention keeps using it, so stepping back
///   deletes nothing early either. (No second key for a day is the store's rule: days that
///   had a key are remembered after the key is deleted.)
///
/// Pure: readings come in, the caller persists `highWater` when `observe` says it moved.
public struct HeldTime: Sendable {
    /// How far ahead of the mark a new time line may start and still be trusted at once.
    public let stepBound: Double
    /// Monotonic seconds a time line beyond `stepBound` must hold before the mark follows it.
    public let confirmation: Double
    /// How much wall minus monotonic time may drift (NTP slewing) on one time line.
    public let lineTolerance: Double

    /// The latest wall time that has held; nil until the first synchronised reading.
    public private(set) var highWater: Double?
    /// The current time line: wall minus monotonic time, and when (monotonic) it began.
    private var line: (offset: Double, since: Double)?
    /// Whether the current line started beyond `stepBound` ahead of the mark and has not yet
    /// held for `confirmation`.
    public private(set) var suspect = false

    public init(highWater: Double?, stepBound: Double = 86_400, confirmation: Double = 3_600, lineTolerance: Double = 2) {
        self.highWater = highWater
        self.stepBound = stepBound
        self.confirmation = confirmation
        self.lineTolerance = lineTolerance
    }

    /// Takes a reading of the synchronised clock. Returns true when `highWater` moved (the
    /// caller persists it).
    public mutating func observe(wall: Double, monotonic: Double) -> Bool {
        guard wall.isFinite, monotonic.isFinite else { return false }
        let offset = wall - monotonic
        var newLine = false
        if let l = line, abs(offset - l.offset) <= lineTolerance {
            line = (offset, l.since) // follow slewing
        } else {
            line = (offset, monotonic)
            newLine = true
        }
        guard let mark = highWater else {
            highWater = wall
            suspect = false
            return true
        }
        if newLine {
            // A line that starts within the bound (or behind the mark) is trusted at once.
            suspect = wall > mark + stepBound
        } else if suspect, let since = line?.since, monotonic - since >= confirmation {
            suspect = false
        }
        guard !suspect, wall > mark else { return false }
        highWater = wall
        return true
    }

    /// The time retention may use for a reading: never ahead of the held mark.
    public func trustedNow(wall: Double) -> Double {
        guard let mark = highWater else { return wall }
        return min(wall, mark)
    }
}
