import ENProtocol
import Foundation
import RiskEngines
import Testing
@testable import TrialKit

@Suite("Contacts from readings over time")
struct ReadingContactsTests {
    /// A pair 20 minutes at 1 m, then 20 minutes at 3 m, a reading every 10 s; the receiver also
    /// hears a far transmitter now and then. Starts on a scan boundary of a 300 s grid.
    func walk() -> [ReadingContacts.Reading] {
        let t0 = 1_600_000_200.0 // 2020-09-13T12:16:40Z, a multiple of 300
        var out: [ReadingContacts.Reading] = []
        for k in 0..<240 {
            let t = t0 + Double(k) * 10
            let near = k < 120
            out.append(.init(time: t, receiver: "rx", transmitter: "tx", distance: near ? 1 : 3, attenuation: near ? (k % 2 == 0 ? 50 : 53) : 70,
                             scenario: "corridor"))
        }
        out.append(.init(time: t0 + 610, receiver: "rx", transmitter: "far", distance: 8, attenuation: 90, scenario: "corridor"))
        return out
    }

    @Test("Windows as the framework forms them: a scan instance per 4 s scan, mean rounded half up, 300 s since the last scan, 30-minute windows")
    func windowsFromTheGrid() throws {
        let contacts = try ReadingContacts.contacts(walk())
        #expect(contacts.map(\.label) == ["corridor rx hears far", "corridor rx hears tx"])
        let c = contacts[1]
        // 40 minutes of scans every 300 s: 8 scans; each 4 s scan holds the reading at its start
        // (readings every 10 s): the 1 m scans see 50 dB (even readings), the 3 m ones 70 dB.
        let instances = c.windows.flatMap(\.scanInstances)
        #expect(instances.count == 8)
        #expect(instances.map(\.typicalAttenuationDb) == [50, 50, 50, 50, 70, 70, 70, 70])
        // The first scan has no earlier scan of the receiver: the framework's default 120 s.
        #expect(instances.map(\.secondsSinceLastScan) == [120, 300, 300, 300, 300, 300, 300, 300])
        // 30-minute windows: the first six scans (0-25 min), then the last two.
        #expect(c.windows.map(\.scanInstances.count) == [6, 2])
        #expect(c.cluster == "corridor")
        #expect(c.distance == 1)
        // The far transmitter was heard once, between scans: no window, but a contact.
        #expect(contacts[0].windows.isEmpty)
    }

    @Test("The whole interval as the scan: every reading counts, the mean of 30 readings rounded half up")
    func wholeInterval() throws {
        var s = ReadingContacts.Settings()
        s.scanSeconds = nil
        let c = try ReadingContacts.contacts(walk(), settings: s)[1]
        // 15 readings of 50 and 15 of 53 per 1 m scan: 51.5 -> 52 (half up, as Java's Math.round).
        #expect(c.windows.flatMap(\.scanInstances).map(\.typicalAttenuationDb) == [52, 52, 52, 52, 70, 70, 70, 70])
        #expect(c.windows.flatMap(\.scanInstances).map(\.minAttenuationDb).prefix(4) == [50, 50, 50, 50])
        // The far one-off reading is now in a scan.
        #expect(try ReadingContacts.contacts(walk(), settings: s)[0].windows.count == 1)
    }

    @Test("Time-varying ground truth: 20 minutes within 1.5 m is close for 15 minutes, not for 25")
    func closeForMinutes() throws {
        let contacts = try ReadingContacts.contacts(walk())
        let tx = contacts[1]
        #expect(tx.secondsWithin(1.5) == 1_200)
        #expect(tx.secondsWithin(3) == 2_400)
        let rule = try ReplayRule.parse("swisscovid") { _ in Data() }
        let fifteen = try Replay.run(contacts, rules: [rule], closeContact: 1.5, closeFor: 15 * 60)[0]
        #expect(fifteen.close == 1 && fifteen.far == 1 && fifteen.closeForMinutes == 15)
        let twentyFive = try Replay.run(contacts, rules: [rule], closeContact: 1.5, closeFor: 25 * 60)[0]
        #expect(twentyFive.close == 0 && twentyFive.far == 2)
        // Through the contacts file and back: the distance over time survives.
        let back = try ContactsFile.parse(try ContactsFile.encode(contacts), file: "x")
        #expect(back == contacts)
        // A contact of one distance cannot be judged by time.
        #expect(throws: ReplayError.self) {
            try Replay.run([Contact(label: "x", distance: 1, windows: [])], rules: [rule], closeContact: 1.5, closeFor: 60)
        }
    }
}
