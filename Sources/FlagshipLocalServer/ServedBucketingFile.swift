import Flagship
import Foundation

/// A bucketing file as the server holds it: the bytes it serves at `GET /{envId}/bucketing.json`,
/// the SDK's own engine reading of them (what `DecisionSource.bucketing` decides with), and the
/// time it answers as `Last-Modified`.
///
/// Checked when made, so that a file the SDK could not use shows at start rather than as a
/// parse error in the SDK's log.
public struct ServedBucketingFile: Sendable {
    /// The file exactly as given: served byte for byte.
    public let data: Data
    /// Sent as `Last-Modified`, to whole seconds (what an HTTP date can say).
    public let lastModified: Date
    package let file: BucketingFile

    /// `data` read by the bucketing engine; throws a ``LocalServerError`` with code `.bucketingFile`
    /// and the reason when it is not a bucketing file the SDK can use.
    public init(data: Data, lastModified: Date = Date()) throws {
        try self.init(data: data, lastModified: lastModified, path: nil)
    }

    private init(data: Data, lastModified: Date, path: String?) throws {
        do {
            file = try BucketingFile(json: data, maximumBytes: 1 << 30)
        } catch {
            throw LocalServerError.bucketingFile(path: path, reason: error.reason)
        }
        self.data = data
        self.lastModified = lastModified
    }

    /// The bucketing file at `path`, checked as `init(data:lastModified:)` does.
    public static func contents(atPath path: String, lastModified: Date = Date()) throws -> ServedBucketingFile {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw LocalServerError.bucketingFile(path: path, reason: "cannot be read: \(error.localizedDescription)")
        }
        return try ServedBucketingFile(data: data, lastModified: lastModified, path: path)
    }

    /// Whether the file switches the SDK off (`"panic": true`).
    public var isPanic: Bool { file.panic }

    /// How many campaigns the engine reads in it.
    public var campaignCount: Int { file.campaignCount }

    /// What the engine skipped or found inert in the file (a rule it cannot read...), to show a
    /// person; an empty list for a clean file.
    public var warnings: [String] { file.warnings }
}
