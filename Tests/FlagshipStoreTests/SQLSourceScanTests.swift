import Foundation
import XCTest

/// SQL reaches SQLite as constant text, values as bound parameters: no string literal of
/// `Sources/` that holds SQL is built with an interpolation or with `+`, but those listed in
/// `allowed`, each with why it is safe. In `FlagshipPostgres`, SQL literals are postgres-nio's
/// `PostgresQuery`, whose interpolations are bound parameters (`$1`...); there, what must hold
/// is that `PostgresQuery(unsafeSQL:)`, which binds nothing, is never given built text. (The migrations' own SQL is in `Migrations/*.sql`,
/// constant files; the Swift that runs them is scanned like the rest.)
final class SQLSourceScanTests: XCTestCase {
    /// An interpolation allowed in SQL text: in a file of this name, this exact expression.
    struct Allowance: Hashable {
        let file: String
        let expression: String
        let reason: String
    }

    static let allowed: [Allowance] = [
        Allowance(file: "Database.swift", expression: "options.synchronous.rawValue",
                  reason: "a PRAGMA takes no bound parameter; the value is an enum's raw value"),
        Allowance(file: "Database.swift", expression: "max(64, options.writerCacheKibibytes)",
                  reason: "a PRAGMA takes no bound parameter; the value is an Int of the options"),
        Allowance(file: "Connection.swift", expression: "Self.smallCacheReadPages",
                  reason: "a PRAGMA takes no bound parameter; the value is an Int constant"),
        Allowance(file: "Connection.swift", expression: "before",
                  reason: "a PRAGMA takes no bound parameter; the value is the Int64 SQLite gave for the same PRAGMA"),
        Allowance(file: "BackgroundCheckpointer.swift", expression: "synchronous.rawValue",
                  reason: "a PRAGMA takes no bound parameter; the value is an enum's raw value"),
        Allowance(file: "FlagshipDatabase+Checks.swift", expression: "table",
                  reason: "a PRAGMA takes no bound parameter; the value is one of three table names of a constant list (boundedCheck)"),
        Allowance(file: "Migrator.swift", expression: "migration.version",
                  reason: "a PRAGMA takes no bound parameter; the value is an Int of the compiled migration list"),
        Allowance(file: "Migrator.swift", expression: "Self.applicationID",
                  reason: "a PRAGMA takes no bound parameter; the value is an Int constant"),
        Allowance(file: "Migrator.swift", expression: "checksum",
                  reason: "a column or NULL, one of two literals chosen by the schema's shape"),
        Allowance(file: "HitRecordStore.swift", expression: "Self.columns",
                  reason: "a constant list of the table's column names"),
        Allowance(file: "BucketingFileVersionStore.swift", expression: "Self.selectColumns",
                  reason: "a constant SELECT of the kept bucketing files' column names"),
        Allowance(file: "DecisionRecordStore.swift", expression: "try selectColumns()",
                  reason: "one of two constant SELECTs of column names, from the table or its view by schema version"),
        Allowance(file: "VisitorRecordStore.swift", expression: "try selectColumns()",
                  reason: "one of two constant SELECTs of column names, from the table or its view by schema version"),
    ]

    private static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources", isDirectory: true)

    func testSQLInSourcesIsNeverBuiltFromValues() throws {
        var findings: [String] = []
        var used: Set<Allowance> = []
        var sqlLiterals = 0
        let files = try swiftFiles(under: Self.sources)
        XCTAssertGreaterThan(files.count, 50, "the scan sees the sources")
        for file in files {
            let name = file.lastPathComponent
            let text = try String(contentsOf: file, encoding: .utf8)
            if file.pathComponents.contains("FlagshipPostgres") {
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where line.contains("unsafeSQL:") && (line.contains("\\(") || line.contains(" + ")) {
                    findings.append("\(name):\(number + 1): unsafeSQL is given built text")
                }
                continue
            }
            for literal in SwiftLiteralScanner.literals(in: text)
            where SQLText.looksLikeSQL(literal.text) {
                sqlLiterals += 1
                let place = "\(file.path.replacingOccurrences(of: Self.sources.path + "/", with: "")):\(literal.line)"
                for expression in literal.interpolations {
                    if let allowance = Self.allowed.first(where: { $0.file == name && $0.expression == expression }) {
                        used.insert(allowance)
                    } else {
                        findings.append("\(place): SQL interpolates \\(\(expression))")
                    }
                }
                if literal.joinedWithPlus {
                    findings.append("\(place): SQL is concatenated with +")
                }
            }
        }

        XCTAssertGreaterThan(sqlLiterals, 40, "the scan recognises the store's SQL")
        XCTAssertEqual(findings, [], "bind values with ?, or list the case in `allowed` with its reason")
        XCTAssertEqual(Set(Self.allowed).subtracting(used).map(\.expression).sorted(), [], "allowances no source needs any more")
    }

