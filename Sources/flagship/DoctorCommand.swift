import ArgumentParser
import Flagship
import FlagshipStore
import Foundation

/// `flagship doctor`: checks a configuration before an app runs with it, one line per check.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a configuration: env id, API key, endpoints, store. One line per check.",
        discussion: """
            Checks, one line each: the shape of --env-id and of the API key (--api-key, \
            --api-key-file or FLAGSHIP_API_KEY); that the Decision API at --decision-url accepts \
            the key for the environment (a decision request for a visitor named flagship-doctor, \
            as the SDK sends it, which sends no hit); that the events endpoint at --events-url \
            answers (a GET, which sends nothing); with --mode bucketing, that the bucketing file \
            is served at --bucketing-url; that the store file (--db) can be written, its schema \
            version and, with --mode bucketing, the age of its stored bucketing file. Each network \
            check may take --timeout milliseconds; a server that cannot be reached is named in the \
            SDK's own words. Exits 0 when every check passes, else 1, naming every failure on \
            stderr after the checks.
            """
    )

    @OptionGroup var sdk: SDKArguments<DoctorStore>
    @Option(help: ArgumentHelp("How flags are decided: api or bucketing (then the bucketing file is checked).",
                               valueName: "api|bucketing"))
    var mode: FetchCommand.Mode = .api
    @Option(help: ArgumentHelp("The bucketing file's base URL (--mode bucketing): the file is <url>/<envId>/bucketing.json.",
                               valueName: "url"))
    var bucketingURL: String?
    @Option(help: ArgumentHelp("Milliseconds each network check may take.", valueName: "ms")) var timeout: Int = 5000

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
        try sdk.requireStoreFile()
        let config = sdk.configBuilder().build()
        var checks: [Check] = []
        let apiKey = try sdk.key.key()
        checks.append(shapeCheck(apiKey: apiKey))
        // The SDK's own transport: a failure is said as the SDK says it.
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        checks.append(await decisionCheck(config: config, apiKey: apiKey, transport: transport))
        checks.append(await eventsCheck(config: config, transport: transport))
        checks.append(await bucketingCheck(transport: transport))
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

    private var seconds: TimeInterval { Double(timeout) / 1000 }

    private func shapeCheck(apiKey: String) -> Check {
        if let problem = Flagship.problem(envId: sdk.envId, apiKey: apiKey) {
            return Check(name: "env id and key", verdict: .fail, detail: problem)
        }
        return Check(name: "env id and key", verdict: .ok, detail: "'\(sdk.envId)', a key of \(apiKey.count) characters")
    }

    /// The SDK's decision request, by the SDK's client: what it would get at start.
    private func decisionCheck(config: FlagshipConfig, apiKey: String, transport: URLSessionTransport) async -> Check {
        let name = "Decision API accepts the key"
        let client = DecisionAPIClient(envId: sdk.envId, apiKey: apiKey, baseURL: config.decisionBaseURL, timeout: seconds,
                                       transport: transport)
        let url = config.decisionBaseURL.appendingPathComponent(sdk.envId).appendingPathComponent("campaigns").absoluteString
        let started = ContinuousClock.now
        do {
            _ = try await client.fetchCampaigns(visitorId: "flagship-doctor", anonymousId: nil, context: [:], hasConsented: false)
            return Check(name: name, verdict: .ok, detail: "\(url) answered with a decision in \(Self.milliseconds(since: started))")
        } catch {
            guard case .httpStatus(let status) = error else {
                return Check(name: name, verdict: .fail, detail: "\(url): \(error)")
            }
            let advice: String? = switch status {
            case 401: "the API key was refused"
            case 403: "this key may not be used for environment '\(sdk.envId)'"
            case 404: "no environment '\(sdk.envId)' there (check the env id and --decision-url)"
            default: nil
            }
            return Check(name: name, verdict: .fail,
                         detail: "\(url) answered \(status) in \(Self.milliseconds(since: started))" + (advice.map { ": \($0)" } ?? ""))
        }
    }

    private func eventsCheck(config: FlagshipConfig, transport: URLSessionTransport) async -> Check {
        // Any HTTP answer to a GET shows the host is there: hits are POSTed.
        await probe("events endpoint reachable", service: "the events endpoint", config.eventsBaseURL, transport: transport) { _ in
            (.ok, "the host answers (hits are POSTed)")
        }
    }

    private func bucketingCheck(transport: URLSessionTransport) async -> Check {
        let name = "bucketing file"
        guard mode == .bucketing else { return Check(name: name, verdict: .note, detail: "not used in api mode") }
        let base = bucketingURL.flatMap(URL.init(string:)) ?? FSConfigBuilder().build().bucketingBaseURL
        let url = base.appendingPathComponent(sdk.envId).appendingPathComponent("bucketing.json")
        return await probe(name, service: "the bucketing file's host", url, transport: transport) { status in
            switch status {
            case 200: (.ok, nil)
            case 404: (.fail, "no file for '\(sdk.envId)' (check the env id, that bucketing is enabled for it, and --bucketing-url)")
            default: (.fail, nil)
            }
        }
    }

    /// GETs `url`: no answer fails, said as the SDK says it (`<service> could not be reached:
    /// <why>`); an answer is judged by `verdict` (its verdict, and what to add to the status and time).
    private func probe(_ name: String, service: String, _ url: URL, transport: URLSessionTransport,
                       verdict: (Int) -> (Check.Verdict, String?)) async -> Check {
        let started = ContinuousClock.now
        do {
            let response = try await transport.send(FSHTTPRequest(method: .get, url: url, timeout: seconds))
            let (judged, advice) = verdict(response.status)
            return Check(name: name, verdict: judged,
                         detail: "\(url.absoluteString) answered \(response.status) in \(Self.milliseconds(since: started))"
                             + (advice.map { ": \($0)" } ?? ""))
        } catch {
            return Check(name: name, verdict: .fail, detail: "\(url.absoluteString): \(service) could not be reached: \(error)")
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
            let summary = try store.read { try StoreSummary(of: store, in: $0, full: false) }
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

    /// `12 ms`: the time since `started`.
    private static func milliseconds(since started: ContinuousClock.Instant) -> String {
        "\(Int((ContinuousClock.now - started).inMilliseconds.rounded())) ms"
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
