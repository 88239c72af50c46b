#if Postgres
import Foundation

/// A migration file cut into its statements.
///
/// postgres-nio speaks PostgreSQL's extended protocol, which runs one statement per query, and a
/// migration file holds several. The file is cut at each `;` that ends a statement: not one inside
/// a string (`'a;b'`), a quoted name (`"a;b"`), a comment (`-- a;b`, `/* a;b */`) or a
/// dollar-quoted body (`$$ … ; … $$`, `$fn$ … $fn$`), so a function body stays whole.
enum SQLScript {
    static func statements(_ script: String) -> [String] {
        let characters = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0

        func flush() {
            let text = String(current).trimmingWhitespace
            if !text.isEmpty, !isOnlyComments(text) { statements.append(text) }
            current = String.UnicodeScalarView()
        }

        func copy(until end: Int) {
            current.append(contentsOf: characters[index..<min(end, characters.count)])
            index = min(end, characters.count)
        }

        while index < characters.count {
            let character = characters[index]
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            switch character {
            case "'", "\"":
                // A quote ends at the next one of its kind; a doubled quote is an escaped one.
                var end = index + 1
                while end < characters.count {
                    if characters[end] == character {
                        if end + 1 < characters.count, characters[end + 1] == character { end += 2; continue }
                        break
                    }
                    end += 1
                }
                copy(until: end + 1)
            case "-" where next == "-":
                var end = index
                while end < characters.count, characters[end] != "\n" { end += 1 }
                copy(until: end)
            case "/" where next == "*":
                var end = index + 2
                while end + 1 < characters.count, !(characters[end] == "*" && characters[end + 1] == "/") { end += 1 }
                copy(until: end + 2)
            case "$":
                guard let tag = dollarTag(characters, at: index) else {
                    copy(until: index + 1)
                    break
                }
                let body = index + tag.count
                let end = find(tag, in: characters, from: body) ?? characters.count
                copy(until: end + tag.count)
            case ";":
                index += 1
                flush()
            default:
                copy(until: index + 1)
            }
        }
        flush()
        return statements
    }

    /// `$$` or `$name$` starting at `index`, or `nil` when the `$` opens no dollar quote (`$1`).
    private static func dollarTag(_ characters: [Unicode.Scalar], at index: Int) -> [Unicode.Scalar]? {
        var end = index + 1
        while end < characters.count, characters[end] != "$" {
            let character = characters[end]
            let isTagCharacter = character == "_" || character.properties.isAlphabetic
                || (end > index + 1 && ("0"..."9").contains(character))
            guard isTagCharacter else { return nil }
            end += 1
        }
        guard end < characters.count else { return nil }
        return Array(characters[index...end])
    }

    private static func find(_ tag: [Unicode.Scalar], in characters: [Unicode.Scalar], from start: Int) -> Int? {
        guard tag.count <= characters.count else { return nil }
        var index = start
        while index + tag.count <= characters.count {
            if characters[index..<(index + tag.count)].elementsEqual(tag) { return index }
            index += 1
        }
        return nil
    }

    /// A piece of text with nothing but comments: what follows a file's last `;`.
    private static func isOnlyComments(_ text: String) -> Bool {
        text.split(separator: "\n").allSatisfy { $0.trimmingWhitespace.isEmpty || $0.trimmingWhitespace.hasPrefix("--") }
    }
}

extension StringProtocol {
    var trimmingWhitespace: String {
        String(self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
#endif
