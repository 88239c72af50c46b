import Foundation
import XCTest

/// Rooms a newcomer can live in (issue 46): no file in Sources over 400 lines, and no function,
/// initializer or subscript over 60, counted from the line that declares it to the line of the
/// brace that closes its body.
final class RoomsTests: XCTestCase {
    static let maximumFileLines = 400
    static let maximumFunctionLines = 60

    /// Every Swift file under Sources, by its path from the package root.
    private static func sources() throws -> [(path: String, text: String)] {
        let root = SharedData.packageRoot
        let files = FileManager.default.enumerator(at: root.appendingPathComponent("Sources"), includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        return try files.map { url in
            (String(url.path.dropFirst(root.path.count + 1)), try String(contentsOf: url, encoding: .utf8))
        }.sorted { $0.path < $1.path }
    }

    func testNoFileInSourcesIsOver400Lines() throws {
        let sources = try Self.sources()
        XCTAssertGreaterThan(sources.count, 100, "the sources were found")
        let long = sources.map { ($0.path, $0.text.reduce(into: 0) { count, character in if character == "\n" { count += 1 } }) }
            .filter { $0.1 > Self.maximumFileLines }
        XCTAssertEqual(long.map { "\($0.0): \($0.1) lines" }, [])
    }

    func testNoFunctionInSourcesIsOver60Lines() throws {
        var measured = 0
        var long: [String] = []
        for source in try Self.sources() {
            for span in FunctionSpans.spans(in: source.text) {
                measured += 1
                if span.lines > Self.maximumFunctionLines { long.append("\(source.path):\(span.line) \(span.name): \(span.lines) lines") }
            }
        }
        XCTAssertGreaterThan(measured, 1_500, "the functions were found")
        XCTAssertEqual(long, [])
    }

    /// The counter itself: braces in strings, interpolations, raw strings and comments do not
    /// count; a protocol's requirements have no body; a nested function is measured apart.
    func testTheCounterReadsSwiftAsTheCompilerDoes() {
        let source = #"""
        protocol P {
            func required()
            init(value: Int)
        }

        struct S {
            /* a comment { with a brace
               /* nested */ } */
            func first() -> String {
                let text = "a { brace \(["}": 1].count) and \"quote\" {"
                let raw = #"raw "{" \(not interpolated) "#
                // a line comment {
                func nested() {
                    _ = """
                    {{{ \(text.isEmpty ? "}" : "{")
                    """
                }
                nested()
                return text + raw
            }

            init() {}

            deinit {
                print("}")
            }

            subscript(index: Int) -> Int { index }
            var computed: Int { 1 }
        }
        """#
        let spans = FunctionSpans.spans(in: source)
        XCTAssertEqual(spans.map(\.name), ["nested", "first", "init", "deinit", "subscript"])
        XCTAssertEqual(spans.map(\.line), [13, 9, 22, 24, 28])
        XCTAssertEqual(spans.map(\.lines), [5, 12, 1, 3, 1])
    }
}

/// Where the functions of a Swift source begin and end, by line, read with a small lexer that
/// knows Swift's comments (nested), strings (multi-line, raw, with interpolations) and braces.
enum FunctionSpans {
    struct Span: Equatable {
        let name: String
        /// The line of the declaration, from 1.
        let line: Int
        /// From the declaration's line to the closing brace's, both counted.
        let lines: Int
    }

    private enum Frame {
        /// Code: the file's, or an interpolation's (`parentheses` open in it, from its own).
        case code(parentheses: Int)
        case string(multiline: Bool, hashes: Int)
    }

    static func spans(in source: String) -> [Span] {
        let bytes = Array(source.utf8)
        var lexer = Lexer(bytes: bytes)
        return lexer.run()
    }

    private struct Lexer {
        let bytes: [UInt8]
        var index = 0
        var line = 1
        var depth = 0
        var frames: [Frame] = [.code(parentheses: 0)]
        /// A declaration whose body's brace has not come yet: its name, line and depth.
        var pending: (name: String, line: Int, depth: Int)?
        /// Bodies open: the declaration and the depth inside its braces.
        var open: [(name: String, line: Int, depth: Int)] = []
        var spans: [Span] = []

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        func at(_ offset: Int) -> UInt8? {
            index + offset < bytes.count ? bytes[index + offset] : nil
        }

        func starts(with text: String) -> Bool {
            let utf8 = Array(text.utf8)
            return index + utf8.count <= bytes.count && Array(bytes[index..<(index + utf8.count)]) == utf8
        }

        mutating func advance(_ count: Int = 1) {
            for _ in 0..<count where index < bytes.count {
                if bytes[index] == UInt8(ascii: "\n") { line += 1 }
                index += 1
            }
        }

        mutating func run() -> [Span] {
            while index < bytes.count {
                switch frames[frames.count - 1] {
                case .code(let parentheses): code(parentheses: parentheses)
                case .string(let multiline, let hashes): string(multiline: multiline, hashes: hashes)
                }
            }
            return spans
        }

        mutating func code(parentheses: Int) {
            let byte = bytes[index]
            if starts(with: "//") {
                while let next = at(0), next != UInt8(ascii: "\n") { advance() }
            } else if starts(with: "/*") {
                blockComment()
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "#") {
                stringStart()
            } else if byte == UInt8(ascii: "(") || byte == UInt8(ascii: ")") {
                let inInterpolation = frames.count > 1
                let count = parentheses + (byte == UInt8(ascii: "(") ? 1 : -1)
                advance()
                if inInterpolation, count == 0 { frames.removeLast() } else { frames[frames.count - 1] = .code(parentheses: count) }
            } else if byte == UInt8(ascii: "{") {
                if let declaration = pending, declaration.depth == depth {
                    open.append((declaration.name, declaration.line, depth + 1))
                    pending = nil
                }
                depth += 1
                advance()
            } else if byte == UInt8(ascii: "}") {
                if let body = open.last, body.depth == depth {
                    open.removeLast()
                    spans.append(Span(name: body.name, line: body.line, lines: line - body.line + 1))
                }
                depth -= 1
                if let declaration = pending, declaration.depth > depth { pending = nil }
                advance()
            } else if isIdentifierStart(byte) {
                word()
            } else {
                advance()
            }
        }

        /// A word: a declaration's keyword starts one; another declaration at its depth ends a
        /// pending one (a protocol's requirement has no body).
        mutating func word() {
            let start = index
            let previous = start > 0 ? bytes[start - 1] : UInt8(ascii: " ")
            while let next = at(0), isIdentifierStart(next) || (next >= UInt8(ascii: "0") && next <= UInt8(ascii: "9")) { advance() }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard previous != UInt8(ascii: "."), previous != UInt8(ascii: "`") else { return }
            switch text {
            case "func":
                while at(0) == UInt8(ascii: " ") { advance() }
                let nameStart = index
                while let next = at(0), next != UInt8(ascii: "("), next != UInt8(ascii: "<"), next != UInt8(ascii: " ") { advance() }
                pending = (String(decoding: bytes[nameStart..<index], as: UTF8.self), line, depth)
            case "init", "deinit", "subscript":
                pending = (text, line, depth)
            case "var", "let", "case":
                if let declaration = pending, declaration.depth == depth { pending = nil }
            default:
                break
            }
        }

        mutating func blockComment() {
            var nesting = 0
            repeat {
                if starts(with: "/*") {
                    nesting += 1
                    advance(2)
                } else if starts(with: "*/") {
                    nesting -= 1
                    advance(2)
                } else {
                    advance()
                }
            } while nesting > 0 && index < bytes.count
        }

        /// `"`, `"""`, `#"`, `##"""`...; a `#` that starts no string (`#if`, `#available`) is passed.
        mutating func stringStart() {
            var hashes = 0
            while at(hashes) == UInt8(ascii: "#") { hashes += 1 }
            guard at(hashes) == UInt8(ascii: "\"") else {
                advance(max(hashes, 1))
                return
            }
            advance(hashes)
            let multiline = starts(with: "\"\"\"")
            advance(multiline ? 3 : 1)
            frames.append(.string(multiline: multiline, hashes: hashes))
        }

        mutating func string(multiline: Bool, hashes: Int) {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") {
                var marks = 0
                while at(1 + marks) == UInt8(ascii: "#") { marks += 1 }
                if marks == hashes, at(1 + marks) == UInt8(ascii: "(") {
                    advance(2 + marks)
                    frames.append(.code(parentheses: 1))
                } else {
                    advance(marks == hashes ? 2 + marks : 1)
                }
                return
            }
            let quotes = multiline ? 3 : 1
            if starts(with: String(repeating: "\"", count: quotes)), (0..<hashes).allSatisfy({ at(quotes + $0) == UInt8(ascii: "#") }) {
                advance(quotes + hashes)
                frames.removeLast()
                return
            }
            advance()
        }

        func isIdentifierStart(_ byte: UInt8) -> Bool {
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || byte == UInt8(ascii: "_")
        }
    }
}
