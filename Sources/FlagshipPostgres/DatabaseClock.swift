#if Postgres
import Flagship
import FlagshipStore
import Foundation
import Logging
import PostgresNIO

/// How far PostgreSQL's clock is from an instance's (database minus instance, ms), so that every
/// time in the fleet's tables is the database's: one instance's clock set hours ahead neither
/// expires the others' hits nor holds them under a lease or a backoff for hours.
///
/// An instance turns its times into the database's on the way in (a hit's creation, a visitor's
/// write, a lease's end, a backoff's end, an expiry boundary) and back on the way out (a claimed
/// hit's creation, the base of its `qt`). A time difference measured on one clock is right
/// whatever that clock's error, so a hit's age survives the trip. The offset is measured on the
/// first call and again after `remeasureAfter` of the instance's clock (a clock stepped since is
/// caught then), from one `SELECT` of `clock_timestamp()`, within half its round trip.
final class DatabaseClockOffset: Sendable {
    private struct Measure {
        var offset: Int64
        var measuredAt: Int64
        var told: Bool
    }

    /// How often the offset is measured again (instance time, ms).
    static let remeasureAfter: Int64 = 60_000
    /// A difference past which the instance says, once, that its clock is off.
    static let tolerance: Int64 = 5_000

    private let measure = Locked<Measure?>(nil)

    /// The offset to add to an instance time (from `now`) to get the database's; measured on
    /// `connection` when none is known or the last is older than `remeasureAfter`.
    func offset(on connection: PostgresConnection, now: () -> Int64, location: String, logger: Logger) async throws -> Int64 {
        let before = now()
        if let known = measure.withLock({ $0 }), before >= known.measuredAt, before - known.measuredAt < Self.remeasureAfter {
            return known.offset
        }
        // PostgreSQL's time now, in unix ms.
        let rows = try await connection.query("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", logger: logger).collect()
        let after = now()
        guard let databaseNow = try rows.first?.decode(Int64.self) else { return 0 }
        let midpoint = before.shifted(by: after.shifted(by: before == .min ? .max : -before) / 2)
        // Held well inside Int64, so that it can be negated and added to any stored time.
        let offset = max(-(Int64.max / 2), min(Int64.max / 2, databaseNow.shifted(by: midpoint == .min ? .max : -midpoint)))
        let tell = measure.withLock { measure -> Bool in
            let told = measure?.told ?? false
            let off = offset.magnitude > UInt64(Self.tolerance)
            measure = Measure(offset: offset, measuredAt: after, told: told || off)
            return off && !told
        }
        if tell {
            let seconds = Double(offset.magnitude) / 1000
            logger.warning("""
                This machine's clock is \(String(format: "%.1f", seconds)) s \(offset < 0 ? "ahead of" : "behind") PostgreSQL's \
                at \(location): the fleet's rows are kept in PostgreSQL's time, so hit expiry, leases and backoff \
                are as the database sees them; fix this machine's time (NTP) for its logs and hits' qt
                """)
        }
        return offset
    }
}

extension Int64 {
    /// `self + offset`, held at the bounds rather than overflowing (a stored time may be any value).
    func shifted(by offset: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(offset)
        guard overflow else { return sum }
        return offset > 0 ? .max : .min
    }
}

extension OutgoingHit {
    /// The hit with its times moved by `offset` ms: its creation, its document's `time` and its
    /// decision. Into the database's time when written, back into the SDK's when claimed.
    func shiftingTimes(by offset: Int64) -> OutgoingHit {
        var moved = created(at: createdAt.shifted(by: offset))
        moved.decidedAt = decidedAt?.shifted(by: offset)
        return moved
    }
}

extension VisitorRecord {
    /// The row and its decisions with their times moved by `offset` ms.
    func shiftingTimes(by offset: Int64) -> VisitorRecord {
        var shifted = self
        shifted.updatedAt = updatedAt.shifted(by: offset)
        shifted.decisions = decisions.map { decision in
            var moved = decision
            moved.decidedAt = decision.decidedAt.shifted(by: offset)
            return moved
        }
        return shifted
    }
}
#endif
