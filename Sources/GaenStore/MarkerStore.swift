import ENProtocol
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import GaenSQLite
import Logging
import PlatformSupport

/// The research markers (a labelled time and distance), for async callers.
package struct MarkerStore: Sendable {
    let store: NodeStore

    @discardableResult
    package func add(_ marker: Marker) async throws -> Int64 { try await store.perform { try $0.addMarker(marker) } }

    /// The markers in [from, to) with their ids.
    package func records(from: Double, to: Double) async throws -> [MarkerRecord] {
        try await store.perform { try $0.markerRecords(from: from, to: to).map { MarkerRecord(id: $0.id, marker: $0.marker) } }
    }
}

/// A stored marker and its id.
package struct MarkerRecord: Sendable, Equatable {
    package var id: Int64
    package var marker: Marker
}

extension NodeStore {
    // MARK: Markers

    @discardableResult
    package func addMarker(_ marker: Marker) throws -> Int64 {
        guard marker.time.isFinite else { throw StoreError.invalidRecord(reason: "marker time is not finite") }
        let payload = try JSONEncoder().encode(marker)
        return try locked {
            let id = try write { db in
                let id = try Self.nextID(db, table: "marker")
                try db.execute("INSERT INTO marker (id, time, sealed) VALUES (?, ?, ?)",
                               [.integer(id), .real(marker.time), .bytes(seal(payload, aad: Self.aad("marker", [id, Self.bits(marker.time)])))])
                return id
            }
            ledgerCommitted("marker", upTo: id)
            return id
        }
    }

    package func markers(from: Double, to: Double) throws -> [Marker] {
        try markerRecords(from: from, to: to).map(\.marker)
    }

    /// The markers with their ids (what `addMarker` returned), for Research1.GetMarkers.
    package func markerRecords(from: Double, to: Double) throws -> [(id: Int64, marker: Marker)] {
        try readSkippingRotten("marker",
                               sql: "SELECT id, time, sealed FROM marker WHERE time >= ? AND time < ? AND \(Self.notQuarantined("marker")) ORDER BY time, id",
                               arguments: [.real(from), .real(to)]) { row in
            let id = row.int64(0), time = row.double(1)
            let plain = try open(row.data(2), aad: Self.aad("marker", [id, Self.bits(time)]), table: "marker", id: id)
            do { return (id, try JSONDecoder().decode(Marker.self, from: plain)) } catch {
                throw StoreError.corruptRecord(table: "marker", id: id, reason: "payload does not decode")
            }
        }
    }
}
