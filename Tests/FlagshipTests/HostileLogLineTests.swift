import FlagshipStore
import Foundation
import Logging
import XCTest

@testable import Flagship

/// No forged lines (issue 18, point 16): what the SDK logs about outside text (a visitor id
/// here) is escaped and bounded, so it can neither start a new log line, nor drive the
/// terminal, nor make a line of 100,000 characters.
final class HostileLogLineTests: SDKTestCase {
    func testAVisitorIdWithANewlineAndAnEscapeSequenceForgesNoLine() async throws {
        start()
        let forged = "mallory\n2026-11-25T00:00:00+0000 critical io.flagship: [Flagship] all hits lost\u{1B}[31m"
        let visitor = await flagship.newVisitor(visitorId: forged, hasConsented: false, instanceType: .NEW_INSTANCE).buildAsync()

        try? await visitor.fetchFlags()   // its debug line names the visitor

        let lines = log.entries.map(\.message).filter { $0.contains("mallory") }
        XCTAssertFalse(lines.isEmpty, log.allText)
        for line in lines {
            XCTAssertFalse(line.contains("\n"), line)
            XCTAssertFalse(line.unicodeScalars.contains { $0.value == 0x1B }, line)
            XCTAssertTrue(line.contains(#"mallory\n2026-11-25T00:00:00+0000 critical"#), line)
            XCTAssertTrue(line.contains(#"\u{1B}[31m"#), line)
        }
    }

    func testAVeryLongVisitorIdMakesABoundedLineThatSaysItsLength() async throws {
        start()
        let long = String(repeating: "x", count: 100_000)
        let visitor = await flagship.newVisitor(visitorId: long, hasConsented: false, instanceType: .NEW_INSTANCE).buildAsync()

        try? await visitor.fetchFlags()   // its debug line names the visitor

        let lines = log.entries.map(\.message).filter { $0.contains("xxxx") }
        XCTAssertFalse(lines.isEmpty, log.allText)
        for line in lines {
            XCTAssertLessThanOrEqual(line.count, 4_200, "bounded")
            XCTAssertTrue(line.contains("characters in all)"), String(line.suffix(80)))
        }
    }

    func testTerminalTextEscapesControlAndReorderingCharactersAndKeepsTheRest() {
        XCTAssertEqual(TerminalText.escaped("a\tb\r\nc\u{0}d\u{7F}e\u{9B}f"), #"a\tb\r\nc\u{0}d\u{7F}e\u{9B}f"#)
        XCTAssertEqual(TerminalText.escaped("abc\u{202E}fed\u{2028}"), #"abc\u{202E}fed\u{2028}"#)
        XCTAssertEqual(TerminalText.escaped("héllo wörld ✓ 日本"), "héllo wörld ✓ 日本")
        XCTAssertEqual(TerminalText.escaped(String(repeating: "é", count: 10), limit: 4), "éééé…(10 characters in all)")
    }
}
