import ArgumentParser
import Flagship
import FlagshipStore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `flagship doctor`: checks a configuration before an app runs with it, one line per check.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a configuration: env id, API key, endpoints, store. One line per check.",
        discussion: """
            Takes the options of fetch. Checks the env id's and the key's shape, that the Decision \
            API accepts the key for the environment (a decision request for a visitor named \
            flagship-doctor, which sends no hit), that the events endpoint answers (a GET, which \
            sends nothing), in bucketing mode that the bucketing file exists, and that the store \
            file can be written, with its schema version and the age of its stored bucketing file. \
            Exits 0 when every check passes, else 1, naming every failure.
            """
    )

    @OptionGroup var sdk: SDKArguments
    @Option(help: ArgumentHelp("How flags are decided: api or bucketing.", valueName: "api|bucketing"))
    var mode: FetchCommand.Mode = .api
    @Option(help: ArgumentHelp("The bucketing file's base URL: the file is <url>/<envId>/bucketing.json.", valueName: "url"))
    var bucketingURL: String?
    @Option(help: ArgumentHelp("Milliseconds each network check may take.", valueName: "ms")) var timeout: Double = 5000

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be a positive number of milliseconds") }
        if let bucketingURL, URL(string: bucketingURL)?.scheme == nil {
            throw ValidationError("--bucketing-url must be an absolute URL, not '\(bucketingURL)'")
        }
    }

    /// One check's outcome: passed, failed, or a note that neither passes nor fails.
    struct Check {
        enum Verdict: String { case ok, fail = "FAIL", note }
        let name: String
        let verdict: Verdict
        let detail: String
    }

    func run() async throws {
        try sdk.requireStoreFile(for: "doctor")
        let config = sdk.configBuilder().build()
        var checks: [Check] = []
        let apiKey = try sdk.key.key()
        checks.append(shapeCheck(apiKey: apiKey))
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        checks.append(await decisionCheck(config: config, apiKey: apiKey, session: session))
        checks.append(await eventsCheck(config: config, session: session))
        checks.append(await bucketingCheck(session: session))
        checks += storeChecks()
        for check in checks {
            print("\(check.verdict.rawValue.padding(toLength: 4, withPad: " ", startingAt: 0)) \(check.name): \(TerminalText.escaped(check.detail, limit: 400))")
        }
        let failed = checks.filter { $0.verdict == .fail }.map(\.name)
        guard failed.isEmpty else {
            throw CommandFailure("\(failed.count) check(s) failed: \(failed.joined(separator: ", "))")
        }
    }

    // MARK: Checks

    private func shapeCheck(apiKey: String) -> Check {
        if let problem = Flagship.problem(envId: sdk.envId, apiKey: apiKey) {
            return Check(name: "env id and key", verdict: .fail, detail: problem)
        }
        return Check(name: "env id and key", verdict: .ok, detail: "'\(sdk.envId)', a key of \(apiKey.count) characters")
    }

    private func decisionCheck(config: FlagshipConfig, apiKey: String, session: URLSession) async -> Check {
        let url = config.decisionBaseURL.appendingPathComponent(sdk.envId).appendingPathComponent("campaigns")
        var request = URLRequest(url: url, timeoutInterval: timeout / 1000)
        request.httpMethod = "POST"
        request.setValue(apiKey, forHTTPHeaderField: "x-api-key")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"visitorId":"flagship-doctor","anonymousId":null,"context":{},"trigger_hit":false,"visitor_consent":false}"#.utf8)
        return await probe("Decision API accepts the key", request, session: session) { status in
            switch status {
            case 200..<300: (.ok, nil)
            case 401: (.fail, "the API key was refused")
            case 403: (.fail, "this key may not be used for environment '\(sdk.envId)'")
            case 404: (.fail, "no environment '\(sdk.envId)' there (check the env id and --decision-url)")
            default: (.fail, nil)
            }
        }
    }

    private func eventsCheck(config: FlagshipConfig, session: URLSession) async -> Check {
        var request = URLRequest(url: config.eventsBaseURL, timeoutInterval: timeout / 1000)
        request.httpMethod = "GET"
        // Any HTTP answer to a GET shows the host is there: hits are POSTed.
        return await probe("events endpoint reachable", request, session: session) { _ in (.ok, "the host answers (hits are POSTed)") }
    }

    private func bucketingCheck(session: URLSession) async -> Check {
        let name = "bucketing file"
        guard mode == .bucketing else { return Check(name: name, verdict: .note, detail: "not used in api mode") }
        let base = bucketingURL.flatMap(URL.init(string:)) ?? FSConfigBuilder().build().bucketingBaseURL
        let url = base.appendingPathComponent(sdk.envId).appendingPathComponent("bucketing.json")
        var request = URLRequest(url: url, timeoutInterval: timeout / 1000)
        request.httpMethod = "GET"
        return await probe(name, request, session: session) { status in
            switch status {
            case 200: (.ok, nil)
            case 404: (.fail, "no file for '\(sdk.envId)' (check the env id, that bucketing is enabled for it, and --bucketing-url)")
            default: (.fail, nil)
            }
        }
    }

    /// Sends `request`: unreachable fails; an answer is judged by `verdict` (its verdict, and
    /// what to add to the status and time).
    private func probe(_ name: String, _ request: URLRequest, session: URLSession,
                       verdict: (Int) -> (Check.Verdict, String?)) async -> Check {
        let url = request.url?.absoluteString ?? ""
        switch await exchange(request, session: session) {
        case .failure(let error):
            return Check(name: name, verdict: .fail, detail: "\(url) unreachable: \(error)")
        case .success(let (status, elapsed)):
            let (judged, advice) = verdict(status)
            return Check(name: name, verdict: judged, detail: "\(url) answered \(status) in \(elapsed)" + (advice.map { ": \($0)" } ?? ""))
        }
    }

    private func storeChecks() -> [Check] {
        let file = sdk.storeFile
        let fileManager = FileManager.default
        guard fileManager.fileExists(atPath: file.path) else {
            // The SDK creates it, with its directory: the nearest existing directory must be writable.
            var directory = file.deletingLastPathComponent()
            while !fileManager.fileExists(atPath: directory.path), directory.path != "/" { directory.deleteLastPathComponent() }
            let writable = access(directory.path, W_OK) == 0
            return [
                Check(name: "store writable", verdict: writable ? .ok : .fail,
                      detail: writable ? "\(file.path) does not exist yet; the SDK creates it (\(directory.path) is writable)"
                          : "\(file.path) cannot be created: \(directory.path) is not writable"),
                Check(name: "store schema", verdict: .note, detail: "no store yet"),
            ]
        }
        var checks: [Check] = []
        let writable = access(file.path, W_OK) == 0 && access(file.deletingLastPathComponent().path, W_OK) == 0
        checks.append(Check(name: "store writable", verdict: writable ? .ok : .fail,
                            detail: writable ? file.path : "\(file.path), or its directory, cannot be written by this user"))
        do {
            let store = try FlagshipDatabase.openForInspection(at: file)
            defer { store.close() }
            let summary = try store.read { try StoreSummary(of: store, in: $0) }
            let latest = Migrator().latestVersion
            checks.append(Check(name: "store schema", verdict: .ok,
                                detail: summary.schemaVersion == latest ? "version \(latest), current"
                                    : "version \(summary.schemaVersion); the SDK migrates it to \(latest) at start"))
            if mode == .bucketing {
                if let stored = summary.bucketing.first(where: { $0.envId == sdk.envId }) {
                    let age = max(0, Date().timeIntervalSince1970 - Double(stored.downloadedAt) / 1000)
                    checks.append(Check(name: "stored bucketing file", verdict: .ok,
                                        detail: "\(stored.bytes) bytes, downloaded \(Self.describe(age: age)) ago"))
                } else {
                    checks.append(Check(name: "stored bucketing file", verdict: .note,
                                        detail: "none yet: a start decides once its first download arrives"))
                }
            }
        } catch {
            checks.append(Check(name: "store schema", verdict: .fail, detail: "\(error)"))
        }
        return checks
    }

    // MARK: Helpers

    /// The status and how long the answer took, or why there was none.
    private func exchange(_ request: URLRequest, session: URLSession) async -> Result<(Int, String), Unanswered> {
        let started = ContinuousClock.now
        do {
            let (_, response) = try await session.data(for: request)
            let elapsed = ContinuousClock.now - started
            let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
            return .success(((response as? HTTPURLResponse)?.statusCode ?? 0, "\(Int(milliseconds.rounded())) ms"))
        } catch {
            return .failure(Unanswered(description: (error as NSError).localizedDescription))
        }
    }

    static func describe(age seconds: Double) -> String {
        switch seconds {
        case ..<120: "\(Int(seconds)) s"
        case ..<7_200: "\(Int(seconds / 60)) min"
        case ..<172_800: "\(Int(seconds / 3_600)) h"
        default: "\(Int(seconds / 86_400)) days"
        }
    }
}

/// Why a check's request got no answer.
private struct Unanswered: Error, CustomStringConvertible {
    let description: String
}
