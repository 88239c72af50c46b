import CSQLite
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where the process's heap goes, to tell a leak from fragmentation when RSS grows: SQLite's own
/// allocations (page caches, statements), and glibc malloc's arenas (what they took from the
/// system, and how much of it sits free in them). Read each sample.
struct HeapUsage: Sendable, Equatable {
    /// `sqlite3_memory_used()`: every byte SQLite has allocated and not freed, all connections.
    let sqliteBytes: Int64
    /// glibc's arenas and mmap'd chunks (`malloc_info`): taken from the system, and free in them.
    let mallocSystemBytes: Int64?
    let mallocFreeBytes: Int64?

    /// In use by the program: taken from the system, less what sits free in the arenas.
    var mallocInUseBytes: Int64? {
        guard let mallocSystemBytes, let mallocFreeBytes else { return nil }
        return mallocSystemBytes - mallocFreeBytes
    }

    static func current() -> HeapUsage {
        let arenas = mallocTotals()
        return HeapUsage(sqliteBytes: sqlite3_memory_used(), mallocSystemBytes: arenas?.system, mallocFreeBytes: arenas?.free)
    }

    /// glibc's `malloc_trim(0)`: every arena's free pages given back to the system. Returns
    /// whether it ran (glibc only).
    @discardableResult
    static func trim() -> Bool {
        #if os(Linux)
        guard let symbol = UnsafeMutableRawPointer(bitPattern: glibc.trim) else { return false }
        _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
        return true
        #else
        return false
        #endif
    }

    #if os(Linux)
    /// glibc's `malloc_trim` and `malloc_info`, looked up once in the process's global scope (the
    /// main program and the libraries it loaded); their header is not in Swift's Glibc module.
    /// Kept as addresses (0: not found), which are Sendable.
    private static let glibc: (trim: UInt, info: UInt) = {
        let program = dlopen(nil, RTLD_LAZY)
        func address(_ name: String) -> UInt { dlsym(program, name).map { UInt(bitPattern: $0) } ?? 0 }
        return (address("malloc_trim"), address("malloc_info"))
    }()
    #endif

    /// `malloc_info(0, stream)` (glibc; its header is not in Swift's Glibc module, so it is looked
    /// up by name) read from its XML: the last `<system type="current">` and the `<total>` lines
    /// of free chunks (`fast`, `rest`) are the whole process's, after each arena's own; mmap'd
    /// chunks are in use and counted in both.
    private static func mallocTotals() -> (system: Int64, free: Int64)? {
        #if os(Linux)
        typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
        guard let symbol = UnsafeMutableRawPointer(bitPattern: glibc.info) else { return nil }
        let mallocInfo = unsafeBitCast(symbol, to: MallocInfo.self)
        var buffer: UnsafeMutablePointer<CChar>?
        var size = 0
        guard let stream = open_memstream(&buffer, &size) else { return nil }
        let status = mallocInfo(0, stream)
        fclose(stream)
        defer { free(buffer) }
        guard status == 0, let buffer else { return nil }
        return totals(inMallocInfo: String(cString: buffer))
        #else
        return nil
        #endif
    }

    /// The process-wide totals of a `malloc_info` document: the lines after the last `</heap>`.
    static func totals(inMallocInfo xml: String) -> (system: Int64, free: Int64)? {
        let tail = xml.range(of: "</heap>", options: .backwards).map { String(xml[$0.upperBound...]) } ?? xml
        func size(of prefix: String) -> Int64? {
            guard let line = tail.split(separator: "\n").first(where: { $0.contains(prefix) }),
                  let range = line.range(of: #"size="(\d+)""#, options: .regularExpression) else { return nil }
            return Int64(line[range].dropFirst(6).dropLast())
        }
        guard let system = size(of: #"<system type="current""#) else { return nil }
        let mmapped = size(of: #"<total type="mmap""#) ?? 0
        let free = (size(of: #"<total type="fast""#) ?? 0) + (size(of: #"<total type="rest""#) ?? 0)
        return (system + mmapped, free)
    }
}
