import Foundation

/// The checks opening runs on a file a crash may have left (`StoreSessions` says when), and the
/// full check it defers to the background for a large one (`DeferredCheck`).
extension FlagshipDatabase {
    /// `PRAGMA quick_check`: every page of the file read, each B-tree's structure checked.
    static func fullCheck(_ database: Database) throws {
        let check = try database.withConnection { try $0.query("PRAGMA main.quick_check").compactMap { $0[0].text } }
        guard check == ["ok"] else {
            throw Damage(reason: "quick_check: " + check.prefix(3).joined(separator: "; "))
        }
    }

    /// What a crash can leave wrong in a store in WAL mode, checked in time bounded by the hit
    /// cache's cap rather than by the file's size. SQLite commits are atomic: a killed process or
    /// a power loss leaves the WAL with a torn tail at worst, whose frames SQLite's recovery
    /// checks (each frame carries a checksum over the log so far) and drops; no committed page is
    /// ever half written in the database file, which only a checkpoint writes, from frames already
    /// in the WAL, and which the next open repeats. So what is checked before use is what the
    /// SDK reads first and must not misread: the schema (parsed by this statement's preparation,
    /// and its version) and the hits with their indexes and counter, replayed at start; the
    /// session rows are read by their key, and a damaged page on that path fails the open as
    /// damage. Bounded by the hit cache's cap, not by the visitors. Damage from elsewhere (a disk,
    /// another program) is what the full check looks for, deferred to the background (`DeferredCheck`).
    static func boundedCheck(_ database: Database) throws {
        for table in ["hits", "hits_total"] {
            let check = try database.withConnection { connection -> [String] in
                guard try connection.tableExists(table) else { return ["ok"] }
                return try connection.query("PRAGMA main.quick_check(\(table))").compactMap { $0[0].text }
            }
            guard check == ["ok"] else {
                throw Damage(reason: "quick_check(\(table)): " + check.prefix(3).joined(separator: "; "))
            }
        }
    }

    /// The file's size in bytes (0 when it cannot be read: then it is checked in full).
    static func fileBytes(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }


    /// Sets the deferred full check of `database` going; its outcome is recorded in the file
    /// (`record`), then kept in `report` and told to whoever waits there.
    static func startDeferredCheck(
        of database: Database,
        reportingTo report: Locked<(outcome: DeferredCheck.Outcome?, handlers: [@Sendable (DeferredCheck.Outcome) -> Void])>
    ) -> DeferredCheck {
        let path = database.path
        let check = DeferredCheck(path: path) { outcome in
            record(outcome, of: database, path: path)
            let handlers = report.withLock { report in
                report.outcome = outcome
                return report.handlers
            }
            for handler in handlers { handler(outcome) }
        }
        check.start()
        return check
    }

    /// Calls `handler` once the deferred full check (`Opening.deferredCheck`) ends, on the check's
    /// queue; at once if it has ended already. Never called when no check was deferred.
    package func onDeferredCheckEnded(_ handler: @escaping @Sendable (DeferredCheck.Outcome) -> Void) {
        let ended = deferredOutcome.withLock { report -> DeferredCheck.Outcome? in
            if report.outcome == nil { report.handlers.append(handler) }
            return report.outcome
        }
        if let ended { handler(ended) }
    }

    /// What a deferred check found, recorded where the next start reads it: passed, the check is
    /// no longer due; damaged, the file is marked as a damaged statement marks it, so the next
    /// start moves it aside (and salvages it) whatever its size. Interrupted or failed: still due.
    static func record(_ outcome: DeferredCheck.Outcome, of database: Database, path: String) {
        switch outcome {
        case .passed:
            try? database.write { try StoreSessions.checkPassed($0, now: Date().unixMilliseconds) }
        case .damaged(let findings):
            StoreFiles.markDamaged(path: path, note: "the full check found damage: \(findings)")
        case .interrupted, .failed:
            break
        }
    }
}
