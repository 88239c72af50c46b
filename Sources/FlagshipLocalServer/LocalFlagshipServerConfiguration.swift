import Foundation

extension LocalFlagshipServer {
    /// What a server answers to, and where it records.
    public struct Configuration: Sendable {
        /// The environment id the campaigns path must name; others get 404.
        public var envId: String
        /// The `x-api-key` the campaigns and activate routes require; others get 403.
        public var apiKey: String
        /// The port on 127.0.0.1; `0` lets the system pick a free one (tests run side by side).
        public var port: UInt16
        /// How the campaigns route answers at start; `LocalFlagshipServer.decision` changes it.
        public var decision: DecisionSource
        /// The file served at `GET /{envId}/bucketing.json` (and decided with by
        /// `DecisionSource.bucketing`) at start; `LocalFlagshipServer.bucketingFile` changes it.
        public var bucketingFile: ServedBucketingFile?
        /// A file that gets one JSON object per request received, appended (JSON Lines).
        public var recordFile: URL?
        /// How many requests `received` keeps in memory, the newest; `nil` (the default): every
        /// one, as tests want. A long run (a soak) sets one so that memory stays flat; `totals`
        /// counts every request whatever the limit, and waits see only the requests kept.
        public var recordLimit: Int?
        /// Called with every request once answered (the CLI prints them), from a server task.
        public var onRequest: (@Sendable (RecordedRequest) -> Void)?
        /// The bytes of requests being received that the server holds at once, over all its
        /// connections (one body may be 64 MiB). A connection whose bytes would go past it is
        /// answered 503 with `Retry-After: 1` and closed, and counted in
        /// `LocalFlagshipServer.refusedOverBufferLimit`. Default 256 MiB.
        public var maximumBufferedBytes: Int
        /// Where the answers are made: Swift's global executor (`nil`, the default), or a thread
        /// of a test's own, so that a test holding every thread of the global pool (on Linux,
        /// the global executor's too) still gets its answers.
        package var answeringExecutor: (any TaskExecutor)?

        /// A configuration with each setting given; by default `local_env`, `local_api_key`, a
        /// free port, the sample decision, no bucketing file, no record file and no limit.
        public init(
            envId: String = "local_env",
            apiKey: String = "local_api_key",
            port: UInt16 = 0,
            decision: DecisionSource = .sample,
            bucketingFile: ServedBucketingFile? = nil,
            recordFile: URL? = nil,
            recordLimit: Int? = nil,
            onRequest: (@Sendable (RecordedRequest) -> Void)? = nil,
            maximumBufferedBytes: Int = 256 * 1024 * 1024
        ) {
            self.envId = envId
            self.apiKey = apiKey
            self.port = port
            self.decision = decision
            self.bucketingFile = bucketingFile
            self.recordFile = recordFile
            self.recordLimit = recordLimit
            self.onRequest = onRequest
            self.maximumBufferedBytes = maximumBufferedBytes
        }
    }
}
