import Foundation

/// A Swift example of a document, as written there.
struct DocumentSnippet: Sendable {
    /// `000`, `001` (the reference files' prefixes) or `README`.
    let document: String
    /// 1-based, in document order.
    let number: Int
    /// The document line of the snippet's first line.
    let line: Int
    let text: String

    var name: String { "\(document) #\(number) (line \(line))" }

    /// The first line of code, to tell snippets apart in a listing.
    var summary: String {
        let code = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { !$0.isEmpty && !$0.hasPrefix("//") } ?? ""
        return code.count > 70 ? String(code.prefix(67)) + "..." : code
    }
}

/// Finds the Swift examples of the documents.
enum SnippetExtraction {
    /// The bodies of the fences opened with one of `languages` (`` ```swift ``), in order.
    static func fenced(_ markdown: String, languages: Set<String>, document: String) -> [DocumentSnippet] {
        var snippets: [DocumentSnippet] = []
        var open: (line: Int, lines: [String])?
        for (index, line) in lines(of: markdown).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if let current = open {
                if trimmed == "```" {
                    snippets.append(DocumentSnippet(document: document, number: snippets.count + 1, line: current.line,
                                                    text: current.lines.joined(separator: "\n")))
                    open = nil
                } else {
                    open = (current.line, current.lines + [line])
                }
            } else if trimmed.hasPrefix("```"), languages.contains(String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces)) {
                open = (index + 2, [])
            }
        }
        return snippets
    }

    /// The Swift runs of a web page converted to text (the 3.2 reference): no fences, no
    /// indentation, Swift and Objective-C examples one after the other between prose lines.
    ///
    /// 1. A run starts at a line beginning `import `, `@import`, `//`, `let `, `var `, `Flagship.`,
    ///    or `.` and a letter (a builder fragment).
    /// 2. It goes on while lines look like code: they start as in 1, or with `return `, `public `,
    ///    `- (`, `@`, a bracket, a brace, a parenthesis or `"`, or with a member access
    ///    (`visitor1.fetchFlags {`, `screen.userIp =`); or they end with `(`, `)`, `,` or `;`,
    ///    or hold ` = `, `[[` or `@"`.
    /// 3. It ends at any other line: prose, a table row (a line with `|`), or an API signature
    ///    listed in prose (`func …`, `init(…`, `typealias …`, `protocol …`, `- func …`, `- init(…`).
    /// 4. A run is cut into segments: one begins at each comment that follows code, and at each
    ///    `@import`. A segment is Objective-C when a line holds `[[`, `];`, `@import`,
    ///    `@interface`, `@implementation`, `@end`, `^{` or a literal (`@"`, `@12`, `@{`, `@[`,
    ///    `@YES`, `@NO`), or starts a method (`- (`); Swift otherwise. A segment of comments
    ///    only belongs with the next one; one that starts `// Representation of` (sample output)
    ///    with the one before.
    /// 5. Consecutive segments of one language make one example; the Objective-C ones are dropped.
    static func plainText(_ text: String, document: String) -> [DocumentSnippet] {
        var runs: [[NumberedLine]] = []
        var current: [NumberedLine] = []
        for (index, raw) in lines(of: text).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if current.isEmpty ? PlainTextLine.startsRun(line) : PlainTextLine.continuesRun(line) {
                current.append((index + 1, raw))
            } else {
                if !current.isEmpty { runs.append(current) }
                current = PlainTextLine.startsRun(line) ? [(index + 1, raw)] : []
            }
        }
        if !current.isEmpty { runs.append(current) }

        var snippets: [DocumentSnippet] = []
        for run in runs {
            for group in languageGroups(of: run) where group.language == .swift {
                snippets.append(DocumentSnippet(document: document, number: snippets.count + 1, line: group.lines[0].line,
                                                text: group.lines.map(\.text).joined(separator: "\n")))
            }
        }
        return snippets
    }

    /// A line of a document and its number (1-based).
    private typealias NumberedLine = (line: Int, text: String)

    private enum Language { case swift, objectiveC }

    /// Rules 4 and 5: a run's lines grouped by language, in order.
    private static func languageGroups(of run: [NumberedLine]) -> [(language: Language, lines: [NumberedLine])] {
        var segments: [[NumberedLine]] = []
        for entry in run {
            let line = entry.text.trimmingCharacters(in: .whitespaces)
            let previousIsCode = segments.last?.last.map { !$0.text.trimmingCharacters(in: .whitespaces).hasPrefix("//") } ?? false
            if segments.isEmpty || (line.hasPrefix("//") && previousIsCode) || line.hasPrefix("@import") {
                segments.append([entry])
            } else {
                segments[segments.count - 1].append(entry)
            }
        }
        // nil: comments only (goes with the next segment) or sample output (with the previous one).
        let own: [Language?] = segments.map { segment in
            let texts = segment.map { $0.text.trimmingCharacters(in: .whitespaces) }
            if texts[0].hasPrefix("// Representation of") || texts.allSatisfy({ $0.hasPrefix("//") }) { return nil }
            return texts.contains(where: PlainTextLine.isObjectiveC) ? .objectiveC : .swift
        }
        var groups: [(language: Language, lines: [NumberedLine])] = []
        for (index, segment) in segments.enumerated() {
            let language: Language
            if let known = own[index] {
                language = known
            } else if segment[0].text.trimmingCharacters(in: .whitespaces).hasPrefix("// Representation of") {
                language = groups.last?.language ?? .swift
            } else {
                language = own[(index + 1)...].lazy.compactMap { $0 }.first ?? groups.last?.language ?? .swift
            }
            if groups.last?.language == language {
                groups[groups.count - 1].lines += segment
            } else {
                groups.append((language, segment))
            }
        }
        return groups
    }

    private static func lines(of text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { String($0.hasSuffix("\r") ? $0.dropLast() : $0) }
    }
}

