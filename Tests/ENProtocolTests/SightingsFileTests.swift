import Foundation
import Testing
@testable import ENProtocol

/// The sightings export contract (docs/sightings-format.md) as the matcher reads it.
@Suite struct SightingsFileTests {
    let rpi = "00112233445566778899aabbccddeeff"

    @Test func csvWithScansEmptyScanRowsAndExtraColumns() throws {
        let csv = """
            site,time,rpi,aem,rssi,scan_start,scan_end,rssi_correction,node
            bus,1700000000.5,\(rpi),01020304,-70,1700000000,1700000004,3,n1
            bus,1700000300,,,,1700000300,1700000304,,n1
            bus,1700000001,\(rpi.uppercased()),0a0b0c0d,-71,1700000000,1700000004,,n1

            """
        let log = try SightingsFile.parse(Data(csv.utf8), requiring: .windows)
        #expect(log.hasScanColumns)
        #expect(log.scans == [Scan(start: 1_700_000_000, end: 1_700_000_004, node: "n1"), Scan(start: 1_700_000_300, end: 1_700_000_304, node: "n1")])
        #expect(log.sightings.count == 2)
        let s = log.sightings[0]
        #expect(s.time == 1_700_000_000.5 && s.rssi == -70 && s.rssiCorrection == 3 && s.scanIndex == 0)
        #expect(s.rpi.hexString == rpi && s.aem.hexString == "01020304")
        #expect(log.sightings[1].rpi == s.rpi && log.sightings[1].rssiCorrection == 0)
    }

