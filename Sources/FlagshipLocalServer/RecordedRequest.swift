import Flagship
import Foundation

/// A request the server received and what it did with it, kept so tests can assert what the
/// SDK sent, including what was refused or hit by a fault.
public struct RecordedRequest: Sendable {
    /// Arrival order across all routes, from 1.
    public let sequence: Int
    /// The request as it arrived.
    public let request: ServerRequest
    /// What the server did with it: answered, cut off or dropped.
    public let outcome: RequestOutcome
    /// The injected faults that applied to this request (latency and the one that answered it).
    public let faults: [FaultKind]

    /// The endpoint the request's path names.
    public var route: Route { request.route }
    /// The request's header fields.
    public var headers: RequestHeaders { request.headers }
    /// The request's body parsed as JSON; `nil` when empty or not JSON.
    public var json: FSJSONValue? { request.json }
    /// When the whole request had arrived.
    public var receivedAt: Date { request.receivedAt }

    /// The status answered; `nil` for a dropped connection.
    public var status: Int? {
        switch outcome {
        case .answered(let status), .cutOff(let status): return status
        case .dropped: return nil
        }
    }

    /// Whether the server took the request in (a 2xx answered whole).
    public var isAccepted: Bool {
        if case .answered(let status) = outcome { return (200..<300).contains(status) }
        return false
    }

    /// The hits (`h` items) of an event batch the server accepted; none for any other request.
    var acceptedHits: [FSJSONValue] {
        guard route == .events, isAccepted else { return [] }
        return json?["h"]?.arrayValue ?? []
    }

    /// The entries (`batch` items) of an activate request the server accepted; none otherwise.
    var acceptedActivates: [FSJSONValue] {
        guard route == .activate, isAccepted else { return [] }
        return json?["batch"]?.arrayValue ?? []
    }
}

/// What the server did with a request.
public enum RequestOutcome: Sendable, Equatable {
    /// Answered with this status and a whole body.
    case answered(status: Int)
    /// The head announced the whole body, half of it was sent, and the connection closed.
    case cutOff(status: Int)
    /// The connection was closed without an answer.
    case dropped
}
