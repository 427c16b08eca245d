import Foundation

extension RadioClock {
    /// The radio's view of a node clock: protocol time is the clock's wall time, sleeps are
    /// measured on its monotonic time (so a wall-clock step neither fires nor stretches them).
    public init(_ clock: any NodeClock) {
        self.init(now: { clock.wallTime() }, sleep: { seconds in try await clock.sleep(for: seconds) })
    }
}
