import Foundation
import XCTest

/// `FSTrackingProtocol` is sealed at compile time: code outside the SDK, compiled against the
/// built module as an app's code is, cannot declare a hit type of its own, and can still send the
/// SDK's hits. (The run-time refusal behind it: `HitTests`.)
final class SealedHitProtocolTests: XCTestCase {
    /// Type-checks `source` as a file of an app that imports Flagship; the compiler's output and status.
    private func typecheck(_ source: String) throws -> (status: Int32, output: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-seal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("App.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        // The modules of this build, beside the test bundle; the module maps of the system SQLite
        // and of the SDK's C target (an app built by SwiftPM is given both).
        let bundles = Bundle.allBundles.filter { $0.bundlePath.hasSuffix(".xctest") }.map { $0.bundleURL.deletingLastPathComponent() }
        let modules = try XCTUnwrap((bundles + [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()])
            .map { $0.appendingPathComponent("Modules") }
            .first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("Flagship.swiftmodule").path) },
            "no Modules/Flagship.swiftmodule beside the tests")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swiftc", "-typecheck", "-swift-version", "6", "-I", modules.path,
                             "-I", SharedData.packageRoot.appendingPathComponent("Sources/CSQLite").path,
                             "-I", SharedData.packageRoot.appendingPathComponent("Sources/CFlagshipURLHostCheck/include").path, file.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    func testAnAppsCodeSendingTheSDKsHitsCompiles() throws {
        let result = try typecheck("""
            import Flagship
            func track(_ visitor: FSVisitor) {
                visitor.sendHit(FSEvent(eventCategory: .Action_Tracking, eventAction: "buy"))
                visitor.sendHit(FSScreen("home"))
            }
            """)
        XCTAssertEqual(result.status, 0, result.output)
    }

    func testAHitTypeOfTheAppsDoesNotCompile() throws {
        let result = try typecheck("""
            import Flagship
            struct MyHit: FSTrackingProtocol {
                var type: FSTypeTrack { .EVENT }
            }
            """)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.output.contains("does not conform to protocol 'FSTrackingProtocol'"), result.output)
    }

    func testTheSealCannotBeMadeOutsideTheSDK() throws {
        let result = try typecheck("""
            import Flagship
            final class MyHit: FSTrackingProtocol {
                var type: FSTypeTrack { .EVENT }
                var sdkHitSeal: FSHitSeal { FSHitSeal() }
            }
            """)
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.output.contains("FSHitSeal"), result.output)
    }
}
