import Foundation

/// Who has the store open, recorded in `sdk_state`, so that opening can tell a clean close from a
/// crash and run the full `PRAGMA quick_check` (a read of every page: 0.26 s on a 30 MB file)
/// only when it has a reason to.
///
/// Each open adds `store.session.<pid>.<token>`; a clean close deletes it. A key whose process is
/// gone was left by a session that ended without closing (killed, crashed, lost power), or that
/// met a damaged page and kept its key on purpose. `store.checked_at` records that a full check
/// passed once: a file from before these markers gets one check, then none until a crash.
enum StoreSessions {
    static let keyPrefix = "store.session."
    static let checkedKey = "store.checked_at"
    /// A full check deferred to the background (a file too big to check before use) that has not
    /// passed yet: recorded at the start that deferred it, deleted when it passes, so that a
    /// process killed before then leaves it due.
    static let checkDueKey = "store.check_due"

    /// What opening found: why a full check is due (nil: none is) and the keys of sessions whose
    /// process is gone, to delete once the check has passed.
    struct Findings {
        var reasonForFullCheck: String?
        var staleKeys: [String]
        /// A file without tables: nothing to check, and nothing left unchecked.
        var isNew = false
    }

    /// The sessions this process has open: its own keys are stale once closed or abandoned,
    /// though its pid is alive.
    private static let openHere = OpenKeys()

    /// Reads the markers. A file without any table is new: nothing to check.
    static func inspect(_ connection: Connection) throws(StoreError) -> Findings {
        guard try connection.tableExists("sdk_state") else {
            let tables = try connection.scalar("SELECT count(*) FROM sqlite_master")?.int64 ?? 0
            return tables == 0
                ? Findings(reasonForFullCheck: nil, staleKeys: [], isNew: true)
                : Findings(reasonForFullCheck: "the file has no session markers yet", staleKeys: [])
        }
        let stale = try sessionKeys(connection).filter { !processIsAlive(pidIn: $0) }
        if !stale.isEmpty {
            let pids = stale.map { pid(in: $0).map(String.init) ?? "?" }.joined(separator: ", ")
            return Findings(reasonForFullCheck: "the last session (pid \(pids)) did not close the store cleanly", staleKeys: stale)
        }
        if try connection.scalar("SELECT value FROM main.sdk_state WHERE key = ?", [.text(checkDueKey)]) != nil {
            return Findings(reasonForFullCheck: "a full check deferred at an earlier start has not passed yet", staleKeys: [])
        }
        if try connection.scalar("SELECT value FROM main.sdk_state WHERE key = ?", [.text(checkedKey)]) == nil {
            return Findings(reasonForFullCheck: "no full check is recorded for this file yet", staleKeys: [])
        }
        return Findings(reasonForFullCheck: nil, staleKeys: [])
    }

    /// Records this session (and, after a check that passed, that fact), forgets the sessions
    /// that ended without closing, and returns this session's key.
    /// `checkDeferred`: the full check was due and runs in the background (`DeferredCheck`): it
    /// stays due (`checkDueKey`) until it passes (`checkPassed`).
    static func begin(_ connection: Connection, after findings: Findings, checkDeferred: Bool = false,
                      now: Int64) throws(StoreError) -> String {
        for key in findings.staleKeys {
            try connection.execute("DELETE FROM main.sdk_state WHERE key = ?", [.text(key)])
        }
        if checkDeferred {
            try connection.state.setValue(String(now), forKey: checkDueKey, now: now)
        } else if findings.reasonForFullCheck != nil || findings.isNew {
            try checkPassed(connection, now: now)
        }
        let token = UUID().uuidString.prefix(8).lowercased()
        let key = "\(keyPrefix)\(getpid()).\(token)"
        try connection.execute("INSERT INTO main.sdk_state (key, value, updated_at) VALUES (?, ?, ?)",
                               [.text(key), .text(String(now)), .integer(now)])
        openHere.insert(key)
        return key
    }

    /// A full check passed: none is due until the next crash.
    static func checkPassed(_ connection: Connection, now: Int64) throws(StoreError) {
        try connection.state.setValue(String(now), forKey: checkedKey, now: now)
        try connection.execute("DELETE FROM main.sdk_state WHERE key = ?", [.text(checkDueKey)])
    }

    /// A clean close: this session's key goes.
    static func end(_ key: String, in connection: Connection) throws(StoreError) {
        try connection.execute("DELETE FROM main.sdk_state WHERE key = ?", [.text(key)])
        openHere.remove(key)
    }

    /// The session is over without a clean close (its key, if still in the file, is stale).
    static func forget(_ key: String) {
        openHere.remove(key)
    }

    /// Whether a process other than this one has the file open now (a session key whose
    /// process is alive): its writes wait on the file's lock, where this process cannot see them.
    static func otherProcessOpen(_ connection: Connection) throws(StoreError) -> Bool {
        guard try connection.tableExists("sdk_state") else { return false }
        let me = getpid()
        return try sessionKeys(connection).contains { key in pid(in: key).map { $0 != me } == true && processIsAlive(pidIn: key) }
    }

    /// The session keys in the file, in order.
    private static func sessionKeys(_ connection: Connection) throws(StoreError) -> [String] {
        try connection.query(
            "SELECT key FROM main.sdk_state WHERE key >= ? AND key < ? ORDER BY key", [.text(keyPrefix), .text(keyPrefix + "\u{7F}")]
        ).compactMap { $0[0].text }
    }

    static func pid(in key: String) -> pid_t? {
        guard key.hasPrefix(keyPrefix) else { return nil }
        return key.dropFirst(keyPrefix.count).split(separator: ".").first.flatMap { pid_t($0) }
    }

    /// `kill(pid, 0)` delivers nothing: it only says whether the process exists (EPERM: it
    /// does, under another user). An unreadable key counts as gone.
    private static func processIsAlive(pidIn key: String) -> Bool {
        guard let pid = pid(in: key), pid > 0 else { return false }
        if pid == getpid() { return openHere.contains(key) }
        return kill(pid, 0) == 0 || errno == EPERM
    }
}

/// A set of session keys shared by every store of the process.
private final class OpenKeys: @unchecked Sendable {
    // `@unchecked`: `keys` is only touched under `lock`.
    private let lock = NSLock()
    private var keys: Set<String> = []

    func insert(_ key: String) { lock.withLock { _ = keys.insert(key) } }
    func remove(_ key: String) { lock.withLock { _ = keys.remove(key) } }
    func contains(_ key: String) -> Bool { lock.withLock { keys.contains(key) } }
}
