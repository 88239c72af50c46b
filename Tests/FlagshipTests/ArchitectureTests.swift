import Foundation
import XCTest

/// The Architecture article and its diagram stay true: every type, member, module and queue they
/// name is in the sources. A rename that forgets them fails here.
final class ArchitectureTests: XCTestCase {
    private static let catalog = SharedData.packageRoot.appendingPathComponent("Sources/Flagship/Flagship.docc")

    /// Every Swift file under Sources, read once.
    private static let sources: String = {
        let root = SharedData.packageRoot.appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        return files.compactMap { try? String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
    }()

    /// Names of other packages the article mentions on purpose, and what it says in words.
    private static let elsewhere: Set<String> = ["PostgresClient", "SQLite"]

    /// The names declared in Sources: types, and members (functions, properties, cases).
    private static let declared: (types: Set<String>, members: Set<String>) = {
        func names(_ pattern: String) -> Set<String> {
            let expression = try! NSRegularExpression(pattern: pattern)
            let text = sources as NSString
            return Set(expression.matches(in: sources, range: NSRange(location: 0, length: text.length)).map {
                text.substring(with: $0.range(at: 2))
            })
        }
        return (names(#"\b(class|struct|enum|protocol|actor|typealias) ([A-Za-z0-9_]+)"#),
                names(#"\b(func|var|let|case) ([A-Za-z0-9_]+)"#))
    }()

    private static let modules: Set<String> = {
        let root = SharedData.packageRoot.appendingPathComponent("Sources")
        return Set((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [])
    }()

    /// Names the two documents give: from the article, its code spans; from the diagram, its text.
    private func namesInTheDocuments() throws -> [String] {
        let article = try String(contentsOf: Self.catalog.appendingPathComponent("Architecture.md"), encoding: .utf8)
        let diagram = try String(contentsOf: Self.catalog.appendingPathComponent("Resources/architecture.svg"), encoding: .utf8)
        var names = article.matches(of: /`([^`\n]+)`/).map { String($0.output.1) }
        for text in diagram.matches(of: />([^<]+)</) {
            names += String(text.output.1).split(whereSeparator: { " ,()".contains($0) }).map(String.init)
        }
        XCTAssertTrue(article.contains("](architecture.svg)"), "the article shows the diagram")
        return names
    }

    private func declares(_ type: String) -> Bool {
        Self.declared.types.contains(type)
    }

    private func declaresMember(_ member: String) -> Bool {
        Self.declared.members.contains(member)
    }

    func testEveryTypeQueueAndMemberNamedExists() throws {
        var checked = 0
        for name in try namesInTheDocuments() {
            let name = name.trimmingCharacters(in: CharacterSet(charactersIn: ":;."))
            if name.hasPrefix("io.flagship.") {
                XCTAssertTrue(Self.sources.contains("\"\(name)\""), "no queue is labelled \(name)")
                checked += 1
                continue
            }
            // `Type`, `Type.member(...)`, `try await Type.member(_:)`: each part checked.
            guard let match = name.firstMatch(of: /(?:try await )?([A-Z][A-Za-z0-9]+)(?:\.([a-z][A-Za-z0-9]*))?/),
                  match.range.lowerBound == name.startIndex else { continue }
            let type = String(match.output.1)
            guard type.contains(where: \.isLowercase), type.count > 2 else { continue }  // a word, not a name
            if Self.modules.contains(type) || Self.elsewhere.contains(type) {
                checked += 1
            } else if type.hasSuffix("Tests") {
                let test = SharedData.packageRoot.appendingPathComponent("Tests/FlagshipTests/\(type).swift")
                XCTAssertTrue(FileManager.default.fileExists(atPath: test.path), "\(name): no test file \(type).swift")
                checked += 1
            } else if type.first == "F" || type.dropFirst().contains(where: \.isUppercase) {
                XCTAssertTrue(declares(type), "\(name): no type \(type) in Sources")
                checked += 1
            }
            if let member = match.output.2, !Self.elsewhere.contains(type) {
                XCTAssertTrue(declaresMember(String(member)), "\(name): no member \(member) in Sources")
            }
        }
        XCTAssertGreaterThan(checked, 40, "the names were not found in the documents")
    }

    /// The checks above can fail: a name that is not in the sources is caught.
    func testANameNotInTheSourcesIsCaught() {
        XCTAssertFalse(declares("BucketingEngine"), "a file's name, not a type")
        XCTAssertFalse(declaresMember("sendHitsNowPlease"))
        XCTAssertTrue(declares("HitWriter"))
        XCTAssertFalse(Self.sources.contains("\"io.flagship.tracking.elsewhere\""))
    }
}
