import Foundation
import XCTest

/// The `flagship` tool as a plain `swift build --product flagship` (and `make demo`) builds it:
/// without the package trait `Postgres`, so without FlagshipPostgres and SwiftNIO. A PostgreSQL
/// `--db` is refused there, saying how to build a tool that takes one.
final class PostgresNotBuiltInTests: CommandTestCase {
    static let refusal = "Error: --db: PostgreSQL support is not built in: build flagship with the Postgres trait "
        + "(swift build --traits Postgres --product flagship)\n"

    func testAPostgreSQLStoreIsRefusedSayingHowToBuildTheToolWithIt() throws {
        let tool = try Self.toolWithoutPostgres()
        let url = "postgres://flags:secret@db.example:5432/flags"
        let commands = [
            ["db", "inspect", "--db", url],
            ["db", "migrate", "--db", url],
            ["visitors", "--db", url, "--env-id", "env"],
            ["hits", "--db", "POSTGRESQL://db.example/flags", "--env-id", "env"],
            ["why", "--db", url, "--visitor-id", "ann"],
            ["replay", "--env-id", "env", "--api-key", "key", "--db", url],
            ["fetch", "--env-id", "env", "--api-key", "key", "--db", url, "--visitor-id", "ann"],
        ]
        for arguments in commands {
            let result = try FlagshipExecutable.run(arguments, outputDirectory: outputDirectory, executable: tool.path)
            XCTAssertEqual(result.status, 1, "\(arguments)")
            XCTAssertEqual(result.stderr, Self.refusal, "\(arguments)")
            XCTAssertEqual(result.stdout, "", "\(arguments)")
        }
    }

    /// Its help describes what it does: each store command's `--db` is a store file, with one
    /// line on how to get a tool that takes a `postgres://` URL; no `--env-id`, no `--local-db`,
    /// no sentence on PostgreSQL stores. The tool with the trait describes both.
    func testTheHelpOfStoreCommandsDescribesStoreFilesOnly() throws {
        let tool = try Self.toolWithoutPostgres()
        for command in [["db", "inspect"], ["visitors"], ["hits"], ["why"], ["export"], ["replay"], ["fetch"]] {
            let light = try FlagshipExecutable.run(command + ["--help"], outputDirectory: outputDirectory, executable: tool.path)
            XCTAssertEqual(light.status, 0, light.stderr)
            let text = light.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            XCTAssertFalse(light.stdout.contains("--env-id <env-id>") && command != ["replay"] && command != ["fetch"],
                           "\(command): --env-id, which only a PostgreSQL store takes")
            XCTAssertFalse(light.stdout.contains("--local-db"), "\(command)")
            XCTAssertFalse(text.contains("sslmode"), "\(command): the URL's TLS settings")
            XCTAssertFalse(text.contains("PostgreSQL store"), "\(command): \(light.stdout)")
            XCTAssertTrue(text.contains("A postgres:// URL needs the Postgres trait") || command == ["fetch"], "\(command): \(light.stdout)")
            #if Postgres
            let full = try FlagshipExecutable.run(command + ["--help"], outputDirectory: outputDirectory)
            let fullText = full.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            XCTAssertTrue(fullText.contains("postgres://") || command == ["fetch"], "\(command): the tool with the trait describes URLs")
            #endif
        }
    }

    /// The same build still works on store files.
    func testAStoreFileIsReadAsInEveryBuild() throws {
        let tool = try Self.toolWithoutPostgres()
        try withStore { _ in }

        let result = try FlagshipExecutable.run(["db", "inspect", "--db", storeFile.path, "--json"], outputDirectory: outputDirectory,
                                                executable: tool.path)

        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains(#""schemaVersion""#), result.stdout)
    }

    /// No SwiftNIO in that binary; the one built with the trait (the one these tests run elsewhere)
    /// has it, which shows the check can tell them apart.
    func testTheToolWithoutTheTraitHoldsNoSwiftNIO() throws {
        let light = try Data(contentsOf: Self.toolWithoutPostgres(), options: .mappedIfSafe)
        XCTAssertNil(light.range(of: Data("PostgresNIO".utf8)), "PostgresNIO in the tool built without the Postgres trait")
        XCTAssertNil(light.range(of: Data("NIOCore".utf8)), "NIOCore in the tool built without the Postgres trait")
        #if Postgres
        let full = try Data(contentsOf: FlagshipExecutable.location(), options: .mappedIfSafe)
        XCTAssertNotNil(full.range(of: Data("PostgresNIO".utf8)), "no PostgresNIO in the tool built with the Postgres trait")
        #endif
    }

    /// This test run's own `flagship` when it was built without the trait; else the one of the
    /// repository's default build directory, `.build` (where `make demo` and a plain `swift build`
    /// put it), built now if it is not up to date there: a build with every trait, such as
    /// `make test`'s, uses a scratch directory of its own.
    static func toolWithoutPostgres() throws -> URL {
        #if Postgres
        return try lightBuild.get()
        #else
        return try FlagshipExecutable.location()
        #endif
    }

    #if Postgres
    /// Built once per test run.
    private static let lightBuild = Result { () throws -> URL in
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var scratch = repository.appendingPathComponent(".build")
        // A run from `.build` itself (`swift test --traits Postgres`) holds its lock: build beside it.
        if try FlagshipExecutable.location().path.hasPrefix(scratch.path + "/") {
            scratch = repository.appendingPathComponent(".build-without-traits")
        }
        let arguments = ["build", "--package-path", repository.path, "--scratch-path", scratch.path, "--product", "flagship"]
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-light-build-\(UUID().uuidString).log")
        guard FileManager.default.createFile(atPath: output.path, contents: nil) else {
            throw FlagshipExecutable.Failure("cannot create \(output.path)")
        }
        defer { try? FileManager.default.removeItem(at: output) }
        let log = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift"] + arguments
        process.standardOutput = log
        process.standardError = log
        try process.run()
        process.waitUntilExit()
        try log.close()
        guard process.terminationStatus == 0 else {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            throw FlagshipExecutable.Failure("swift \(arguments.joined(separator: " ")) failed:\n\(text.suffix(4_000))")
        }
        return scratch.appendingPathComponent("debug/flagship")
    }
    #endif
}
