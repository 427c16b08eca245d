#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Everything the store reports. Names are stable: the D-Bus layer maps them to named errors
/// and the status property ("storage error"). No case ever carries key material.
package enum StoreError: Error, Equatable, CustomStringConvertible {
    /// Neither a key file nor a systemd credential was given.
    case noKeySource(credentialPath: String?)
    case keyFileUnreadable(path: String, reason: String)
    /// The key file is readable by group or others (mode shown in octal).
    case keyFileTooOpen(path: String, mode: String)
    case keyFileWrongOwner(path: String, owner: UInt32, expected: UInt32)
    case keyFileMalformed(path: String, reason: String)
    case keyFileExists(path: String)
    /// The key does not open this store. Nothing was written to it.
    case wrongKey(path: String)
    /// The file is not a gaend store (another SQLite database, or not SQLite at all).
    case notAStore(path: String, reason: String)
    /// The store was written by a newer gaend whose schema this one does not know.
    case newerSchema(path: String, unknownMigrations: [String])
    /// The disk (or the store's page limit) is full; `pendingScans` scan records wait in
    /// memory and are written, oldest first, once space returns.
    case diskFull(pendingScans: Int)
    /// A record failed authentication or does not parse: tampering, corruption, or a bug.
    case corruptRecord(table: String, id: Int64, reason: String)
    case invalidRecord(reason: String)
    /// The store file exists but is empty, and the state directory is not new: not a store
    /// gaend made (it creates stores atomically), so it is not silently replaced.
    case emptyStoreFile(path: String)
    /// The day had a key that is gone (deleted by retention or quarantined): the clock went
    /// back into it. No second key is ever made for a day.
    case keyDayRetired(day: Int32)
    /// Any other SQLite failure, with SQLite's code and message.
    case database(code: Int32, message: String)

    package var description: String {
        switch self {
        case .noKeySource(let cred):
            return "no store key: pass a key file (--store-key-file) or run under systemd with the credential "
                + (cred ?? "$CREDENTIALS_DIRECTORY/store-key")
        case .keyFileUnreadable(let p, let r): return "store key file \(p) cannot be read: \(r)"
        case .keyFileTooOpen(let p, let m):
            return "store key file \(p) has mode \(m): group or others may read it; run `chmod 600 \(p)`"
        case .keyFileWrongOwner(let p, let o, let e): return "store key file \(p) belongs to uid \(o), not to the daemon's uid \(e)"
        case .keyFileMalformed(let p, let r): return "store key file \(p) is malformed: \(r)"
        case .keyFileExists(let p): return "store key file \(p) already exists; refusing to overwrite a key"
        case .wrongKey(let p): return "the store key does not open \(p) (wrong key); the store was not modified"
        case .notAStore(let p, let r): return "\(p) is not a gaend store: \(r)"
        case .newerSchema(let p, let m): return "\(p) was written by a newer gaend (unknown schema migrations: \(m.joined(separator: ", ")))"
        case .diskFull(let n): return "disk full: the store cannot grow; \(n) scan record(s) wait in memory for space"
        case .corruptRecord(let t, let id, let r): return "store record \(t)#\(id) is corrupt: \(r)"
        case .invalidRecord(let r): return "invalid record: \(r)"
        case .emptyStoreFile(let p):
            return "\(p) is empty (0 bytes) but its directory holds other files: this is not a store gaend made; "
                + "restore the store from a backup, or remove the file to start a new, empty store"
        case .keyDayRetired(let d):
            return "the clock says UTC day \(d), whose key was deleted (retention) or quarantined; gaend never makes a second key for a day "
                + "(the clock may have been stepped back): not advertising until the next day or a corrected clock"
        case .database(let c, let m): return "SQLite error \(c): \(m)"
        }
    }

    /// The stable error name the D-Bus layer exposes (org.gaend.Error.<name>).
    package var name: String {
        switch self {
        case .noKeySource: return "NoStoreKey"
        case .keyFileUnreadable, .keyFileTooOpen, .keyFileWrongOwner, .keyFileMalformed, .keyFileExists: return "StoreKeyFile"
        case .wrongKey: return "WrongStoreKey"
        case .notAStore: return "NotAStore"
        case .newerSchema: return "NewerStoreSchema"
        case .diskFull: return "DiskFull"
        case .corruptRecord: return "CorruptRecord"
        case .invalidRecord: return "InvalidRecord"
        case .emptyStoreFile: return "EmptyStoreFile"
        case .keyDayRetired: return "KeyDayRetired"
        case .database: return "StorageError"
        }
    }
}
