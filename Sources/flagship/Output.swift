import FlagshipStore
import Foundation

/// How commands print: one JSON document or an aligned text report on stdout, warnings on stderr.
enum Output {
    /// Prints `value` (dictionaries, arrays, strings, numbers, `NSNull`) as one JSON document,
    /// keys sorted so that two runs over the same data print the same text.
    static func printJSON(_ value: Any) throws {
        let data = try JSONSerialization.data(
            withJSONObject: value, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        )
        print(String(decoding: data, as: UTF8.self))
    }

    /// Prints `fields` as one line of JSON, in the order given: `{"replayed": 3, "expired": 0}`.
    /// A summary a script reads with `jq` and a person at a glance.
    /// `value` as one line of JSON, keys sorted: a row of a listing printed as it is read.
    static func jsonText(_ value: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
    }

    static func printJSONLine(_ fields: KeyValuePairs<String, Int>) throws {
        let members = try fields.map { key, value in
            let name = try JSONSerialization.data(withJSONObject: key, options: [.fragmentsAllowed])
            return String(decoding: name, as: UTF8.self) + ": \(value)"
        }
        line("{" + members.joined(separator: ", ") + "}")
    }

    /// Writes `text` and a newline to stdout at once, unbuffered: stdout is often a pipe or a
    /// file read while the command runs (and a killed process flushes nothing).
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// A stored JSON column as a JSON value to embed in the output; the text itself if it does
    /// not parse (the schema checks `json_valid`, so only a hand edit can cause that).
    static func embeddedJSON(_ text: String) -> Any {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) ?? text
    }

    /// Rows of cells as columns aligned on their widest cell, two spaces apart. Each cell is
    /// escaped (`TerminalText`): a visitor id or hit field cannot break a row or drive the terminal.
    static func table(_ rows: [[String]]) -> String {
        let rows = rows.map { $0.map { TerminalText.escaped($0) } }
        var widths: [Int] = []
        for row in rows {
            for (column, cell) in row.enumerated() {
                if column < widths.count { widths[column] = max(widths[column], cell.count) } else { widths.append(cell.count) }
            }
        }
        return rows.map { row in
            row.enumerated()
                .map { column, cell in cell.padding(toLength: widths[column], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
                .replacingOccurrences(of: " +$", with: "", options: .regularExpression)
        }.joined(separator: "\n")
    }

    /// `2024-11-21T06:20:00.123Z` (`UTCText`, which the SDK's `FSVisitorData` prints with too).
    static func utc(unixMilliseconds: Int64) -> String {
        UTCText.of(unixMilliseconds: unixMilliseconds)
    }

    /// Whole seconds from `unixMilliseconds` to `now`. A row may hold any integer (an edited file,
    /// a clock gone wrong): a difference past `Int64`'s range is clamped to it, never a trap.
    static func ageSeconds(sinceUnixMilliseconds unixMilliseconds: Int64, now: Date) -> Int64 {
        let (difference, overflow) = now.unixMilliseconds.subtractingReportingOverflow(unixMilliseconds)
        let milliseconds = overflow ? (unixMilliseconds < 0 ? Int64.max : Int64.min) : difference
        return UTCText.floorDivision(milliseconds, by: 1000).quotient
    }

    /// `41s`, `5m12s`, `3h02m`, `2d04h`: an age as a person reads it.
    static func age(seconds: Int64) -> String {
        guard seconds >= 0 else { return "-" + age(seconds: seconds == .min ? .max : -seconds) }
        func twoDigits(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        switch seconds {
        case ..<60: return "\(seconds)s"
        case ..<3_600: return "\(seconds / 60)m\(twoDigits(seconds % 60))s"
        case ..<86_400: return "\(seconds / 3_600)h\(twoDigits(seconds % 3_600 / 60))m"
        default: return "\(seconds / 86_400)d\(twoDigits(seconds % 86_400 / 3_600))h"
        }
    }

    /// Writes `warning: <message>` to stderr: something the user must know that did not stop the
    /// command. What was printed on stdout before it is flushed first, so that the two streams
    /// read in order when they go to one pipe or file.
    static func warn(_ message: String) {
        flushStandardOutput()
        FileHandle.standardError.write(Data("\(warningLabel) \(TerminalText.escaped(message, limit: 4_096))\n".utf8))
    }

    /// The two labels of every line the tool writes on stderr: a failure (ArgumentParser's own,
    /// for `CommandFailure` and usage errors, and the SDK's error lines) and a warning.
    static let errorLabel = "Error:"
    static let warningLabel = "warning:"

    /// Writes out what `print` buffered for stdout (a pipe or a file is block-buffered): before
    /// anything goes to stderr, which is not buffered.
    static func flushStandardOutput() {
        // Every C output stream: `stdout` itself is a global C variable Swift 6 will not read.
        fflush(nil)
    }

    /// Why a file named on the command line could not be read, as the tool's other messages say
    /// things (`no such file`), rather than Foundation's sentence ("The operation could not be
    /// completed. The file doesn't exist.").
    static func reason(readingFile error: any Error) -> String {
        switch (error as? CocoaError)?.code {
        case .fileReadNoSuchFile?, .fileNoSuchFile?: return "no such file"
        case .fileReadNoPermission?: return "permission denied"
        case .fileReadInapplicableStringEncoding?: return "not UTF-8 text"
        default: return (error as NSError).localizedDescription
        }
    }
}

/// A failure the user can act on, printed as `Error: <description>` with exit status 1 (a misused
/// option, a `ValidationError`, exits 64 with the command's usage).
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    /// `description` is escaped (`TerminalText`): what it quotes from outside stays on its line.
    init(_ description: String) {
        self.description = TerminalText.escaped(description, limit: 4_096)
    }
}
