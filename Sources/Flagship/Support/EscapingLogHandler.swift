import FlagshipStore
import Foundation
import Logging

/// Wraps the log handler the SDK was given: every message and metadata value it passes on is
/// `TerminalText`-escaped, so no line the SDK logs can be forged by what it logs about. A whole
/// message is kept up to `messageLimit` characters.
struct EscapingLogHandler: LogHandler {
    static let messageLimit = 4_096
    private var wrapped: any LogHandler

    init(_ wrapped: any LogHandler) {
        self.wrapped = wrapped
    }

    func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: TerminalText.escaped(event.message.description, limit: Self.messageLimit))
        event.metadata = event.metadata.map(Self.escaped)
        wrapped.log(event: event)
    }

    private static func escaped(_ metadata: Logger.Metadata) -> Logger.Metadata {
        metadata.mapValues { value in
            switch value {
            case .string(let text): return .string(TerminalText.escaped(text))
            case .stringConvertible(let convertible): return .string(TerminalText.escaped(convertible.description))
            default: return value
            }
        }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }
}

extension Logger {
    /// The SDK's logger: the label `io.flagship`, its handler made to escape what it prints.
    static func flagship(factory: (@Sendable (String) -> any LogHandler)? = nil) -> Logger {
        var logger = factory.map { Logger(label: "io.flagship", factory: $0) } ?? Logger(label: "io.flagship")
        logger.handler = EscapingLogHandler(logger.handler)
        return logger
    }

    /// The app's logger (`withLogger`), its handler made to escape what the SDK prints through it.
    static func flagship(wrapping given: Logger) -> Logger {
        var logger = given
        logger.handler = EscapingLogHandler(given.handler)
        return logger
    }

    /// `visitor_id` as metadata where this logger shows debug lines, else nothing: a visitor id is
    /// personal data, kept out of the lines an app keeps at its usual levels.
    func visitorMetadata(_ visitorId: String) -> Logger.Metadata? {
        logLevel <= .debug ? ["visitor_id": .string(visitorId)] : nil
    }
}
