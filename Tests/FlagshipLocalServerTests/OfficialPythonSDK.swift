import Foundation
import XCTest

/// The official Flagship Python SDK (3.0.1, from PyPI), installed by `make python-sdk` in
/// `.build-python` (or the interpreter `FLAGSHIP_PYTHON` names), and the scripts of
/// `Tests/Support/python-sdk` that drive it. Without it a test is skipped, unless
/// `FLAGSHIP_REQUIRE_PYTHON_SDK=1` makes its absence a failure.
enum OfficialPythonSDK {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Outcome {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// A Python interpreter that imports the SDK.
    static func python() throws -> URL {
        let environment = ProcessInfo.processInfo.environment
        let candidate = environment["FLAGSHIP_PYTHON"].map(URL.init(fileURLWithPath:))
            ?? root.appendingPathComponent(".build-python/bin/python")
        if FileManager.default.isExecutableFile(atPath: candidate.path),
           (try? run(candidate, ["-c", "import flagship"]).status) == 0 {
            return candidate
        }
        let reason = "the official Flagship Python SDK is not installed at \(candidate.path) (make python-sdk)"
        if environment["FLAGSHIP_REQUIRE_PYTHON_SDK"] == "1" { XCTFail(reason) }
        throw XCTSkip(reason)
    }

    /// Runs `script` of Tests/Support/python-sdk with the SDK's interpreter.
    static func run(script: String, _ arguments: [String], input: Data? = nil) throws -> Outcome {
        let path = root.appendingPathComponent("Tests/Support/python-sdk/\(script)").path
        return try run(try python(), [path] + arguments, input: input)
    }

    static func run(_ executable: URL, _ arguments: [String], input: Data? = nil) throws -> Outcome {
        // Input and errors through files: only standard output is a pipe, read to its end.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("python-sdk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let (inputFile, errorFile) = (scratch.appendingPathComponent("stdin"), scratch.appendingPathComponent("stderr"))
        try (input ?? Data()).write(to: inputFile)
        try Data().write(to: errorFile)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        // In the scratch folder: the Python SDK writes its bucketing file beside it (`.<env>.decision`).
        process.currentDirectoryURL = scratch
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = try FileHandle(forReadingFrom: inputFile)
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                       stderr: (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "")
    }
}