/// How `SnippetExtraction.plainText` reads one line (trimmed).
enum PlainTextLine {
    static func startsRun(_ line: String) -> Bool {
        ["import ", "@import", "//", "let ", "var ", "Flagship."].contains(where: line.hasPrefix) || isBuilderFragment(line)
    }

    static func continuesRun(_ line: String) -> Bool {
        if line.isEmpty || line.contains("|") || isSignature(line) { return false }
        if startsRun(line) || ["return ", "public ", "- (", "@", "[", "]", "{", "}", "(", ")", "\""].contains(where: line.hasPrefix) {
            return true
        }
        if line.range(of: #"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+\s*[({=]"#, options: .regularExpression) != nil { return true }
        return ["(", ")", ",", ";"].contains(where: line.hasSuffix) || [" = ", "[[", "@\""].contains(where: line.contains)
    }

    static func isSignature(_ line: String) -> Bool {
        ["func ", "init(", "typealias ", "protocol ", "- func ", "- init("].contains(where: line.hasPrefix)
    }

    static func isObjectiveC(_ line: String) -> Bool {
        ["[[", "];", "@import", "@interface", "@implementation", "@end", "^{"].contains(where: line.contains)
            || line.hasPrefix("- (") || line.range(of: #"@["\d{\[]|@YES|@NO"#, options: .regularExpression) != nil
    }

    private static func isBuilderFragment(_ line: String) -> Bool {
        line.count > 1 && line.hasPrefix(".") && line.dropFirst().first!.isLetter
    }
}

/// What the harness adds to a snippet so it builds as a program of its own. The snippet's text
/// goes into the target's `main.swift` unchanged; each rule applies only when a snippet needs it:
///
/// - (a) Free variables: the names the documents use as if declared earlier (`visitor1`,
///   `visitor`, `user`, `customCacheManager`) that a snippet uses without declaring are declared
///   in a second file of the target, `Context.swift`, with real values of the public API. That
///   file also imports for the whole target (`@_exported import`) Flagship when the snippet does
///   not import it, and Foundation when it names a Foundation type (`Data`, `Date`, `URL`,
///   `UUID`) without importing it: the documents' examples are parts of an app's file, which does.
/// - (b) A fragment that starts with a `.with…` configuration call gets its receiver,
///   `FSConfigBuilder()`, on a line of its own before it.
/// - (c) A `// Representation of …` comment followed by JSON is sample output, not code:
///   `main.swift` ends before it.
///
/// The README's blocks get none of this: a reader pastes them whole, so they must build as they are.
struct SnippetHarness {
    struct Prepared: Equatable {
        var main: String
        /// `Context.swift`, when rule (a) applies.
        var context: String?
        /// Lines added before the snippet (rule b), to map a `main.swift` line back to the document.
        var linesBefore: Int
        /// The rules applied, e.g. `["a: visitor1", "c"]`.
        var rules: [String]
    }

    /// Rule (a)'s names, with their declarations.
    static let freeVariables: [(name: String, declaration: String)] = [
        ("visitor1", #"let visitor1 = Flagship.sharedInstance.newVisitor(visitorId: "visitor_1", hasConsented: true).build()"#),
        ("visitor", #"let visitor = Flagship.sharedInstance.newVisitor(visitorId: "visitor", hasConsented: true).build()"#),
        ("user", #"let user = Flagship.sharedInstance.newVisitor(visitorId: "user", hasConsented: true).build()"#),
        ("customCacheManager", "let customCacheManager = FSCacheManager()"),
    ]

    /// The Foundation types whose use, without `import Foundation`, makes rule (a) import it.
    static let foundationTypes = ["Data", "Date", "URL", "UUID"]

    static func prepare(_ snippet: DocumentSnippet) -> Prepared {
        var text = snippet.text
        var rules: [String] = []
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if let sample = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("// Representation of") }) {
            lines = Array(lines[..<sample])
            text = lines.joined(separator: "\n")
            rules.append("c")
        }
        let code = SwiftSource.codeOnly(text)
        var linesBefore = 0
        let firstCode = code.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty }
        if let firstCode, firstCode.hasPrefix(".with") {
            text = "FSConfigBuilder()\n" + text
            linesBefore = 1
            rules.append("b")
        }
        let missing = freeVariables.filter { SwiftSource.uses(code, $0.name) && !SwiftSource.declares(code, $0.name) }
        let importsFlagship = SwiftSource.imports(code, "Flagship")
        let needsFoundation = !SwiftSource.imports(code, "Foundation") && foundationTypes.contains { SwiftSource.uses(code, $0) }
        var context: String?
        if !missing.isEmpty || !importsFlagship || needsFoundation {
            var contextLines = ["// Harness rule (a): what the documents assume was written before this example."]
            contextLines.append(importsFlagship ? "import Flagship" : "@_exported import Flagship")
            if needsFoundation { contextLines.append("@_exported import Foundation") }
            contextLines += missing.map(\.declaration)
            context = contextLines.joined(separator: "\n") + "\n"
            let added = missing.map(\.name) + (importsFlagship ? [] : ["import Flagship"]) + (needsFoundation ? ["import Foundation"] : [])
            rules.append("a: " + added.joined(separator: ", "))
        }
        return Prepared(main: text + "\n", context: context, linesBefore: linesBefore, rules: rules)
    }
}

/// Just enough Swift lexing to ask a snippet which names it uses and declares.
enum SwiftSource {
    /// `source` with comments and the contents of string literals blanked (newlines kept).
    static func codeOnly(_ source: String) -> String {
        var output = ""
        var characters = Array(source)[...]
        var inString = false
        while let character = characters.first {
            characters = characters.dropFirst()
            if inString {
                if character == "\\", let escaped = characters.first {
                    characters = characters.dropFirst()
                    output += " " + (escaped == "\n" ? "\n" : " ")
                } else if character == "\"" || character == "\n" {
                    inString = false
                    output.append(character)
                } else {
                    output += " "
                }
            } else if character == "\"" {
                inString = true
                output.append(character)
            } else if character == "/", characters.first == "/" {
                while let next = characters.first, next != "\n" { characters = characters.dropFirst() }
            } else if character == "/", characters.first == "*" {
                characters = characters.dropFirst()
                while let next = characters.first, !(next == "*" && characters.dropFirst().first == "/") {
                    characters = characters.dropFirst()
                    if next == "\n" { output += "\n" }
                }
                characters = characters.dropFirst(2)
            } else {
                output.append(character)
            }
        }
        return output
    }

    /// Whether `code` mentions `name` as a name of its own (not a member: `x.name`).
    static func uses(_ code: String, _ name: String) -> Bool {
        code.range(of: #"(?<![\w.])"# + name + #"(?!\w)"#, options: .regularExpression) != nil
    }

    static func imports(_ code: String, _ module: String) -> Bool {
        code.range(of: #"(?m)^\s*import\s+"# + module + #"\s*$"#, options: .regularExpression) != nil
    }

    static func declares(_ code: String, _ name: String) -> Bool {
        code.range(of: #"\b(let|var|class|struct|enum|func)\s+"# + name + #"(?!\w)"#, options: .regularExpression) != nil
    }
}
