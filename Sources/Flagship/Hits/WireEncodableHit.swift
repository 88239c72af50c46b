/// A hit the SDK knows how to put on the wire: every hit type of the SDK adopts it.
protocol WireEncodableHit: FSHitWithCommonFields {
    /// Validates the hit's own fields and adds them (not `t`, not the common fields).
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError)
}

extension WireEncodableHit {
    /// The hit's wire fields (PROTOCOL.md section 2): `t`, its own fields and the common ones; absent
    /// optionals are left out. Identity (`vid`/`cuid`), `cid`, `ds` and `qt` are added at send time.
    func wireFields() throws(HitValidationError) -> [String: JSONValue] {
        var writer = HitFieldWriter(hit: type)
        writer.fields["t"] = .string(type.rawValue)
        try writeOwnFields(to: &writer)
        try commonFields.write(to: &writer)
        return writer.fields
    }
}

/// Validates a hit given to `sendHit` and gives its wire type and fields. A type conforming to
/// `FSTrackingProtocol` outside the SDK is refused: the SDK cannot know its fields.
func encodedForSending(
    _ hit: any FSTrackingProtocol
) throws(HitValidationError) -> (type: FSTypeTrack, fields: [String: JSONValue]) {
    guard let hit = hit as? any WireEncodableHit else {
        throw .notAnSDKHit(typeName: String(describing: Swift.type(of: hit)))
    }
    return (hit.type, try hit.wireFields())
}
