import CSQLite
import Foundation

/// The files beside a store and the store file itself, as the opening policy handles them:
/// which files this process has open, links and odd file kinds refused, the directory and file
/// made private, a damaged file moved aside (and the marker that says it is), a WAL that is not
/// the file's set aside, and header values read without a descriptor of our own.
enum StoreFiles {
    /// The files this process has open through SQLite, by identity, with how many stores each.
    ///
    /// A file open here is read only through SQLite's shared descriptors: any descriptor of our
    /// own on it (an immutable connection's included), once closed, would drop every POSIX lock
    /// this process holds on the file, SQLite's own, and another process could then checkpoint
    /// and delete the WAL under the open store. Such a file needs no probe either: it is ours.
    static let openHere = OpenFiles()

    final class OpenFiles: @unchecked Sendable {
        // `@unchecked`: `counts` is only touched under `lock`.
        private let lock = NSLock()
        private var counts: [FileIdentity: Int] = [:]

        func insert(_ file: FileIdentity) { lock.withLock { counts[file, default: 0] += 1 } }
        func remove(_ file: FileIdentity) {
            lock.withLock {
                counts[file, default: 1] -= 1
                if counts[file] == 0 { counts[file] = nil }
            }
        }
        func contains(_ file: FileIdentity?) -> Bool { file.map { file in lock.withLock { counts[file] != nil } } ?? false }
    }

    /// Whether this process has the file at `url` open through SQLite.
    static func isOpenHere(_ url: URL) -> Bool {
        openHere.contains(FileIdentity(path: url.path))
    }

    /// A file as the kernel knows it, whatever its name.
    struct FileIdentity: Hashable {
        let device: UInt64
        let inode: UInt64

        init?(path: String) {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }

    }

    // MARK: - Opening

    /// Beside the file, `<name>-damaged` says a statement met SQLite's `SQLITE_CORRUPT` in it. A
    /// file of its own, written the moment the damage is met: a row in the damaged file might not
    /// be writable, and `quick_check` does not compare indexes with their tables (what statements
    /// most often trip on), so the next open trusts SQLite's word and moves the file aside.
    static let damageMarkSuffix = "-damaged"

    static func markDamaged(path: String, error: SQLiteError) {
        markDamaged(path: path, note: "a statement met a damaged page: \(error.message)")
    }

    static func markDamaged(path: String, note text: String) {
        let note = Data((text + "\n").utf8)
        // Best effort: without it, the session's row left in the file still brings a `quick_check`.
        _ = FileManager.default.createFile(atPath: path + damageMarkSuffix, contents: note, attributes: [.posixPermissions: 0o600])
    }

    /// The damage a session recorded beside the file, if any.
    static func damageMarked(at url: URL) -> Damage? {
        guard let note = FileManager.default.contents(atPath: url.path + damageMarkSuffix) else { return nil }
        let text = String(decoding: note, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Damage(reason: text.isEmpty ? "a statement met a damaged page" : text)
    }

    /// A store path that is a symbolic link names the file it points to: that file is opened,
    /// checked, and (if damaged) moved aside and replaced, never the link itself, which would
    /// strand the target's hits. A link whose target does not exist is refused rather than
    /// followed: creating the store there would put a file wherever the link points.
    static func followingSymbolicLink(_ url: URL) throws(StoreError) -> URL {
        var status = stat()
        guard lstat(url.path, &status) == 0, status.st_mode & S_IFMT == S_IFLNK else { return url }
        guard let resolved = realpath(url.path, nil) else {
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) ?? "?"
            throw .fileSystem(path: url.path, reason: "it is a symbolic link to \(target), which does not exist: create the store at the link's target, or give its path")
        }
        defer { free(resolved) }
        return URL(fileURLWithPath: String(cString: resolved))
    }

