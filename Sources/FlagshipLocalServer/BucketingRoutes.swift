import Flagship
import Foundation

/// What a bucketing file answers: the Decision API's answer made by the SDK's own bucketing
/// engine (`DecisionSource.bucketing`), and the file itself for the SDK's bucketing mode.
/// Deciding with the same engine is what makes an SDK in API mode against this server and one
/// in bucketing mode on the same file get the same flags.
enum BucketingRoutes {
    /// `POST /v2/{envId}/campaigns`: the engine's decision for the request's `visitorId`,
    /// `context` and, an extension of this server, `assignmentsHistory` (variation group id →
    /// variation id, as in the visitor cache), in the Decision API's shape.
    static func decision(for request: ServerRequest, file: ServedBucketingFile) -> ServerResponse {
        guard let body = try? FSJSONValue(parsing: request.body), case .object(let fields) = body else {
            return .error(400, "the body is not a JSON object")
        }
        guard case .string(let visitorId)? = fields["visitorId"] else {
            return .error(400, #""visitorId" must be a string"#)
        }
        let context: [String: FSJSONValue]
        switch fields["context"] {
        case nil, .null?:
            context = [:]
        case .object(let object)?:
            if let key = object.keys.sorted().first(where: { !isContextValue(object[$0]) }) {
                return .error(400, #"the context value of "\#(key)" must be a string, a number or a boolean"#)
            }
            context = object
        default:
            return .error(400, #""context" must be a JSON object"#)
        }
        var history: [String: String] = [:]
        switch fields["assignmentsHistory"] {
        case nil, .null?:
            break
        case .object(let object)?:
            for (groupId, variation) in object {
                guard case .string(let variationId) = variation else {
                    return .error(400, #""assignmentsHistory" must map variation group ids to variation id strings"#)
                }
                history[groupId] = variationId
            }
        default:
            return .error(400, #""assignmentsHistory" must be a JSON object"#)
        }

        let decision = file.file.decide(visitorId: visitorId, context: context, history: history)
        guard !decision.panic else {
            return .json(["visitorId": .string(visitorId), "panic": true, "campaigns": []])
        }
        let settings = file.file.accountSettings
        return .json([
            "visitorId": .string(visitorId),
            "panic": false,
            "campaigns": .array(decision.campaigns.map(wireCampaign)),
            "extras": ["accountSettings": ["enabledXPC": .bool(settings.enabledXPC), "enabled1V1T": .bool(settings.enabled1V1T)]],
        ])
    }

    /// `GET /{envId}/bucketing.json`: the file's bytes with its `Last-Modified`, or `304 Not
    /// Modified` with no body when the request's `If-Modified-Since` is that time or later.
    static func download(for request: ServerRequest, file: ServedBucketingFile) -> ServerResponse {
        let headers = ["Last-Modified": HTTPDate.string(from: file.lastModified)]
        if let since = request.headers["If-Modified-Since"].flatMap(HTTPDate.date(from:)),
           HTTPDate.wholeSeconds(of: since) >= HTTPDate.wholeSeconds(of: file.lastModified) {
            return ServerResponse(status: 304, body: Data(), headers: headers)
        }
        return ServerResponse(status: 200, body: file.data, headers: headers)
    }

    /// A campaign as the Decision API lists it. `modifications.value` is exactly the engine's
    /// flags for it, and always comes with a `type`: the SDK takes no flag from a value without one.
    private static func wireCampaign(_ campaign: BucketedCampaign) -> FSJSONValue {
        [
            "id": .string(campaign.campaignId),
            "name": .string(campaign.campaignName),
            "slug": campaign.slug.map(FSJSONValue.string) ?? .null,
            "type": .string(campaign.type),
            "variationGroupId": .string(campaign.variationGroupId),
            "variationGroupName": .string(campaign.variationGroupName),
            "variation": [
                "id": .string(campaign.variationId),
                "name": .string(campaign.variationName),
                "reference": .bool(campaign.isReference),
                "modifications": [
                    "type": .string(campaign.modificationsType ?? "FLAG"),
                    "value": .object(campaign.flags),
                ],
            ],
        ]
    }

    /// The kinds a visitor context holds: what the SDK sends, and what targeting compares.
    private static func isContextValue(_ value: FSJSONValue?) -> Bool {
        switch value {
        case .string?, .int?, .double?, .bool?: return true
        default: return false
        }
    }
}
