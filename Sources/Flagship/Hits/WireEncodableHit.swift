import FlagshipStore

/// A hit the SDK knows how to put on the wire: every hit type of the SDK adopts it.
///
/// The caller sets fields on a shared object, possibly from several tasks; its fields live in one
/// value behind one lock, so `sendHit` takes them in a single read and a later change cannot reach
/// what was sent.
protocol WireEncodableHit: FSHitWithCommonFields {
    associatedtype Fields: HitFields
    var fields: Locked<Fields> { get }
}

/// A hit's fields as a value: what `sendHit` validates and encodes.
protocol HitFields: Sendable, Equatable {
    /// The hit's type on the wire (`t`).
    static var type: FSTypeTrack { get }
    var commonFields: FSHitCommonFields { get set }
    /// Validates the hit's own fields and adds them (not `t`, not the common fields).
    func writeOwnFields(to writer: inout HitFieldWriter) throws(HitValidationError)
}

extension HitFields {
    /// The hit's wire fields (PROTOCOL.md section 2): `t`, its own fields and the common ones; absent
    /// optionals are left out. Identity (`vid`/`cuid`), `cid`, `ds` and `qt` are added at send time.
    func wireFields() throws(HitValidationError) -> [String: FSJSONValue] {
        var writer = HitFieldWriter(hit: Self.type)
        writer.fields["t"] = .string(Self.type.rawValue)
        try writeOwnFields(to: &writer)
        try commonFields.write(to: &writer)
        return writer.fields
    }
}

extension WireEncodableHit {
    /// The fields as they are now, read in one step.
    var snapshot: Fields { fields.withLock { $0 } }

    /// The wire fields of `snapshot`.
    func wireFields() throws(HitValidationError) -> [String: FSJSONValue] {
        try snapshot.wireFields()
    }

    /// One field, read or written under the hit's lock.
    subscript<Value>(field field: WritableKeyPath<Fields, Value>) -> Value {
        get { fields.withLock { $0[keyPath: field] } }
        set { fields.withLock { $0[keyPath: field] = newValue } }
    }

    /// Changes the common fields in one step under the lock, so two tasks setting different
    /// fields of one hit both keep their change.
    func updateCommonFields(_ change: (inout FSHitCommonFields) -> Void) {
        fields.withLock { change(&$0.commonFields) }
    }
}

/// Validates a hit given to `sendHit` and gives its wire type and fields, read from the hit once.
/// A type conforming to `FSTrackingProtocol` outside the SDK is refused: the SDK cannot know its fields.
package func encodedForSending(
    _ hit: any FSTrackingProtocol
) throws(HitValidationError) -> (type: FSTypeTrack, fields: [String: FSJSONValue]) {
    guard let hit = hit as? any WireEncodableHit else {
        throw .notAnSDKHit(typeName: String(describing: Swift.type(of: hit)))
    }
    return (hit.type, try hit.wireFields())
}