    /// A FIFO, a directory, a socket or a device at the store path is refused at once: SQLite would
    /// block opening a FIFO (no writer ever comes) or fail later with a vaguer error. The path's
    /// target is judged (`stat` follows a symbolic link); a path that does not exist yet passes.
    static func refuseUnlessRegularFile(at url: URL) throws(StoreError) {
        var status = stat()
        guard stat(url.path, &status) == 0 else { return }
        let kind: String
        switch status.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: kind = "a directory"
        case S_IFIFO: kind = "a FIFO (named pipe)"
        case S_IFSOCK: kind = "a socket"
        case S_IFCHR: kind = "a character device"
        case S_IFBLK: kind = "a block device"
        default: kind = "not a regular file"
        }
        throw .fileSystem(path: url.path, reason: "it is \(kind), not a store file: give the path of a regular file (or of none yet)")
    }

    /// Creates the directory (0700) and an empty file (0600) when they do not exist yet.
    static func prepareFile(at url: URL) throws {
        let directory = url.deletingLastPathComponent()
        let fileManager = FileManager.default
        if !fileManager.fileExists(atPath: directory.path) {
            do {
                try fileManager.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreError.fileSystem(path: directory.path, reason: "cannot create the directory: \(error.localizedDescription)")
            }
        }
        // O_EXCL: never truncate or re-mode a file that appeared meanwhile.
        let descriptor = Foundation.open(url.path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            _ = Foundation.close(descriptor)
        } else if errno != EEXIST {
            throw StoreError.fileSystem(path: url.path, reason: "cannot create the file: \(String(cString: strerror(errno)))")
        }
    }

    /// Moves a damaged file, and its `-wal` and `-shm` companions, to `<name>.corrupt-<timestamp>`.
    static func moveAside(_ url: URL, reason: String, now: Date) throws -> URL {
        let destination = freeName(url.path + ".corrupt-", now: now)
        do {
            try FileManager.default.moveItem(at: url, to: destination)
            for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: url.path + suffix) {
                try FileManager.default.moveItem(atPath: url.path + suffix, toPath: destination.path + suffix)
            }
        } catch {
            throw StoreError.fileSystem(path: url.path, reason: "damaged (\(reason)) and could not be moved aside: \(error.localizedDescription)")
        }
        return destination
    }

    /// `<prefix><UTC timestamp>`, or with `-2`, `-3`... when that name is taken.
    static func freeName(_ prefix: String, now: Date) -> URL {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss.SSS'Z'"
        let stamp = formatter.string(from: now)
        var destination = URL(fileURLWithPath: prefix + stamp)
        var attempt = 1
        while FileManager.default.fileExists(atPath: destination.path) {
            attempt += 1
            destination = URL(fileURLWithPath: prefix + stamp + "-\(attempt)")
        }
        return destination
    }

    /// A `-wal` beside a file no process has open (no `-shm`) that cannot be this file's: too
    /// short for a header, not a WAL header, a header whose checksum fails, or pages of another
    /// size than the file's. SQLite would treat it as empty and overwrite it at the first write,
    /// so it is moved to `<name>-wal.unreadable-<timestamp>`, kept byte for byte, and reported.
    /// (A valid WAL of another database with the same page size cannot be told apart by its header.)
    static func setAsideForeignWAL(of url: URL, now: Date) throws -> FlagshipDatabase.MovedAside? {
        let fileManager = FileManager.default
        let wal = url.path + "-wal"
        // A connection using the WAL maps the -shm before it writes the WAL's header (in one
        // 32-byte write): a -wal without a -shm and with a header is no live connection's.
        guard !fileManager.fileExists(atPath: url.path + "-shm"), let handle = FileHandle(forReadingAtPath: wal) else { return nil }
        let header = (try? handle.read(upToCount: 32)) ?? Data()
        try? handle.close()
        guard !header.isEmpty, let reason = foreignWALReason(header: header, databasePageSize: databasePageSize(url)),
              !fileManager.fileExists(atPath: url.path + "-shm") else { return nil }
        let destination = freeName(wal + ".unreadable-", now: now)
        do {
            try fileManager.moveItem(atPath: wal, toPath: destination.path)
        } catch where !fileManager.fileExists(atPath: wal) {
            // Another process opening the store set it aside first.
            return nil
        } catch {
            throw StoreError.fileSystem(path: wal, reason: "not this store's WAL (\(reason)) and could not be moved aside: \(error.localizedDescription)")
        }
        return FlagshipDatabase.MovedAside(url: destination, reason: reason)
    }

    /// Why a WAL header (its first 32 bytes) cannot be the WAL of a file of `databasePageSize`.
    static func foreignWALReason(header: Data, databasePageSize: Int?) -> String? {
        guard header.count >= 32 else { return "it is \(header.count) bytes, shorter than a WAL header" }
        let bytes = [UInt8](header.prefix(32))
        func word(_ offset: Int, bigEndian: Bool = true) -> UInt32 {
            let slice = bytes[offset..<(offset + 4)].map(UInt32.init)
            return bigEndian ? slice[0] << 24 | slice[1] << 16 | slice[2] << 8 | slice[3]
                             : slice[3] << 24 | slice[2] << 16 | slice[1] << 8 | slice[0]
        }
        let magic = word(0)
        guard magic == 0x377F_0682 || magic == 0x377F_0683 else { return "it does not start like a SQLite WAL" }
        // SQLite's checksum over the first 24 bytes, in the byte order the magic names.
        let bigEndian = magic & 1 == 1
        var (s0, s1): (UInt32, UInt32) = (0, 0)
        for offset in stride(from: 0, to: 24, by: 8) {
            s0 = s0 &+ word(offset, bigEndian: bigEndian) &+ s1
            s1 = s1 &+ word(offset + 4, bigEndian: bigEndian) &+ s0
        }
        guard s0 == word(24), s1 == word(28) else { return "its header checksum does not match" }
        let pageSize = Int(word(8))
        if let databasePageSize, pageSize != databasePageSize {
            return "its pages are \(pageSize) bytes, the file's \(databasePageSize): it belongs to another database"
        }
        return nil
    }

    /// Refuses a file whose header names another application (`PRAGMA application_id`, at
    /// offset 68), reading those bytes only.
    static func refuseIfNotOursByHeader(_ url: URL) throws(StoreError) {
        guard let applicationID = headerValue("PRAGMA application_id", of: url) else { return }
        guard applicationID == 0 || applicationID == Int64(Migrator.applicationID) else {
            throw .notAFlagshipDatabase(path: url.path, reason: "its application_id is \(applicationID), not Flagship's (\(Migrator.applicationID))")
        }
    }

    /// The page size in a database file's header; `nil` for a file that has none.
    static func databasePageSize(_ url: URL) -> Int? {
        guard (((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0) >= 100 else { return nil }
        return headerValue("PRAGMA page_size", of: url).map(Int.init)
    }

    /// A value of the file's header, read through SQLite as an immutable file (its WAL ignored).
    /// Never through a descriptor of our own: closing any descriptor of a file drops every POSIX
    /// lock this process holds on it, SQLite's included (SQLite's own descriptors are shared and
    /// their closing deferred for this reason).
    static func headerValue(_ pragma: String, of url: URL) -> Int64? {
        guard FileManager.default.fileExists(atPath: url.path),
              let database = try? Database(path: url.path, options: DatabaseOptions(immutable: true)) else { return nil }
        defer { database.close(checkpoint: false) }
        return (try? database.withConnection { try $0.scalar(pragma) })??.int64
    }
}

/// A file judged damaged: what `open` moves aside.
struct Damage: Error {
    let reason: String

    init(reason: String) {
        self.reason = reason
    }

    /// The damage an error reveals, if it is SQLite saying the file is not a database or is corrupt.
    init?(_ error: any Error) {
        guard case .sqlite(let sqliteError)? = error as? StoreError, sqliteError.meansFileIsDamaged else { return nil }
        reason = sqliteError.message
    }
}
