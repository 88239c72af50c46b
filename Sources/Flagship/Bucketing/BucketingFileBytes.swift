#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import FlagshipStore

extension BucketingFile {
    /// The largest bucketing file this SDK reads unless told otherwise
    /// (`FSConfigBuilder.withBucketingFileMaximumBytes`), 10 MiB, wherever it comes from: a
    /// download (the transport's response limit), a bootstrap file or data, the store, the command
    /// line. A campaign of one variation group of two variations and three rules takes about 750
    /// bytes, so it holds some 14,000 such campaigns; a larger file is refused whole, never read in part.
    package static let maximumBytes = URLSessionTransport.defaultMaxResponseBytes

    /// The bytes of the file at `url`, read to its end, at most ``maximumBytes``: a regular file,
    /// or a pipe or FIFO (read until its writer closes it; a process substitution such as
    /// `--bootstrap <(curl …)` is one). Throws ``BucketingFileError`` saying what went wrong,
    /// for the caller to name the file: no such file, permission denied, a directory, or a file
    /// over the limit (whose bytes past the limit are never read).
    package static func bytes(at url: URL, maximumBytes: Int = BucketingFile.maximumBytes) throws(BucketingFileError) -> Data {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BucketingFileError(reason: Self.describe(errno: errno)) }
        defer { close(descriptor) }
        var status = stat()
        var data = Data()
        if fstat(descriptor, &status) == 0 {
            if status.st_mode & S_IFMT == S_IFDIR { throw BucketingFileError(reason: "it is a directory") }
            if status.st_mode & S_IFMT == S_IFREG {
                if status.st_size > maximumBytes {
                    throw BucketingFileError(reason: Self.tooLarge("it", size: "\(status.st_size) bytes", limit: maximumBytes))
                }
                // Its size at once, instead of growing (and copying) as the chunks come.
                data.reserveCapacity(Int(status.st_size))
            }
        }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw BucketingFileError(reason: Self.describe(errno: errno))
            }
            if count == 0 { return data }
            guard data.count + count <= maximumBytes else {
                throw BucketingFileError(reason: Self.tooLarge("it", size: "more than \(maximumBytes) bytes", limit: maximumBytes))
            }
            chunk.withUnsafeBufferPointer { data.append(UnsafeBufferPointer(rebasing: $0[..<count])) }
        }
    }

    static func tooLarge(_ what: String, size: String, limit: Int) -> String {
        let mebibytes = limit > 0 && limit % (1024 * 1024) == 0 ? " (\(limit / (1024 * 1024)) MiB)" : ""
        return "\(what) is \(size), over the \(limit) bytes\(mebibytes) a bucketing file may be"
    }

    private static func describe(errno code: Int32) -> String {
        switch code {
        case ENOENT: return "no such file"
        case EACCES, EPERM: return "permission denied"
        case EISDIR: return "it is a directory"
        default: return String(cString: strerror(code))
        }
    }

    /// The file's JSON parsed, and its version (the SHA-256 of its bytes). For a file of
    /// `hashedBesideTheParseBytes` or more on a machine of several cores, the digest is taken on
    /// another core while this one parses: about 5 ms a megabyte, 70 ms of the 0.55 s that
    /// `flagship eval` took on 10,000 campaigns (13.8 MB).
    static func parseAndHash(_ data: Data) -> (Result<TolerantJSON, TolerantJSON.SyntaxError>, version: String) {
        @Sendable func parse() -> Result<TolerantJSON, TolerantJSON.SyntaxError> {
            Result { () throws(TolerantJSON.SyntaxError) in try TolerantJSON(data) }
        }
        guard data.count >= hashedBesideTheParseBytes, ProcessInfo.processInfo.activeProcessorCount > 1 else {
            return (parse(), SHA256.hex(of: data))
        }
        let parsed = Locked<Result<TolerantJSON, TolerantJSON.SyntaxError>?>(nil), version = Locked<String?>(nil)
        DispatchQueue.concurrentPerform(iterations: 2) { job in
            if job == 0 {
                let result = parse()
                parsed.withLock { $0 = result }
            } else {
                let digest = SHA256.hex(of: data)
                version.withLock { $0 = digest }
            }
        }
        // `concurrentPerform` runs every job before it returns; neither is ever done twice.
        return (parsed.withLock { $0 } ?? parse(), version.withLock { $0 } ?? SHA256.hex(of: data))
    }

    /// The size of a file from which its digest is taken beside its parse.
    static let hashedBesideTheParseBytes = 1 << 20
}