    @Test func matchingNeedsOnlyTheFirstFourColumns() throws {
        let log = try SightingsFile.parse(Data("time,rpi,aem,rssi\n1700000000,\(rpi),01020304,-60\n".utf8))
        #expect(log.sightings.count == 1 && !log.hasScanColumns && log.sightings[0].scanIndex == nil)
        #expect(throws: SightingsFormatError.missingColumn("scan_start")) {
            try SightingsFile.parse(Data("time,rpi,aem,rssi\n".utf8), requiring: .windows)
        }
    }

    @Test func jsonLines() throws {
        let lines = """
            {"time": 1700000000, "rpi": "\(rpi)", "aem": "01020304", "rssi": -60, "scanStart": 1700000000, "scanEnd": 1700000004, "rssiCorrection": -2}
            {"time": 1700000300, "rpi": null, "aem": null, "rssi": null, "scanStart": 1700000300, "scanEnd": 1700000304}
            """
        let log = try SightingsFile.parse(Data(lines.utf8), requiring: .windows)
        #expect(log.sightings.count == 1 && log.scans.count == 2 && log.sightings[0].rssiCorrection == -2)
    }

    @Test func quotedFilesGoThroughTheCSVLibraryWithTheSameResult() throws {
        let header = "time,rpi,aem,rssi,scan_start,scan_end,node\r\n"
        let plain = header + "1700000000,\(rpi),01020304,-70,1700000000,1700000004,front\r\n"
        let quoted = header + "1700000000,\(rpi),01020304,-70,1700000000,1700000004,\"front, left\"\r\n"
        let a = try SightingsFile.parse(Data(plain.utf8)), b = try SightingsFile.parse(Data(quoted.utf8))
        #expect(a.sightings == b.sightings && a.sightings.count == 1)
        #expect(a.scans.first?.node == "front" && b.scans.first?.node == "front, left")
        // Errors name the same line either way.
        let bad = header + "1700000000,\(rpi),01020304,-70,1700000000,1700000004,\"x\"\r\n1700000000,zz,01020304,-70,1,2,y\r\n"
        #expect(throws: SightingsFormatError.badField(line: 3, column: "rpi", value: "zz", expected: "32 hex digits")) {
            try SightingsFile.parse(Data(bad.utf8))
        }
    }

    @Test func badInputSaysWhereAndWhat() {
        let cases: [(String, SightingsFormatError)] = [
            ("", .empty),
            ("time,rpi,aem\n", .missingColumn("rssi")),
            ("time,rpi,aem,rssi\n1700000000,abcd,01020304,-60\n",
             .badField(line: 2, column: "rpi", value: "abcd", expected: "32 hex digits")),
            ("time,rpi,aem,rssi\n1700000000,\(rpi),0102030,-60\n",
             .badField(line: 2, column: "aem", value: "0102030", expected: "8 hex digits")),
            ("time,rpi,aem,rssi\n1700000000,\(rpi),01020304,loud\n",
             .badField(line: 2, column: "rssi", value: "loud", expected: "an integer dBm in -127...20")),
            ("time,rpi,aem,rssi\nyesterday,\(rpi),01020304,-60\n",
             .badField(line: 2, column: "time", value: "yesterday", expected: "Unix seconds")),
            ("time,rpi,aem,rssi\n1700000000,\(rpi),01020304\n",
             .malformedCSV(line: 2, reason: "expected 4 fields as in the header, got 3")),
            ("time,rpi,aem,rssi,scan_start,scan_end\n1700000000,\(rpi),01020304,-60,1700000004,1700000000\n",
             .badField(line: 2, column: "scan_end", value: "1700000000", expected: "a time not before scan_start 1700000004")),
            ("time,rpi,aem,rssi,scan_start\n", .missingColumn("scan_end")),
            ("time,rpi,aem,rssi,rssi_correction\n1700000000,\(rpi),01020304,-60,x\n",
             .badField(line: 2, column: "rssi_correction", value: "x", expected: "an integer dB in -100...100")),
        ]
        for (input, expected) in cases {
            #expect(throws: expected, "\(input)") { try SightingsFile.parse(Data(input.utf8)) }
        }
    }

    @Test func recordsKeepFileOrderEmptyScansNodeAndSite() throws {
        let csv = """
            time,rpi,aem,rssi,scan_start,scan_end,rssi_correction,node,site
            1700000300,,,,1700000300,1700000304,2,n1,bus 7
            1700000000.5,\(rpi),01020304,-70,1700000000,1700000004,2,n1,bus 7
            """
        let records = try SightingsFile.records(Data(csv.utf8))
        #expect(records.count == 2)
        #expect(records[0].isEmptyScan && records[0].rssi == nil && records[0].scanStart == 1_700_000_300 && records[0].site == "bus 7")
        #expect(records[1].rpi?.hexString == rpi && records[1].aem?.hexString == "01020304" && records[1].rssi == -70)
        #expect(records[1].rssiCorrection == 2 && records[1].node == "n1" && records[1].site == "bus 7")
        let json = #"{"time": 1700000000, "rpi": null, "aem": null, "rssi": null, "scanStart": 1700000000, "scanEnd": 1700000004, "node": "n1", "site": "carriage 3"}"#
        #expect(try SightingsFile.records(Data(json.utf8)) == [SightingsRecord(time: 1_700_000_000, rpi: nil, aem: nil, rssi: nil, scanStart: 1_700_000_000, scanEnd: 1_700_000_004, node: "n1", site: "carriage 3")])
    }

    @Test func anEmptyScanRowMustBeEmpty() {
        #expect(throws: SightingsFormatError.badField(line: 2, column: "rssi", value: "-60", expected: "empty, as rpi is empty (an empty-scan row)")) {
            try SightingsFile.parse(Data("time,rpi,aem,rssi\n1700000000,,,-60\n".utf8))
        }
    }

    @Test func theWriterWritesWhatTheReaderReadsWithTheAddress() throws {
        let records = [
            SightingsRecord(time: 1_700_000_000.25, rpi: try RollingProximityIdentifier(hex: rpi), aem: try AssociatedEncryptedMetadata(hex: "0a0b0c0d"),
                            rssi: -71, scanStart: 1_700_000_000, scanEnd: 1_700_000_004, rssiCorrection: -3, node: "board, 1", site: "bus \"7\"",
                            address: "5A:12:34:56:78:9A"),
            SightingsRecord(time: 1_700_000_250, rpi: nil, aem: nil, rssi: nil, scanStart: 1_700_000_250, scanEnd: 1_700_000_254.5,
                            rssiCorrection: -3, node: "board, 1", site: "bus \"7\""),
        ]
        for format in [SightingsFileWriter.Format.csv, .jsonl] {
            let w = SightingsFileWriter(format: format)
            let text = w.header + records.map(w.row).joined()
            #expect(try SightingsFile.records(Data(text.utf8)) == records, "\(format)")
        }
        #expect(SightingsFileWriter(format: .csv).header == "time,rpi,aem,rssi,scan_start,scan_end,rssi_correction,node,site,address\n")
        // Addresses are read in either case and normalised; a malformed one is refused by name.
        let lower = "time,rpi,aem,rssi,address\n1,\(rpi),01020304,-60,5a:12:34:56:78:9a\n"
        #expect(try SightingsFile.records(Data(lower.utf8))[0].address == "5A:12:34:56:78:9A")
        #expect(throws: SightingsFormatError.badField(line: 2, column: "address", value: "5A:12", expected: "a Bluetooth address such as 5A:12:34:56:78:9A")) {
            try SightingsFile.parse(Data("time,rpi,aem,rssi,address\n1,\(rpi),01020304,-60,5A:12\n".utf8))
        }
        // Old files (no address column) still read, with no address.
        #expect(try SightingsFile.records(Data("time,rpi,aem,rssi\n1,\(rpi),01020304,-60\n".utf8))[0].address == nil)
    }
}

