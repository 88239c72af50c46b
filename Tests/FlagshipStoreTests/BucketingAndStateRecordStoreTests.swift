import CSQLite
import Foundation
import XCTest

@testable import FlagshipStore

final class BucketingAndStateRecordStoreTests: StoreTestCase {
    private var store: FlagshipDatabase!

    override func setUpWithError() throws {
        try super.setUpWithError()
        store = try openStore()
    }

    // MARK: - Bucketing

    func testSavedBucketingFileIsReadBackExactly() throws {
        let file = BucketingRecord(envId: "env-1", document: #"{"campaigns":[{"id":"c1","type":"ab"}],"panic":false}"#,
                                   lastModified: "Thu, 21 Nov 2024 06:00:00 GMT", downloadedAt: fixedNowMilliseconds)

        try store.write { try $0.bucketing.save(file) }

        XCTAssertEqual(try store.read { try $0.bucketing.file(envId: "env-1") }, file)
    }

    func testSavingAgainForTheSameEnvironmentReplacesTheFile() throws {
        try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-1", document: #"{"campaigns":[]}"#, lastModified: "Wed, 20 Nov 2024 06:00:00 GMT", downloadedAt: 1)) }
        let newer = BucketingRecord(envId: "env-1", document: #"{"campaigns":[],"panic":true}"#, lastModified: nil, downloadedAt: 2)

        try store.write { try $0.bucketing.save(newer) }

        XCTAssertEqual(try store.read { try $0.bucketing.file(envId: "env-1") }, newer)
        XCTAssertEqual(try store.read { try $0.bucketing.summaries() }.count, 1)
    }

    // MARK: - The compiled form

    func testTheCompiledFormIsReadWithoutTheDocument() throws {
        let document = #"{"campaigns":[],"panic":false,"note":"é"}"#
        try store.write {
            try $0.bucketing.save(BucketingRecord(envId: "env-1", document: document, lastModified: "Thu, 21 Nov 2024 06:00:00 GMT",
                                                  downloadedAt: 5, compiled: [1, 2, 3]))
        }

        let stored = try XCTUnwrap(try store.read { try $0.bucketing.compiledFile(envId: "env-1") })
        XCTAssertEqual(stored.compiled, [1, 2, 3])
        XCTAssertEqual(stored.documentBytes, document.utf8.count, "bytes, not characters")
        XCTAssertEqual(stored.lastModified, "Thu, 21 Nov 2024 06:00:00 GMT")
        XCTAssertEqual(stored.downloadedAt, 5)
        XCTAssertNil(try store.read { try $0.bucketing.compiledFile(envId: "env-2") })

        // A document over many overflow pages: its size from the row's header too.
        let large = #"{"campaigns":[],"notes":[""# + Array(repeating: "é€𝄞", count: 200_000).joined(separator: #"",""#) + #""]}"#
        try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-3", document: large, lastModified: nil, downloadedAt: 7)) }
        let largeStored = try XCTUnwrap(try store.read { try $0.bucketing.compiledFile(envId: "env-3") })
        XCTAssertEqual(largeStored.documentBytes, large.utf8.count)
        XCTAssertNil(largeStored.compiled)
        // A compiled form over many overflow pages (and whole huge pages of the buffer it is read
        // into), read whole; an empty one is empty.
        let blob = (0..<5_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        try store.write { try $0.bucketing.saveCompiled(blob, envId: "env-3", downloadedAt: 7) }
        XCTAssertEqual(try store.read { try $0.bucketing.compiledFile(envId: "env-3") }?.compiled, blob)
        try store.write { try $0.bucketing.saveCompiled([], envId: "env-3", downloadedAt: 7) }
        XCTAssertEqual(try store.read { try $0.bucketing.compiledFile(envId: "env-3") }?.compiled, [])
        // A value that is not a blob (written by hand) is no compiled form.
        try store.write { try $0.execute("UPDATE bucketing SET compiled = 'text' WHERE env_id = 'env-3'") }
        XCTAssertNil(try store.read { try $0.bucketing.compiledFile(envId: "env-3") }?.compiled)
    }

    /// A long value goes through SQLite's page cache a page at a time: it is read with the cache
    /// held small, so that it takes no cache memory of its own (with the writer's 16 MiB cache,
    /// a 5 MB value took 5 MB more), and the cache gets its size back.
    func testALongValueIsReadThroughASmallCacheThatGetsItsSizeBack() throws {
        let blob = (0..<5_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 13) }
        try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-3", document: "{}", lastModified: nil, downloadedAt: 7, compiled: blob)) }
        store.close()
        let reopened = try openStore(at: url())

        try reopened.write { connection in
            func cacheBytes() -> Int32 {
                var used: Int32 = 0, highest: Int32 = 0
                sqlite3_db_status(connection.handle, SQLITE_DBSTATUS_CACHE_USED, &used, &highest, 0)
                return used
            }
            let size = try connection.scalar("PRAGMA cache_size")
            let before = cacheBytes()
            XCTAssertEqual(try connection.bucketing.compiledFile(envId: "env-3")?.compiled, blob)
            XCTAssertLessThan(cacheBytes() - before, 1 << 20, "the value's 1,200 pages took cache memory")
            XCTAssertEqual(try connection.scalar("PRAGMA cache_size"), size)
            XCTAssertEqual(size, .integer(-Int64(DatabaseOptions.defaultWriterCacheKibibytes)))
        }
    }

    func testADocumentEditedByHandLosesItsCompiledForm() throws {
        try store.write {
            try $0.bucketing.save(BucketingRecord(envId: "env-1", document: #"{"campaigns":[]}"#, lastModified: nil, downloadedAt: 5, compiled: [1]))
        }

        // Anything else than the document (the time, the header) keeps it.
        try store.write { try $0.execute("UPDATE bucketing SET downloaded_at = 6, last_modified = 'x'") }
        XCTAssertEqual(try store.read { try $0.bucketing.compiledFile(envId: "env-1") }?.compiled, [1])
        // The same document written again keeps it too.
        try store.write { try $0.execute(#"UPDATE bucketing SET document = '{"campaigns":[]}'"#) }
        XCTAssertEqual(try store.read { try $0.bucketing.compiledFile(envId: "env-1") }?.compiled, [1])

        try store.write { try $0.execute(#"UPDATE bucketing SET document = '{"campaigns":[],"panic":true}'"#) }

        XCTAssertNil(try store.read { try $0.bucketing.compiledFile(envId: "env-1") }?.compiled, "the next start reads the JSON")
    }

    func testSavingAFileWritesItsCompiledFormWithIt() throws {
        try store.write {
            try $0.bucketing.save(BucketingRecord(envId: "env-1", document: #"{"campaigns":[]}"#, lastModified: nil, downloadedAt: 5, compiled: [1]))
        }

        try store.write {
            try $0.bucketing.save(BucketingRecord(envId: "env-1", document: #"{"campaigns":[],"panic":true}"#, lastModified: nil,
                                                  downloadedAt: 6, compiled: [2]))
        }
        XCTAssertEqual(try store.read { try $0.bucketing.compiledFile(envId: "env-1") }?.compiled, [2])

        try store.write {
            try $0.bucketing.save(BucketingRecord(envId: "env-1", document: #"{"campaigns":[]}"#, lastModified: nil, downloadedAt: 7))
        }
        XCTAssertNil(try store.read { try $0.bucketing.compiledFile(envId: "env-1") }?.compiled, "a file saved without one has none")
    }

    func testTheCompiledFormIsWrittenOnlyForTheFileItWasMadeFrom() throws {
        try store.write {
            try $0.bucketing.save(BucketingRecord(envId: "env-1", document: #"{"campaigns":[]}"#, lastModified: nil, downloadedAt: 5))
        }

        XCTAssertFalse(try store.write { try $0.bucketing.saveCompiled([9], envId: "env-1", downloadedAt: 4) }, "a newer download is stored")
        XCTAssertNil(try store.read { try $0.bucketing.compiledFile(envId: "env-1") }?.compiled)
        XCTAssertTrue(try store.write { try $0.bucketing.saveCompiled([9], envId: "env-1", downloadedAt: 5) })
        XCTAssertEqual(try store.read { try $0.bucketing.compiledFile(envId: "env-1") }?.compiled, [9])
    }

    func testMarkingAKeptVersionUsedNeedsNoDocument() throws {
        let kept = BucketingFileVersion(version: String(repeating: "a", count: 64), envId: "env-1", document: "{}", origin: .download,
                                        firstUsedAt: 1, lastUsedAt: 1)
        try store.write { _ = try $0.bucketingFiles.use(kept, keeping: 5) }

        XCTAssertTrue(try store.write { try $0.bucketingFiles.markUsed(version: kept.version, envId: "env-1", at: 9, keeping: 5) })
        XCTAssertFalse(try store.write { try $0.bucketingFiles.markUsed(version: String(repeating: "b", count: 64), envId: "env-1", at: 9, keeping: 5) },
                       "not kept: it is written with its document")
        XCTAssertFalse(try store.write { try $0.bucketingFiles.markUsed(version: kept.version, envId: "env-2", at: 9, keeping: 5) })
        XCTAssertEqual(try store.read { try $0.bucketingFiles.versions() }.map(\.lastUsedAt), [9])
    }

    /// The pages the connection read (from its cache or the file) while `body` ran.
    private func pagesRead(_ body: (Connection) throws -> Void) throws -> Int32 {
        try store.write { connection in
            func touched() -> Int32 {
                var hits: Int32 = 0, misses: Int32 = 0, highest: Int32 = 0
                sqlite3_db_status(connection.handle, SQLITE_DBSTATUS_CACHE_HIT, &hits, &highest, 0)
                sqlite3_db_status(connection.handle, SQLITE_DBSTATUS_CACHE_MISS, &misses, &highest, 0)
                return hits + misses
            }
            let before = touched()
            try body(connection)
            return touched() - before
        }
    }

    /// A start reads the stored file's compiled form and its times without following the JSON's
    /// chain of pages (the row's small columns and `compiled` come before `document`, schema 10;
    /// before, reaching them followed all of the document's pages).
    func testAStartsReadOfTheCompiledFormReadsNoneOfTheDocument() throws {
        let document = #"{"campaigns":[],"notes":""# + String(repeating: "x", count: 4_000_000) + #""}"#
        try store.write {
            try $0.bucketing.save(BucketingRecord(envId: "env-1", document: document, lastModified: "Mon", downloadedAt: 5, compiled: [7, 8, 9]))
        }

        var stored: CompiledBucketingRecord?
        let start = try pagesRead { stored = try $0.bucketing.compiledFile(envId: "env-1") }
        let json = try pagesRead { _ = try $0.bucketing.file(envId: "env-1") }

        XCTAssertEqual(stored?.compiled, [7, 8, 9])
        XCTAssertEqual(stored?.documentBytes, document.utf8.count)
        XCTAssertEqual(stored?.lastModified, "Mon")
        XCTAssertEqual(stored?.downloadedAt, 5)
        XCTAssertLessThan(start, 20, "the document is about 1,000 pages")
        XCTAssertGreaterThan(json, 900, "the measure sees a read of the document")
    }

    /// A start marks the version it decides on as used: a few pages, whatever the document's
    /// size (its last use is a row of its own; as a column beside the document, SQLite read and
    /// built the whole row, megabytes, to change it).
    func testMarkingAVersionUsedReadsNoneOfItsDocument() throws {
        let document = #"{"campaigns":[],"notes":""# + String(repeating: "x", count: 4_000_000) + #""}"#
        let kept = BucketingFileVersion(version: String(repeating: "c", count: 64), envId: "env-1", document: document,
                                        origin: .download, firstUsedAt: 1, lastUsedAt: 1)
        try store.write { _ = try $0.bucketingFiles.use(kept, keeping: 5) }

        let marking = try pagesRead { XCTAssertTrue(try $0.bucketingFiles.markUsed(version: kept.version, envId: "env-1", at: 9, keeping: 5)) }
        let usingAgain = try pagesRead { _ = try $0.bucketingFiles.use(kept, keeping: 5) }
        let reading = try pagesRead { _ = try $0.bucketingFiles.versions() }

        XCTAssertLessThan(marking, 50, "the document is about 1,000 pages")
        XCTAssertLessThan(usingAgain, 50, "kept already: not written again")
        XCTAssertGreaterThan(reading, 900, "the measure sees a read of the document")
        XCTAssertEqual(try store.read { try $0.bucketingFiles.versions() }.map(\.lastUsedAt), [9])
    }

    func testFileOfAnEnvironmentNeverSavedIsNil() throws {
        try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-1", document: "{}", lastModified: nil, downloadedAt: 1)) }

        XCTAssertNil(try store.read { try $0.bucketing.file(envId: "env-2") })
    }

    func testSummariesListEachEnvironmentByIdWithItsSizeInBytes() throws {
        let accented = #"{"name":"café"}"# // é is two bytes in UTF-8
        try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-b", document: accented, lastModified: nil, downloadedAt: 20)) }
        try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-a", document: "{}", lastModified: "Thu, 21 Nov 2024 06:00:00 GMT", downloadedAt: 10)) }

        let summaries = try store.read { try $0.bucketing.summaries() }

        XCTAssertEqual(summaries.map(\.envId), ["env-a", "env-b"])
        XCTAssertEqual(summaries.map(\.lastModified), ["Thu, 21 Nov 2024 06:00:00 GMT", nil])
        XCTAssertEqual(summaries.map(\.downloadedAt), [10, 20])
        XCTAssertEqual(summaries.map(\.bytes), [2, 16])
    }

    func testBucketingFileThatIsNotJSONIsRejected() throws {
        XCTAssertThrowsError(try store.write { try $0.bucketing.save(BucketingRecord(envId: "env-1", document: "<html>502</html>", lastModified: nil, downloadedAt: 1)) }) { error in
            XCTAssertEqual(sqliteError(error)?.extendedCode, 275) // SQLITE_CONSTRAINT_CHECK
        }
        XCTAssertNil(try store.read { try $0.bucketing.file(envId: "env-1") })
    }

    // MARK: - State

    func testStateValueIsReadBackAndReplaced() throws {
        try store.write { try $0.state.setValue("0", forKey: "first_init", now: 1) }
        XCTAssertEqual(try store.read { try $0.state.value(forKey: "first_init") }, "0")

        try store.write { try $0.state.setValue("1", forKey: "first_init", now: 2) }

        XCTAssertEqual(try store.read { try $0.state.value(forKey: "first_init") }, "1")
        XCTAssertEqual(try store.database.integer("SELECT updated_at FROM sdk_state WHERE key = 'first_init'"), 2)
    }

    func testStateKeyNeverSetIsNil() throws {
        XCTAssertNil(try store.read { try $0.state.value(forKey: "anonymous_id") })
    }

    func testRemovedStateValueIsNilAndRemovingAnAbsentKeyIsFine() throws {
        try store.write { try $0.state.setValue("anon-1", forKey: "anonymous_id", now: 1) }
        try store.write { try $0.state.setValue("1", forKey: "first_init", now: 1) }

        try store.write { try $0.state.removeValue(forKey: "anonymous_id") }
        try store.write { try $0.state.removeValue(forKey: "never_set") }

        XCTAssertNil(try store.read { try $0.state.value(forKey: "anonymous_id") })
        XCTAssertEqual(try store.read { try $0.state.value(forKey: "first_init") }, "1")
    }

    func testValueInsertingIfAbsentKeepsTheFirstValueStored() throws {
        let first = try store.write { try $0.state.valueInsertingIfAbsent("anon-1", forKey: "anonymous_id", now: 1) }
        let second = try store.write { try $0.state.valueInsertingIfAbsent("anon-2", forKey: "anonymous_id", now: 2) }

        XCTAssertEqual(first, "anon-1")
        XCTAssertEqual(second, "anon-1")
        XCTAssertEqual(try store.read { try $0.state.value(forKey: "anonymous_id") }, "anon-1")
        XCTAssertEqual(try store.database.integer("SELECT updated_at FROM sdk_state WHERE key = 'anonymous_id'"), 1)
    }

    func testAllStateIsListedByKey() throws {
        try store.write { try $0.state.setValue("b-value", forKey: "b", now: 1) }
        try store.write { try $0.state.setValue("a-value", forKey: "a", now: 1) }
        try store.write { try $0.state.setValue("c-value", forKey: "c", now: 1) }

        let all = try store.read { try $0.state.all() }

        XCTAssertEqual(all.map(\.key), ["a", "b", "c"])
        XCTAssertEqual(all.map(\.value), ["a-value", "b-value", "c-value"])
    }
}
