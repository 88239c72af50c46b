import Foundation

/// The hits the SDK makes itself, as wire fields (without identity, `cid`, `ds` or `qt`, which are
/// added at send time like for any hit).
package enum SDKHit {
    /// The consent hit, sent at a visitor's creation and at every `setConsent`:
    /// `{"t":"EVENT","ec":"User Engagement","ea":"fs_consent","el":"<client>:true"}`.
    /// It is the one hit sent (and kept in the cache) without consent.
    static func consent(hasConsented: Bool, clientName: String) -> [String: FSJSONValue] {
        [
            "t": .string(FSTypeTrack.EVENT.rawValue),
            "ec": .string(FSCategoryEvent.User_Engagement.rawValue),
            "ea": .string("fs_consent"),
            "el": .string("\(clientName):\(hasConsented)"),
        ]
    }

    /// The segment hit (bucketing mode): `{"t":"SEGMENT","s":{...}}`, the visitor's context with every
    /// value written as a string (see `segmentString(_:)`).
    package static func segment(context: [String: FSJSONValue]) -> [String: FSJSONValue] {
        [
            "t": .string(FSTypeTrack.SEGMENT.rawValue),
            "s": .object(context.mapValues { .string(segmentString($0)) }),
        ]
    }

    /// A context value as a string: a string as is, `true`/`false`, an integer in decimal, a double
    /// as JavaScript and JSON write it (`2.0` → `"2"`, `2.5` → `"2.5"`), so the same context gives the
    /// same segment whichever SDK sent it and whether the number arrived as an integer or a double.
    /// Anything else (never in a valid context) becomes its JSON text.
    static func segmentString(_ value: FSJSONValue) -> String {
        switch value {
        case .string(let string): return string
        case .bool(let bool): return bool ? "true" : "false"
        case .int(let int): return String(int)
        case .double(let double):
            // Below 2^53 every integral double is exact as an Int64.
            if double.rounded() == double, abs(double) < 9_007_199_254_740_992 { return String(Int64(double)) }
            return String(double)
        case .null, .array, .object:
            return value.jsonString()
        }
    }
}
