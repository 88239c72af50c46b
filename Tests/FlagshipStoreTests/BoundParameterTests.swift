import Foundation
import XCTest

import FlagshipStore

/// Data only ever reaches SQLite as bound values: text that looks like SQL is stored as text.
final class BoundParameterTests: StoreTestCase {
    private static let hostileStrings = [
        "'); DROP TABLE hits; --",
        "Robert'); DELETE FROM visitors WHERE ('1' = '1",
        #"quote ' double " backtick ` semicolon ; end"#,
        "% _ * ? ?1 :name @name $name \\ backslash",
        "line\nbreak\ttab\r",
        "émilie naïve café",
        "🚀 👩‍💻 🇫🇷",
        "中文 日本語 한국어",
    ]

    private var store: FlagshipDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        store = try openStore()
    }

    override func tearDownWithError() throws {
        if let store {
            XCTAssertEqual(try store.database.schemaObjectNames(), [
                "bucketing", "bucketing_file_uses", "bucketing_files", "decision_rows", "decisions", "decisions_readable", "hits",
                "hits_readable", "hits_total", "schema_migrations", "sdk_state", "shared_contexts", "shared_variations", "sqlite_sequence",
                "visitor_documents", "visitors", "visitors_readable", "visitors_total",
            ], "every table and view is still there")
        }
        try super.tearDownWithError()
    }

    func testHostileVisitorIdsAndDocumentsRoundTripUnchanged() throws {
        let records = Self.hostileStrings.enumerated().map { index, text in
            VisitorRecord(
                visitorId: text, anonymousId: text, consent: true,
                document: visitorDocument(visitorId: text, anonymousId: text, context: [text: text]), updatedAt: Int64(index)
            )
        }

        for record in records { try store.write { try $0.visitors.save(record) } }

        for record in records {
            XCTAssertEqual(try store.read { try $0.visitors.visitor(id: record.visitorId) }, record)
        }
        XCTAssertEqual(try store.read { try $0.visitors.visitors() }, records.reversed())
        XCTAssertTrue(try store.write { try $0.visitors.delete(visitorId: "'); DROP TABLE hits; --") })
        XCTAssertEqual(try store.read { try $0.visitors.count() }, Self.hostileStrings.count - 1)
    }

    func testHostileHitIdsAndDocumentsRoundTripUnchangedAndDeleteMatchesThemExactly() throws {
        let records = Self.hostileStrings.enumerated().map { index, text in
            HitRecord(
                id: "\(text):\(index)", visitorId: text, type: "EVENT",
                document: hitDocument(visitorId: text, type: "EVENT", time: Int64(index), label: text), createdAt: Int64(index)
            )
        }

        try store.write { try $0.hits.insert(records) }

        XCTAssertEqual(try store.read { try $0.hits.all() }, records)
        for record in records {
            // The documents are JSON whose strings the shell's JSON functions read back whole.
            let label = try store.database.read {
                try $0.scalar("SELECT json_extract(document, '$.data.content.ea') FROM hits WHERE id = ?", [.text(record.id)])
            }
            XCTAssertEqual(label, .text(record.visitorId))
        }

        try store.write { try $0.hits.recordFailedAttempt(ids: records.map(\.id)) }
        XCTAssertEqual(try store.read { try $0.hits.all() }.map(\.attempts), Array(repeating: 1, count: records.count))

        XCTAssertEqual(try store.write { try $0.hits.delete(ids: ["'); DROP TABLE hits; --:0", "中文 日本語 한국어:7"]) }, 2)
        XCTAssertEqual(try store.write { try $0.hits.deleteHits(visitorId: "🚀 👩‍💻 🇫🇷", keepingConsentHits: true) }, 1)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, records.map(\.id).filter {
            !["'); DROP TABLE hits; --:0", "中文 日本語 한국어:7", "🚀 👩‍💻 🇫🇷:6"].contains($0)
        })
    }

    func testHostileBucketingFilesRoundTripUnchanged() throws {
        let records = Self.hostileStrings.enumerated().map { index, text in
            BucketingRecord(envId: text, document: json(["campaigns": [text]]), lastModified: text, downloadedAt: Int64(index))
        }

        for record in records { try store.write { try $0.bucketing.save(record) } }

        for record in records {
            XCTAssertEqual(try store.read { try $0.bucketing.file(envId: record.envId) }, record)
        }
        XCTAssertEqual(Set(try store.read { try $0.bucketing.summaries() }.map(\.envId)), Set(Self.hostileStrings))
    }

    func testHostileStateKeysAndValuesRoundTripUnchanged() throws {
        for text in Self.hostileStrings {
            try store.write { try $0.state.setValue(text, forKey: text, now: 1) }
        }

        for text in Self.hostileStrings {
            XCTAssertEqual(try store.read { try $0.state.value(forKey: text) }, text)
            XCTAssertEqual(try store.write { try $0.state.valueInsertingIfAbsent("other", forKey: text, now: 2) }, text)
        }
        try store.write { try $0.state.removeValue(forKey: "'); DROP TABLE hits; --") }
        XCTAssertEqual(try store.read { try $0.state.all() }.count, Self.hostileStrings.count - 1)
    }

    func testTextWithANulCharacterRoundTripsWhole() throws {
        let visitorId = "before\u{0}after"
        try store.write { try $0.visitors.save(.sample(visitorId)) }
        try store.write { try $0.state.setValue("value\u{0}tail", forKey: "key\u{0}tail", now: 1) }

        XCTAssertEqual(try store.read { try $0.visitors.visitors() }.map(\.visitorId), [visitorId])
        XCTAssertNil(try store.read { try $0.visitors.visitor(id: "before") }, "a NUL must not cut an id short")
        XCTAssertEqual(try store.read { try $0.state.value(forKey: "key\u{0}tail") }, "value\u{0}tail")
        XCTAssertNil(try store.read { try $0.state.value(forKey: "key") })
    }

    func testHitWithANulCharacterInItsIdIsDeletedById() throws {
        let nul = HitRecord.sample("one", visitorId: "before\u{0}after")
        try store.write { try $0.hits.insert([nul, .sample("two", visitorId: "before")]) }

        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["before\u{0}after:one", "before:two"]) // NUL sorts first
        try store.write { try $0.hits.recordFailedAttempt(ids: [nul.id]) }
        XCTAssertEqual(try store.read { try $0.hits.all() }.map(\.attempts), [1, 0])
        XCTAssertEqual(try store.write { try $0.hits.delete(ids: [nul.id]) }, 1)
        XCTAssertEqual(try store.read { try $0.hits.allIds() }, ["before:two"])
    }
}
