import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PlatformSupport
#if canImport(Glibc)
import Glibc
#endif

/// The store's ledger (`<store>-ledger`): a small file beside the store, written with fsync
/// after the store commits, that records what the store must hold: the highest id committed
/// in each table whose rows must never vanish unnoticed (scans, key files, markers), and the
/// keys of recent days. It is what SQLite cannot give: a WAL frame with a bad checksum ends
/// SQLite's recovery there and every later commit vanishes without an error, and a WAL
/// deleted after a crash takes its commits along. Against the ledger, such a loss shows as a
/// gap (counted and logged), a day's key lost with the WAL comes back from the ledger (never
/// a second key), and a store set aside for damage is followed by a fresh one that keeps
/// advertising the same key. See docs/store.md.
///
/// Layout: two 4096-byte slots, written alternately, so a torn write loses at most the slot
/// being written. Slot: `"GAENLDG1" | generation u64 | length u32 | sealed | SHA-256 of the
/// bytes before it`; `sealed` is AES-256-GCM under the store key with the magic and the
/// generation as associated data. The digest tells rot (a damaged slot) from a wrong key (an
/// intact slot that does not open).
struct StoreLedger {
    struct Contents: Equatable {
        /// Highest committed id per table (scan, key_file, marker).
        var sequences: [String: Int64] = [:]
        /// Lowest id per table that may still be stored (the next id when it holds none),
        /// kept after every delete: with `sequences` it says how many records a store held
        /// when its file can no longer tell (a store set aside). Absent in version 1.
        var oldest: [String: Int64] = [:]
        /// The keys of recent days.
        var keys: [Int32: Data] = [:]

        /// How many records of `table` the store held as last recorded: every id from the
        /// oldest kept to the last committed (deletions go oldest first: retention and
        /// eviction by time), nil when not recorded.
        func held(_ table: String) -> Int? {
            guard let first = oldest[table], first > 0 else { return nil }
            let last = sequences[table] ?? 0
            return last >= first ? Int(clamping: last - first + 1) : 0
        }
    }

    enum ReadResult {
        case absent
        /// Neither slot is intact (rot, a torn first write).
        case damaged(String)
        /// An intact slot does not open under the key: the key is not the store's.
        case wrongKey
        case valid(Contents, generation: UInt64)
    }

    static let tables = ["scan", "key_file", "marker"]
    static let slotSize = 4096
    static let magic = Data("GAENLDG1".utf8)
    /// Keys kept: a retention period and more, within one slot.
    static let maximumKeys = 150

    let path: String
    let key: StoreKey
    /// fsync after each write (the store's `durability: full`).
    let sync: Bool
    private(set) var generation: UInt64 = 0
    private(set) var contents = Contents()

    static func path(forStore store: String) -> String { store + "-ledger" }

    init(storePath: String, key: StoreKey, sync: Bool) {
        path = Self.path(forStore: storePath)
        self.key = key
        self.sync = sync
    }

    /// Adopts what was read (the next write goes to the other slot).
    mutating func adopt(_ contents: Contents, generation: UInt64) {
        self.contents = contents
        self.generation = generation
    }