/// `parse` reads unquoted CSV from the raw bytes (SightingsFileRaw.swift), taking only the
/// plain forms and handing every other row to `validate`: it must read every file exactly as
/// the String path does (the same sightings, scans and errors), whatever mix of forms it holds.
@Suite struct SightingsRawReaderTests {
    /// The String path: every row split into Strings and validated.
    static func stringPath(_ data: Data) throws -> SightingsLog {
        var b = SightingsFile.Builder()
        b.hasScanColumns = try SightingsFile.forEachRow(data, startingWith: data.first!) { try b.add(SightingsFile.validate($0)) }
        return b.finish()
    }

    static func same(_ data: Data, _ note: String) {
        let raw = Result { try SightingsFile.parse(data) }, slow = Result { try stringPath(data) }
        switch (raw, slow) {
        case (.success(let a), .success(let b)):
            #expect(a.sightings == b.sightings, "\(note)")
            #expect(a.scans == b.scans && a.hasScanColumns == b.hasScanColumns, "\(note)")
        case (.failure(let a), .failure(let b)):
            #expect(a as? SightingsFormatError == b as? SightingsFormatError, "\(note)")
        default:
            Issue.record("\(note): raw \(raw), String path \(slow)")
        }
    }

    @Test func rawReaderReadsAsTheStringPath() {
        var rng = SeededRandom(seed: 0xC5F)
        func pick<T>(_ xs: [T]) -> T { xs[Int(rng.next() % UInt64(xs.count))] }
        func hex(_ n: Int) -> String { (0..<n).map { _ in String(format: "%02x", Int(rng.next() & 0xff)) }.joined() }
        let headers = ["time,rpi,aem,rssi", "site,time,rpi,aem,rssi,scan_start,scan_end,rssi_correction,node",
                       "time,rpi,aem,rssi,scan_start,scan_end,rssi_correction,node,site,address"]
        for file in 0..<300 {
            let header = pick(headers)
            let names = header.split(separator: ",").map(String.init)
            var text = header + pick(["\n", "\r\n"])
            // Most files plain; some with one odd form in one column, some with errors.
            let odd = file % 3 == 0 ? pick(names) : ""
            for row in 0..<Int(1 + rng.next() % 40) {
                let t0 = 1_700_000_000 + Int(rng.next() % 2_000_000)
                var fields: [String] = []
                let oddHere = !odd.isEmpty && rng.next() % 4 == 0
                for n in names {
                    var v: String
                    switch n {
                    case "time": v = pick(["\(t0)", "\(t0).\(rng.next() % 1000)", "\(t0).5", "\(t0).25"])
                    case "rpi": v = hex(16)
                    case "aem": v = hex(4)
                    case "rssi": v = "\(-Int(rng.next() % 100))"
                    case "scan_start": v = "\(t0 - t0 % 240)"
                    case "scan_end": v = "\(t0 - t0 % 240 + 4)"
                    case "rssi_correction": v = pick(["", "0", "3", "-7"])
                    case "node": v = pick(["", "n1", "n2", "board-\(row % 3)"])
                    case "site": v = pick(["", "bus", "office 2"])
                    case "address": v = pick(["", "5A:12:34:56:78:9A", "c0:ff:ee:00:11:22"])
                    default: v = ""
                    }
                    if oddHere && n == odd {
                        v = pick([" \(v)", "\(v) ", "\t\(v)", v.uppercased(), "0x" + v, "+\(v)", "\(v)0", String(v.dropLast()), "",
                                  "1e9", "1700000000.", ".5", "17000000001234567.5", "-1", "nan", "inf", "0123", "99", "-128", "101",
                                  "-101", "5a:12:34:56:78:9", "5A-12-34-56-78-9A", "+f:12:34:56:78:9a", "zz"])
                    }
                    fields.append(v)
                }
                if rng.next() % 25 == 0, let r = names.firstIndex(of: "rpi") {
                    // An empty-scan row (valid with scan columns, an error otherwise).
                    fields[r] = ""
                    if let a = names.firstIndex(of: "aem") { fields[a] = "" }
                    if let s = names.firstIndex(of: "rssi") { fields[s] = "" }
                    if let a = names.firstIndex(of: "address") { fields[a] = "" }
                }
                if rng.next() % 40 == 0 { text += "\n" } // a blank line
                if rng.next() % 200 == 0 { fields.append("extra") } // a wrong field count
                text += fields.joined(separator: ",") + pick(["\n", "\r\n"])
            }
            if rng.next() % 5 == 0 { text.removeLast() } // no newline at the end
            Self.same(Data(text.utf8), "file \(file):\n\(text.prefix(600))")
        }
    }

