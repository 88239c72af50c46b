import Foundation

/// The process's resident memory, from /proc/self/status (Linux).
struct ProcessMemory: Sendable, Equatable {
    /// `VmRSS`: every resident page, file-backed ones (the binary, mapped files) included.
    let residentBytes: Int64
    /// `RssAnon`: the resident heap and stacks, what a leak grows.
    let anonymousBytes: Int64?

    /// `nil` where /proc/self/status cannot be read (not Linux).
    static func current() -> ProcessMemory? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        var fields: [Substring: Int64] = [:]
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") || line.hasPrefix("RssAnon:") {
            // "VmRSS:	   123456 kB"
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == ":" })
            if parts.count >= 2, let kilobytes = Int64(parts[1]) { fields[parts[0]] = kilobytes * 1_024 }
        }
        guard let resident = fields["VmRSS"] else { return nil }
        return ProcessMemory(residentBytes: resident, anonymousBytes: fields["RssAnon"])
    }
}
