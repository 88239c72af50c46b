import Foundation

enum ProcessMemory {
    /// The process's resident set size, from `VmRSS` in /proc/self/status (Linux), in bytes.
    static func residentBytes() -> Int64? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            // "VmRSS:	   123456 kB"
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, let kilobytes = Int64(fields[1]) else { return nil }
            return kilobytes * 1_024
        }
        return nil
    }
}
