import Foundation

/// Text from outside the SDK (a visitor id, a context value, a flag key, a hit field, a server's
/// message, a file name) made safe to print on one line of a log or a terminal.
///
/// Control characters are escaped (`\n`, `\r`, `\t`, and `\u{1B}` for the others: C0, DEL, C1),
/// as are the characters that break or reorder a line without being control characters (U+2028,
/// U+2029, the bidirectional overrides and isolates): a visitor id holding a newline and an ESC
/// sequence can neither forge a log line nor recolour the terminal. Text longer than `limit`
/// characters once escaped is cut, saying its full length. JSON output never goes through this:
/// it stays exact.
package enum TerminalText {
    /// The longest escaped text kept whole, in characters.
    package static let defaultLimit = 256

    package static func escaped(_ text: String, limit: Int = defaultLimit) -> String {
        var escaped = ""
        var kept = 0
        for scalar in text.unicodeScalars {
            let piece: String
            switch scalar.value {
            case 0x0A: piece = "\\n"
            case 0x0D: piece = "\\r"
            case 0x09: piece = "\\t"
            case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C:
                piece = "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: piece = String(scalar)
            }
            guard kept + piece.count <= limit else {
                return escaped + "…(\(text.count) characters in all)"
            }
            escaped += piece
            kept += piece.count
        }
        return escaped
    }
}
