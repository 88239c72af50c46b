import Foundation
import FlagshipStore

/// The check a start makes of a compiled blob before deciding on it: every block of every
/// campaign, building nothing (`decode`).
extension CompiledBucketingFile {
    /// The number of campaigns from which a start checks them in parts side by side.
    static let campaignsCheckedInParts = 2_000

    /// The campaigns of a blob, from `start` to its end, to check before any is decided.
    struct CampaignsToCheck: Sendable {
        let bytes: [UInt8], start: Int, count: Int, keyCount: Int, flags: CompiledFlags

        /// Checks them all in order: the first fault in the file's order is the one thrown.
        func check() throws(BinaryJSON.Malformed) {
            try check(from: start, count: count, to: bytes.count)
        }

        /// Whether all pass, checked in `parts` parts side by side, with `alongside` (the
        /// checksum) as one more job. Each part's start is found by passing over the blocks
        /// before it by their lengths. On 30,000 campaigns over two cores, the check and the
        /// checksum take about two thirds of the time they take in order (20 ms against 30).
        func passInParts(_ parts: Int, alongside: @escaping @Sendable () -> Void) -> Bool {
            var starts: [Int] = [], counts: [Int] = []
            let passed = reading(at: start) { (passing) throws(BinaryJSON.Malformed) in
                for part in 0..<parts {
                    starts.append(passing.offset)
                    counts.append(count / parts + (part < count % parts ? 1 : 0))
                    if part + 1 < parts {
                        for _ in 0..<counts[part] { try passing.seek(to: try passing.blockEnd()) }
                    }
                }
            }
            guard (try? passed.get()) != nil else { return false }
            let ends = Array(starts.dropFirst()) + [bytes.count]
            let failed = Locked(false)
            // `alongside` first: the jobs are taken in order, and it is the longest.
            DispatchQueue.concurrentPerform(iterations: parts + 1) { [starts, counts] job in
                guard job > 0 else { return alongside() }
                do throws(BinaryJSON.Malformed) {
                    try check(from: starts[job - 1], count: counts[job - 1], to: ends[job - 1])
                } catch {
                    failed.withLock { $0 = true }
                }
            }
            return !failed.withLock { $0 }
        }

        private func check(from start: Int, count: Int, to end: Int) throws(BinaryJSON.Malformed) {
            try reading(at: start) { (input) throws(BinaryJSON.Malformed) in
                var shapes = Shapes()
                for _ in 0..<count { try checkCampaign(&input, keyCount: keyCount, flags: flags, shapes: &shapes) }
                guard input.offset == end else {
                    throw BinaryJSON.Malformed(reason: "bytes after the file", offset: input.offset)
                }
            }.get()
        }

        /// `body` with a reader of the bytes from `offset`.
        private func reading(at offset: Int,
                             _ body: (inout BinaryJSON.Reader) throws(BinaryJSON.Malformed) -> Void) -> Result<Void, BinaryJSON.Malformed> {
            bytes.withUnsafeBytes { raw in
                var reader = BinaryJSON.Reader(raw, at: offset)
                return Result { () throws(BinaryJSON.Malformed) in try body(&reader) }
            }
        }
    }

    /// Each campaign id and its digest.
    static func checkDigests(_ input: inout BinaryJSON.Reader) throws(BinaryJSON.Malformed) {
        let end = try input.blockEnd()
        for _ in 0..<(try input.count()) {
            _ = try input.utf8()
            _ = try input.utf8()
        }
        try input.expect(end: end)
    }

    /// The number of rules of each group of a variation group's targeting, as written and as
    /// compiled: two lists made once for each part of the check.
    struct Shapes {
        var written: [Int] = [], compiled: [Int] = []
    }

    /// A campaign as a decision and a reading need it, building nothing: every string UTF-8,
    /// every block ending where it says, each group's compiled rules the shape of its written ones,
    /// every allocation a number of 0 or more, every variation's flags inside the flags section.
    static func checkCampaign(_ input: inout BinaryJSON.Reader, keyCount: Int, flags: CompiledFlags,
                              shapes: inout Shapes) throws(BinaryJSON.Malformed) {
        let end = try input.blockEnd()
        _ = try input.utf8()
        _ = try input.utf8()
        if try input.bool() { _ = try input.utf8() }
        _ = try input.utf8()
        for _ in 0..<(try input.count()) {
            _ = try input.utf8()
            _ = try input.utf8()
            let at = input.offset
            try checkWritten(&input, shape: &shapes.written)
            try CompiledTargeting.check(&input, keyCount: keyCount, shape: &shapes.compiled)
            guard shapes.compiled == shapes.written else {
                throw BinaryJSON.Malformed(reason: "rules compiled otherwise than written", offset: at)
            }
            let variationsEnd = try input.blockEnd()
            for _ in 0..<(try input.count()) { try checkVariation(&input, flags: flags) }
            try input.expect(end: variationsEnd)
        }
        try input.expect(end: end)
    }

    /// The rules as written, their number in each group into `shape`.
    static func checkWritten(_ input: inout BinaryJSON.Reader, shape: inout [Int]) throws(BinaryJSON.Malformed) {
        let end = try input.blockEnd()
        shape.removeAll(keepingCapacity: true)
        for _ in 0..<(try input.count()) {
            let count = try input.count()
            for _ in 0..<count {
                if try input.bool() { _ = try input.utf8() }
                if try input.bool() { _ = try input.utf8() }
                if try input.bool() { try input.skipValue() }
            }
            shape.append(count)
        }
        try input.expect(end: end)
    }

    static func checkVariation(_ input: inout BinaryJSON.Reader, flags: CompiledFlags) throws(BinaryJSON.Malformed) {
        let at = input.offset
        let allocation = Double(bitPattern: try input.fixed())
        // As the JSON's reading leaves it: a number of 0 or more.
        guard allocation.isFinite, allocation >= 0 else {
            throw BinaryJSON.Malformed(reason: "an allocation that is not a number of 0 or more", offset: at)
        }
        guard try input.bool() else { return }
        _ = try input.utf8()
        _ = try input.utf8()
        _ = try input.bool()
        if try input.bool() { _ = try input.utf8() }
        guard try input.bool() else { return }
        let placeAt = input.offset
        let start = try input.varint(), end = try input.varint()
        let keysAt = input.offset
        for _ in 0..<(try input.count()) { _ = try input.utf8() }
        guard flags.place(start: start, end: end, keysAt: keysAt) != nil else {
            throw BinaryJSON.Malformed(reason: "flags out of their section", offset: placeAt)
        }
    }
}
