import FlagshipLocalServer
import FlagshipStore
import Foundation
import XCTest

/// A new server's first file is a Swift 6 `main.swift` of top-level code. There the compiler
/// type-checks each statement as synchronous code, so `await Flagship.sharedInstance.close()`
/// picks the synchronous `close()` (which once was `noasync`, and so refused). This compiles such
/// a file against this build's modules, with `swiftc` (no package to resolve), and runs it
/// against a local server: start, `buildAsync`, fetch, send, `await close()`.
final class TopLevelMainTests: XCTestCase {
    static let main = """
        import Flagship
        import Foundation

        // The decision URL, the events URL and the store file.
        let arguments = CommandLine.arguments
        let config = FSConfigBuilder().DecisionApi()
            .withDecisionBaseURL(URL(string: arguments[1])!)
            .withEventsBaseURL(URL(string: arguments[2])!)
            .withCacheFile(URL(fileURLWithPath: arguments[3]))
            .build()
        Flagship.sharedInstance.start(envId: "main_env", apiKey: "main_key", config: config)

        let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "main-visitor", hasConsented: true).buildAsync()
        do {
            try await visitor.fetchFlags()
        } catch {
            print("fetch failed: \\(error)")
        }
        print("btnColor:", visitor.getFlag(key: "btnColor").value(defaultValue: "none") ?? "none")
        do {
            try await visitor.sendHit(FSScreen("home"), until: .committed)
        } catch {
            print("hit refused: \\(error)")
        }
        await Flagship.sharedInstance.close()
        print("closed")
        """

    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-main-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func testATopLevelMainThatStartsFetchesSendsAndClosesCompilesAndRuns() throws {
        let executable = try compile(Self.main)
        let server = LocalFlagshipServer(envId: "main_env", apiKey: "main_key")
        try server.start()
        defer { server.stop() }
        let store = directory.appendingPathComponent("flagship.sqlite")

        let (status, output) = try SnippetPackage.run(executable, [server.decisionBaseURL.absoluteString,
                                                                   server.eventsBaseURL.absoluteString, store.path])

        XCTAssertEqual(status, 0, output)
        XCTAssertEqual(output.split(separator: "\n").filter { !$0.contains("io.flagship") }, ["btnColor: green", "closed"], output)
        XCTAssertEqual(server.hits.filter { $0["t"]?.stringValue == "SCREENVIEW" && $0["dl"]?.stringValue == "home" }.count, 1)
        let database = try FlagshipDatabase.openForInspection(at: store)
        defer { database.close() }
        XCTAssertEqual(try database.read { try $0.hits.count() }, 0, "close sent what waited")
    }

    /// There `try await visitor.sendHit(hit)` would pick the synchronous twin, which neither
    /// waits for the commit nor throws: it is refused at compile time, saying what to write.
    func testATopLevelAwaitedSendHitIsRefusedSayingWhatToWrite() throws {
        let source = """
            import Flagship

            Flagship.sharedInstance.start(envId: "main_env", apiKey: "main_key", config: FSConfigBuilder().build())
            let visitor = await Flagship.sharedInstance.newVisitor(visitorId: "v", hasConsented: true).buildAsync()
            try await visitor.sendHit(FSScreen("home"))
            Flagship.sharedInstance.close()
            """
        XCTAssertThrowsError(try compile(source)) { error in
            let output = (error as? NotCompiled)?.output ?? "\(error)"
            XCTAssertTrue(output.contains("error: instance method 'sendHit' is unavailable from asynchronous contexts"), output)
            XCTAssertTrue(output.contains("try await visitor.sendHit(hit, until: .strategyDefault)"), output)
        }
    }

    // MARK: Compiling against this build

    /// `source` as the `main.swift` of an executable linked with this build's objects of
    /// Flagship and what it depends on; fails with the compiler's errors.
    private func compile(_ source: String) throws -> URL {
        let products = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let modules = products.appendingPathComponent("Modules")
        guard FileManager.default.fileExists(atPath: modules.appendingPathComponent("Flagship.swiftmodule").path) else {
            throw XCTSkip("no Flagship.swiftmodule in \(modules.path): this layout is not SwiftPM's")
        }
        var objects: [String] = []
        for target in ["Flagship", "FlagshipStore", "CFlagshipURLHostCheck", "Logging"] {
            let built = products.appendingPathComponent("\(target).build")
            let names = try FileManager.default.contentsOfDirectory(atPath: built.path).filter { $0.hasSuffix(".o") }
            XCTAssertFalse(names.isEmpty, "no objects in \(built.path)")
            objects += names.sorted().map { built.appendingPathComponent($0).path }
        }
        guard let swift = SnippetPackage.swiftExecutable() else { throw XCTSkip("no swift executable") }
        let swiftc = swift.deletingLastPathComponent().appendingPathComponent("swiftc")
        let main = directory.appendingPathComponent("main.swift")
        try source.write(to: main, atomically: true, encoding: .utf8)
        let executable = directory.appendingPathComponent("top-level-main")
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let (status, output) = try SnippetPackage.run(swiftc, [
            "-swift-version", "6", "-module-name", "TopLevelMain", main.path,
            "-I", modules.path, "-I", repository.appendingPathComponent("Sources/CSQLite").path,
            "-I", repository.appendingPathComponent("Sources/CFlagshipURLHostCheck/include").path,
            "-module-cache-path", directory.appendingPathComponent("module-cache").path,
        ] + objects + ["-lsqlite3", "-o", executable.path] + (ThreadSanitizer.isOn ? ["-sanitize=thread"] : []))
        guard status == 0 else { throw NotCompiled(output: output) }
        let warnings = output.split(separator: "\n").filter { $0.contains("warning:") }
        if !warnings.isEmpty { print("main.swift compiled with:\n" + warnings.joined(separator: "\n")) }
        return executable
    }

    private struct NotCompiled: Error, CustomStringConvertible {
        let output: String
        var description: String { "main.swift does not compile:\n\(output)" }
    }
}