    /// Reads both slots; the intact one that opens with the highest generation wins.
    func read() -> ReadResult {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return errno == ENOENT ? .absent : .damaged("cannot open: \(SystemCallError.lastReason)") }
        defer { Glibc.close(fd) }
        var best: (Contents, UInt64)?
        var intactButClosed = false
        for slot in 0..<2 {
            var buffer = [UInt8](repeating: 0, count: Self.slotSize)
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, Self.slotSize, off_t(slot * Self.slotSize)) }
            guard n == Self.slotSize, let (generation, sealed) = Self.intactSlot(Data(buffer)) else { continue }
            guard let plain = try? AES256GCM.open(sealed, key: key.bytes, associatedData: Self.aad(generation)),
                  let contents = Self.decode(plain)
            else { intactButClosed = true; continue }
            if best == nil || generation > best!.1 { best = (contents, generation) }
        }
        if let best { return .valid(best.0, generation: best.1) }
        return intactButClosed ? .wrongKey : .damaged("neither copy is intact")
    }

    /// Writes `contents` to the older slot (creating the file, 0600, when missing).
    mutating func write(_ new: Contents) throws {
        var trimmed = new
        if trimmed.keys.count > Self.maximumKeys {
            for day in trimmed.keys.keys.sorted().dropLast(Self.maximumKeys) { trimmed.keys[day] = nil }
        }
        let next = generation + 1
        var slot = Self.magic
        Self.append(&slot, next)
        let sealed = try AES256GCM.seal(Self.encode(trimmed), key: key.bytes, associatedData: Self.aad(next), random: SecureRandom())
        Self.append(&slot, UInt32(sealed.count))
        slot.append(sealed)
        slot.append(SHA256.hash(slot))
        guard slot.count <= Self.slotSize else { throw LedgerError(description: "ledger record too large (\(slot.count) bytes)") }
        slot.append(Data(count: Self.slotSize - slot.count))
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw LedgerError(description: "cannot open \(path): \(SystemCallError.lastReason)") }
        defer { Glibc.close(fd) }
        // Both slots' blocks are allocated at once, so that later writes overwrite allocated
        // blocks and a full disk does not stop them.
        var st = stat()
        if fstat(fd, &st) == 0, st.st_size < 2 * Self.slotSize {
            let rc = posix_fallocate(fd, 0, off_t(2 * Self.slotSize))
            if rc != 0 { throw LedgerError(description: "cannot allocate \(path): \(SystemCallError.reason(code: rc))") }
        }
        let offset = off_t(Int(next % 2) * Self.slotSize)
        let n = slot.withUnsafeBytes { pwrite(fd, $0.baseAddress, Self.slotSize, offset) }
        guard n == Self.slotSize else {
            throw LedgerError(description: "cannot write \(path): \(n < 0 ? SystemCallError.lastReason : "short write")")
        }
        if sync && fdatasync(fd) != 0 {
            throw LedgerError(description: "cannot sync \(path): \(SystemCallError.lastReason)")
        }
        generation = next
        contents = trimmed
    }

    struct LedgerError: Error, CustomStringConvertible { var description: String }

    // MARK: Encoding

    static func aad(_ generation: UInt64) -> Data {
        var d = Data("gaend/v1/ledger".utf8)
        append(&d, generation)
        return d
    }

    /// The generation and sealed bytes of an intact slot (magic, bounds and digest right).
    static func intactSlot(_ slot: Data) -> (UInt64, Data)? {
        guard slot.count == slotSize, slot.prefix(8) == magic else { return nil }
        let generation = readInteger(slot, at: 8, as: UInt64.self)
        let length = Int(readInteger(slot, at: 16, as: UInt32.self))
        guard length <= slotSize - 20 - 32 else { return nil }
        let body = slot.prefix(20 + length)
        guard SHA256.hash(body) == slot.subdata(in: (20 + length)..<(52 + length)) else { return nil }
        return (generation, slot.subdata(in: 20..<(20 + length)))
    }

    /// `version 2 | per table in `tables`: seq i64 | per table: oldest i64 | key count u16 |
    /// count x (day i32 | key 16)`; version 1 has no oldest ids (still read).
    static func encode(_ c: Contents) -> Data {
        var d = Data([2])
        for t in tables { append(&d, UInt64(bitPattern: c.sequences[t] ?? 0)) }
        for t in tables { append(&d, UInt64(bitPattern: c.oldest[t] ?? 0)) }
        append(&d, UInt16(c.keys.count))
        for day in c.keys.keys.sorted() {
            append(&d, UInt32(bitPattern: day))
            d.append(c.keys[day]!)
        }
        return d
    }

    static func decode(_ d: Data) -> Contents? {
        let d = Data(d)
        guard d.count >= 1, d[0] == 1 || d[0] == 2 else { return nil }
        let perTable = d[0] == 2 ? 16 : 8
        guard d.count >= 1 + perTable * tables.count + 2 else { return nil }
        var c = Contents()
        var at = 1
        for t in tables {
            c.sequences[t] = Int64(bitPattern: readInteger(d, at: at, as: UInt64.self))
            at += 8
        }
        if d[0] == 2 {
            for t in tables {
                let first = Int64(bitPattern: readInteger(d, at: at, as: UInt64.self))
                if first > 0 { c.oldest[t] = first }
                at += 8
            }
        }
        let n = Int(readInteger(d, at: at, as: UInt16.self))
        at += 2
        guard d.count == at + n * 20 else { return nil }
        for _ in 0..<n {
            let day = Int32(bitPattern: readInteger(d, at: at, as: UInt32.self))
            c.keys[day] = d.subdata(in: (at + 4)..<(at + 20))
            at += 20
        }
        return c
    }

    static func append<T: FixedWidthInteger>(_ d: inout Data, _ v: T) {
        withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) }
    }

    static func readInteger<T: FixedWidthInteger>(_ d: Data, at offset: Int, as: T.Type) -> T {
        var v: T = 0
        for i in 0..<MemoryLayout<T>.size { v |= T(d[d.startIndex + offset + i]) << (8 * i) }
        return v
    }
}
