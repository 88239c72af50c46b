import Foundation
import Logging

/// The SDK's log lines, as the tool writes its own on stderr: `warning: <message>` and
/// `Error: <message>` (an error or worse), nothing below a warning. Without it they would come
/// in swift-log's default layout (a timestamp, the level, the label), unlike every other line.
///
/// The SDK escapes each message before handing it over (`EscapingLogHandler`), so it is written
/// as given; stdout is flushed first, as for the tool's own warnings.
struct ToolLogHandler: LogHandler {
    var logLevel: Logger.Level = .warning
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let label = event.level >= .error ? Output.errorLabel : Output.warningLabel
        Output.flushStandardOutput()
        FileHandle.standardError.write(Data("\(label) \(event.message)\n".utf8))
    }

    /// The SDK's logger in the tool.
    static var logger: Logger {
        Logger(label: "io.flagship") { _ in ToolLogHandler() }
    }
}
