import Flagship
import Foundation

/// How the server answers `POST /v2/{envId}/campaigns` once the environment id, the API key and
/// the body have passed. Changeable while the server runs (`LocalFlagshipServer.decision`).
public enum DecisionSource: Sendable {
    /// These bytes, status 200, exactly as given (even if they are not JSON).
    case fixed(Data)
    /// `{"visitorId": <the request's>, "panic": true, "campaigns": []}`: the platform switched
    /// the SDK off.
    case panic
    /// Whatever the function answers for the request; it may wait, and may answer any status.
    case handler(@Sendable (ServerRequest) async -> ServerResponse)
    /// The SDK's bucketing engine run on the server's bucketing file
    /// (`LocalFlagshipServer.bucketingFile`) for the request's `visitorId` and `context`, and
    /// its `assignmentsHistory` (variation group id → variation id) when it has one: the flags an
    /// SDK in bucketing mode gets from that file. 500 while the server has no bucketing file.
    case bucketing

    /// Answers `decision` with its `visitorId` replaced by the request's, as the real Decision API
    /// echoes the visitor it decided for.
    public static func echoingVisitorId(_ decision: FSJSONValue) -> DecisionSource {
        .handler { request in
            guard case .object(var object) = decision else { return .json(decision) }
            object["visitorId"] = request.json?["visitorId"] ?? .null
            return .json(.object(object))
        }
    }

    /// The built-in sample (`sampleDecision`), echoing the request's visitor id.
    public static var sample: DecisionSource { echoingVisitorId(sampleDecision) }

    /// The decision in the JSON file at `path`, echoing the request's visitor id. The file must
    /// hold a decision: an object with a `campaigns` array, or with `"panic": true`. Checked
    /// here, so that a typo shows at start rather than as an SDK's parse error.
    public static func file(atPath path: String) throws -> DecisionSource {
        echoingVisitorId(try loadDecision(atPath: path))
    }

    /// The JSON decision in the file at `path`, checked as `file(atPath:)` says.
    public static func loadDecision(atPath path: String) throws -> FSJSONValue {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw LocalServerError.decisionFile(path: path, reason: "cannot be read: \(error.localizedDescription)")
        }
        let decision: FSJSONValue
        do {
            decision = try FSJSONValue(parsing: data)
        } catch {
            throw LocalServerError.decisionFile(path: path, reason: "is not JSON")
        }
        guard decision.objectValue != nil else {
            throw LocalServerError.decisionFile(path: path, reason: "is not a JSON object")
        }
        guard decision["campaigns"]?.arrayValue != nil || decision["panic"] == true else {
            throw LocalServerError.decisionFile(path: path, reason: #"has no "campaigns" array (nor "panic": true)"#)
        }
        return decision
    }
}
