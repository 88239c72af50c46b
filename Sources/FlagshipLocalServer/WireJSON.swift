import Flagship

/// The JSON value of a request body the server recorded, or of an answer a test gives it:
/// `FSJSONValue`, the SDK's one JSON type, under the name the server's first versions used.
/// Values, literals, parsing (`WireJSON(parsing:)`) and text (`jsonData()`) are those of
/// `FSJSONValue`; a number keeps the kind its text has (`1.0` is `.double`).
@available(*, deprecated, renamed: "FSJSONValue", message: "WireJSON is FSJSONValue, the SDK's one JSON type: write FSJSONValue")
public typealias WireJSON = FSJSONValue
