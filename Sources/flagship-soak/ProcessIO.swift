import Foundation

/// What the process has written since it started, from /proc/self/io (Linux): the cost of a
/// visitor in writes, which is what a store under a steady flow runs out of first.
struct ProcessIO: Sendable, Equatable {
    /// `wchar`: bytes handed to write(2) and its kin (the WAL's frames, the checkpoints' pages,
    /// the result files), whether or not they reached the disk yet.
    let writtenBytes: Int64
    /// `write_bytes`: bytes the kernel sent, or will send, to storage on the process's behalf.
    let storageBytes: Int64

    /// `nil` where /proc/self/io cannot be read (not Linux, or I/O accounting off).
    static func current() -> ProcessIO? {
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return nil }
        return parse(text)
    }

    /// Reads the two fields of a /proc/<pid>/io text ("wchar: 123\nwrite_bytes: 456\n...").
    static func parse(_ text: String) -> ProcessIO? {
        var fields: [Substring: Int64] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            fields[parts[0]] = Int64(parts[1].trimmingCharacters(in: .whitespaces))
        }
        guard let written = fields["wchar"], let storage = fields["write_bytes"] else { return nil }
        return ProcessIO(writtenBytes: written, storageBytes: storage)
    }
}
