import ENProtocol
import HCIHost
import Logging
import PlatformSupport
import GaenStore

/// What the node's schedule does (`ScheduleEffects`): a rotation advertises a beacon made from
/// the day's key in the store, a finished scan is recorded in the store with the RSSI
/// correction in use, every synchronised reading moves the clock mark; the status board's
/// counters and the node's events follow. Whether and when the schedule runs is
/// `NodeScheduleRunner`'s. Every store call is awaited (the store runs its statements on a
/// thread of its own); matching, exports and caller I/O never run here.
package struct NodeScheduleEffects: ScheduleEffects {
    let store: NodeStore
    let radio: RadioOwner
    let calibration: CalibrationInUse
    let clockMark: ClockMark
    let board: NodeStatusBoard
    let events: NodeEvents
    let logger: Logger

    package func perform(_ actions: [ScheduleAction], at reading: ClockReading) async {
        let usableChanged = board.update { f in
            defer { f.clockUsable = reading.synchronized }
            return f.clockUsable != reading.synchronized
        }
        if usableChanged { await events.statusChanged() }
        if reading.synchronized { await observeClockMark(reading) }
        await radioEffects.perform(actions, at: reading)
        await events.statusChanged()
    }

    package func perform(_ action: ScheduleAction, at reading: ClockReading) async {
        await perform([action], at: reading)
    }

    /// The schedule stopped: the clock mark is kept.
    func stopped() async {
        _ = try? await clockMark.save()
    }

    /// Follows the wall clock into the clock mark; says so when it becomes or stops being
    /// suspect.
    private func observeClockMark(_ reading: ClockReading) async {
        let (suspect, changed) = clockMark.observe(reading)
        guard changed else { return }
        if suspect {
            logger.warning("the clock jumped far ahead of the latest time that held: retention waits until the new time holds",
                           metadata: ["clock.wall": "\(reading.wall)", "clock.heldTime": "\(clockMark.highWater ?? 0)",
                                      "clock.confirmationMinutes": "\(clockMark.confirmationMinutes)"])
        } else {
            logger.notice("the clock's new time has held (or came back): retention follows it",
                          metadata: ["clock.heldTime": "\(clockMark.highWater ?? 0)"])
        }
        await events.statusChanged()
    }

    /// The radio effects gaend runs (the same as `gaenctl radio` and the benchmark): beacons
    /// from the day's key in the store, finished scans into the store.
    private var radioEffects: RadioScheduleEffects {
        let calibration = self.calibration
        return RadioScheduleEffects(radio: radio,
                                    beacon: { slot, reading in await self.beacon(for: slot, now: reading.wall) },
                                    rssiCorrection: { calibration.current.rssiCorrection },
                                    scanned: { scan in await self.record(scan) })
    }

    /// The beacon of `slot`: the day's key from the store (created on first need), the RPI of
    /// the slot's interval, a fresh address. Nil keeps what is on air (or, for a day whose
    /// key is retired, takes it off air).
    private func beacon(for slot: AdvertisingSlot, now: Double) async -> GAENBeacon? {
        // A FULL fsync can take seconds on a busy disk: awaited, on the store's thread.
        do { try await clockMark.save() } catch {
            logger.warning("cannot store the clock mark", metadata: ["error": "\(error)"])
        }
        let store = self.store, trusted = clockMark.trustedNow(wall: now)
        _ = try? await store.retain(now: trusted)
        let tek: TemporaryExposureKey
        do {
            tek = try await store.keyStore.key(for: slot.day, now: now)
            board.update { $0.retiredDay = nil }
        } catch StoreError.keyDayRetired(let day) {
            // The clock went back into a day whose key is gone: advertising another day's RPI
            // would be wrong and a second key for the day is never made, so go off air.
            let first = board.update { f in
                defer { f.retiredDay = slot.day }
                return f.retiredDay == nil
            }
            if first { logger.error("\(StoreError.keyDayRetired(day: day))") }
            await radio.stopAdvertising()
            return nil
        } catch {
            // Keep what is on air: a node that cannot store a new day's key must not
            // advertise a key it could not report later.
            board.update { $0.storageProblem = "\(error)" }
            logger.error("cannot get the day's key; keeping the current advertisement", metadata: ["error": "\(error)"])
            return nil
        }
        do {
            var random = SecureRandom()
            let beacon = try GAENBeaconFactory().beacon(tek: tek, interval: slot.interval, metadata: calibration.metadata, random: &random)
            board.update { f in
                f.advertisements += 1
                f.lastBeacon = beacon
            }
            logger.debug("rotating", metadata: ["slot": "\(slot)"])
            return beacon
        } catch {
            logger.error("cannot make the beacon; keeping the current advertisement", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Keeps a finished scan (already carrying the RSSI correction in use) in the store.
    private func record(_ record: Scan) async {
        board.update { f in
            f.scans += 1
            f.sightings += UInt64(record.sightings.count)
            f.lastScanEnd = record.end
        }
        do {
            try await store.scanStore.record(record)
            let resumed = board.update { f in
                defer { f.storageProblem = nil }
                return f.storageProblem != nil
            }
            if resumed { logger.info("storing resumed") }
        } catch {
            let first = board.update { f in
                defer { f.storageProblem = "\(error)" }
                return f.storageProblem == nil
            }
            if first { logger.error("cannot store the scan", metadata: ["error": "\(error)"]) }
        }
        await events.scanFinished(record)
    }
}