    @Test func plainDecimalsAreTheDoublesStringsGive() {
        var rng = SeededRandom(seed: 7)
        for _ in 0..<20_000 {
            let whole = rng.next() % 10_000_000_000, digits = Int(rng.next() % 6)
            let frac = (0..<digits).map { _ in String(rng.next() % 10) }.joined()
            let s = digits == 0 ? "\(whole)" : "\(whole).\(frac)"
            let v = Array(s.utf8).withUnsafeBufferPointer { SightingsFile.decimal($0.baseAddress!, 0, $0.count) }
            #expect(v == Double(s), "\(s)")
        }
    }
}

/// The quoted-CSV rows (CSVRows, our own since CSV.swift left: it imports full Foundation) are
/// what CSV.swift 2.5 read, its leniencies included (checked against it on 200,000 random
/// strings of quotes, commas, CR, LF and multi-byte characters before it was removed).
@Suite struct CSVRowsTests {
    func rows(_ text: String) -> [[String]] {
        var it = CSVRows(text)
        var out: [[String]] = []
        while let r = it.next() { out.append(r) }
        return out
    }

    @Test func rfc4180() {
        #expect(rows("") == [])
        #expect(rows("a,b\n1,2\n") == [["a", "b"], ["1", "2"]])
        #expect(rows("a,b\r\n1,2") == [["a", "b"], ["1", "2"]])
        #expect(rows("a\rb\n\nc") == [["a"], ["b"], [""], ["c"]])
        #expect(rows("\"x, y\",\"say \"\"hi\"\"\"\n") == [["x, y", "say \"hi\""]])
        #expect(rows("\"two\nlines\",z\r\n") == [["two\nlines", "z"]])
        #expect(rows("a,") == [["a", ""]])
        #expect(rows("a,\"\"") == [["a", ""]])
        #expect(rows("\"é😀\",\"\"\"\"") == [["é😀", "\""]])
    }

    @Test func csvSwiftsLeniencies() {
        #expect(rows("a\"b,c") == [["a\"b", "c"]]) // a quote inside an unquoted field is a character
        #expect(rows("\"open, to the end") == [["open, to the end"]]) // unterminated: ends at the end
        #expect(rows("\"ab\"cd\",e") == [["ab\"d", "e"]]) // after a closing quote, one character is dropped
        #expect(rows("\"ab\"é\"\n") == [["ab\""]])
        #expect(rows(" \"a\" ,b") == [[" \"a\" ", "b"]]) // quoting only at the field's first character
    }
}
