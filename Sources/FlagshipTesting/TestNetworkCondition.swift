/// What the in-process network of a ``FlagshipTestEnvironment`` does with the SDK's requests:
/// `.available` answers them; the others simulate an outage, for testing an app's offline
/// behaviour. A request failed this way records nothing (only `failedRequestCount` counts it).
public enum TestNetworkCondition: Sendable, Hashable {
    /// Every request is answered.
    case available
    /// Every request fails without an answer, as when the host cannot be reached: a fetch fails
    /// (`FETCH_ERROR`, the visitor keeps its flags), hits stay in the store and are retried.
    case unreachable
    /// Every request is answered with this HTTP status: a 5xx, 408 or 429 is retried, another
    /// 4xx makes the SDK drop the hits it carried (as the real endpoints' refusal would).
    case failing(status: Int)
}