    // MARK: The scanner itself

    func testTheScannerFlagsInterpolatedAndConcatenatedSQLOnly() {
        let source = #####"""
            let a = try connection.query("SELECT * FROM hits WHERE id = \(id)")
            let b = "DELETE FROM visitors WHERE visitor_id = '" + visitorId + "'"
            sql += " WHERE visitor_id = 'x'"
            let c = """
                UPDATE hits SET attempts = 1
                WHERE id IN (\(ids.map { "'\($0)'" }.joined(separator: ",")))
                """
            let d = #"INSERT INTO hits (id) VALUES (\#(value))"#
            let e = try connection.query("SELECT * FROM hits WHERE id = ?", [.text(id)])
            logger.error("Visitor '\(visitorId)' could not be deleted from the cache: \(error)")
            // connection.query("SELECT * FROM hits WHERE id = \(id)") in a comment
            /* "DELETE FROM hits WHERE id = \(id)" /* nested */ still a comment */
            let f = "escaped \"quote\" and \\(not an interpolation) SELECT x FROM y"
            let g = "PRAGMA synchronous = \(mode.rawValue)"
            try connection.execute("VACUUM INTO '\(path)'")
            """#####

        let flagged = SwiftLiteralScanner.literals(in: source).filter { SQLText.looksLikeSQL($0.text) }

        XCTAssertEqual(flagged.map(\.line), [1, 2, 3, 4, 8, 9, 13, 14, 15])
        XCTAssertEqual(flagged.map(\.interpolations), [
            ["id"], [], [], [#"ids.map { "'\($0)'" }.joined(separator: ",")"#], ["value"], [], [], ["mode.rawValue"], ["path"],
        ])
        XCTAssertEqual(flagged.map(\.joinedWithPlus), [false, true, true, false, false, false, false, false, false])
    }

    private func swiftFiles(under directory: URL) throws -> [URL] {
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
    }
}

/// Whether a string literal's text is SQL: a statement's keywords, upper case as the store
/// writes them (so that "deleted from the cache" in a log line is not).
enum SQLText {
    private static let patterns = [
        #"\bSELECT\b[\s\S]*\bFROM\b"#, #"\bINSERT\s+(OR\s+[A-Z]+\s+)?INTO\b"#, #"\bUPDATE\s+\w+\s+SET\b"#,
        #"\bDELETE\s+FROM\b"#, #"\bPRAGMA\s+\w+"#, #"\b(CREATE|DROP|ALTER)\s+(TABLE|INDEX|VIEW|TRIGGER)\b"#,
        #"\bWHERE\b"#, #"\bVALUES\s*\("#, #"\bORDER\s+BY\b"#, #"\bRETURNING\b"#,
        #"\b(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|VACUUM|ATTACH|DETACH)\b"#,
    ].map { try! NSRegularExpression(pattern: $0) }  // literals known to compile

    static func looksLikeSQL(_ text: String) -> Bool {
        let range = NSRange(text.startIndex..., in: text)
        return patterns.contains { $0.firstMatch(in: text, range: range) != nil }
    }
}

/// The string literals of Swift source, with their interpolations: enough of Swift's lexical
/// grammar for a scan (comments, nested block comments, `"`, `"""` and raw `#"..."#` literals,
/// escapes, interpolations holding code and literals of their own).
struct SwiftLiteralScanner {
    struct Literal: Equatable {
        /// The line the literal opens on, from 1.
        let line: Int
        /// The literal's text, each interpolation replaced by U+FFFC.
        let text: String
        /// The source of each interpolation, trimmed.
        let interpolations: [String]
        /// Whether a `+` (or `+=`) is right before or after it: text joined at run time.
        let joinedWithPlus: Bool
    }

    private let characters: [Character]
    private var index = 0
    private var line = 1
    private var found: [Literal] = []

    static func literals(in source: String) -> [Literal] {
        var scanner = SwiftLiteralScanner(characters: Array(source))
        scanner.scanCode(untilClosingParenthesis: false)
        return scanner.found.sorted { $0.line < $1.line }
    }

    private init(characters: [Character]) {
        self.characters = characters
    }

    private func peek(_ offset: Int = 0) -> Character? {
        index + offset < characters.count ? characters[index + offset] : nil
    }

    private mutating func advance() {
        if characters[index] == "\n" { line += 1 }
        index += 1
    }

    private func starts(with text: String) -> Bool {
        var offset = 0
        for character in text {
            guard peek(offset) == character else { return false }
            offset += 1
        }
        return true
    }

    /// Code up to the end, or up to the `)` closing an interpolation (consumed).
    private mutating func scanCode(untilClosingParenthesis: Bool) {
        var depth = 0
        var lastSignificant: [Character] = []
        while let character = peek() {
            if starts(with: "//") {
                while let next = peek(), next != "\n" { advance() }
                continue
            }
            if starts(with: "/*") {
                skipBlockComment()
                continue
            }
            if character == "#" || character == "\"", let hashes = literalOpening() {
                let plusBefore = lastSignificant.last == "+" || lastSignificant.suffix(2) == ["+", "="]
                scanLiteral(hashes: hashes, plusBefore: plusBefore)
                lastSignificant = ["\""]
                continue
            }
            if character == "(" { depth += 1 }
            if character == ")" {
                if untilClosingParenthesis && depth == 0 {
                    advance()
                    return
                }
                depth -= 1
            }
            if !character.isWhitespace { lastSignificant = Array((lastSignificant + [character]).suffix(2)) }
            advance()
        }
    }

    private mutating func skipBlockComment() {
        var depth = 0
        while peek() != nil {
            if starts(with: "/*") {
                depth += 1
                advance()
            } else if starts(with: "*/") {
                depth -= 1
                advance()
                if depth == 0 {
                    advance()
                    return
                }
            }
            advance()
        }
    }

    /// The number of `#` of a literal opening here (`"`, `#"`, `##"`...), or `nil`.
    private func literalOpening() -> Int? {
        var hashes = 0
        while peek(hashes) == "#" { hashes += 1 }
        return peek(hashes) == "\"" ? hashes : nil
    }

    private mutating func scanLiteral(hashes: Int, plusBefore: Bool) {
        let startLine = line
        for _ in 0..<hashes { advance() }
        let multiline = starts(with: "\"\"\"")
        for _ in 0..<(multiline ? 3 : 1) { advance() }
        let delimiter = String(repeating: "\"", count: multiline ? 3 : 1) + String(repeating: "#", count: hashes)
        let escape = "\\" + String(repeating: "#", count: hashes)
        var text = ""
        var interpolations: [String] = []
        while peek() != nil {
            if starts(with: delimiter) {
                for _ in 0..<delimiter.count { advance() }
                break
            }
            if starts(with: escape) {
                for _ in 0..<escape.count { advance() }
                if peek() == "(" {
                    advance()
                    let start = index
                    scanCode(untilClosingParenthesis: true)
                    interpolations.append(String(characters[start..<(index - 1)]).trimmingCharacters(in: .whitespacesAndNewlines))
                    text.append("\u{FFFC}")
                } else if let escaped = peek() {
                    text.append(escaped)
                    advance()
                }
                continue
            }
            text.append(characters[index])
            advance()
        }
        var after = index
        while after < characters.count, characters[after].isWhitespace { after += 1 }
        let plusAfter = after < characters.count && characters[after] == "+"
        found.append(Literal(line: startLine, text: text, interpolations: interpolations, joinedWithPlus: plusBefore || plusAfter))
    }
}
