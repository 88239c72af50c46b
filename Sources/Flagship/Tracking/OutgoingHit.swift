import Foundation

/// A hit or an activate ready to go on the wire.
struct OutgoingHit: Sendable, Equatable {
    /// The hit's id in the hit cache, reported back in ``SendResult/hitIds``.
    let id: String
    /// The wire type (`EVENT`, `SCREENVIEW`... or `ACTIVATE`).
    let type: String
    /// Creation time, unix milliseconds: the base of `qt`.
    let createdAt: Int64
    /// The wire content without `qt`, which is added at each send. A hit has `t`, `vid`, `cuid`
    /// when authenticated, `ds`, `cid` and its own fields; an activate has `vid`, `aid`, `caid`, `vaid`.
    let fields: [String: JSONValue]

    var isActivate: Bool { type == "ACTIVATE" }

    /// The visitor the hit belongs to: an activate's `vid`; a hit's `cuid` when authenticated,
    /// else its `vid` (PROTOCOL.md sections 2 and 3 put the two ids in opposite places).
    var visitorId: String {
        let id = isActivate ? fields["vid"] : (fields["cuid"] ?? fields["vid"])
        return id?.stringValue ?? String(self.id.prefix { $0 != ":" })
    }

    /// The anonymous id while the visitor is authenticated.
    var anonymousId: String? {
        isActivate ? fields["aid"]?.stringValue : (fields["cuid"] != nil ? fields["vid"]?.stringValue : nil)
    }

    init(id: String, type: String, createdAt: Int64, fields: [String: JSONValue]) {
        self.id = id
        self.type = type
        self.createdAt = createdAt
        self.fields = fields
    }
}

extension OutgoingHit {
    /// Who a hit or an activate is about: the visitor's id, and its anonymous id while it is
    /// authenticated.
    struct Identity: Sendable {
        let visitorId: String
        let anonymousId: String?
    }

    /// A hit with the visitor's identity and the environment (PROTOCOL.md section 2): `vid` is the
    /// anonymous id while authenticated, with `cuid` the visitor id; `ds` is `APP`; `cid` the env id.
    static func hit(type: String, fields: [String: JSONValue], identity: Identity, envId: String, createdAt: Int64) -> OutgoingHit {
        var content = fields
        if let anonymousId = identity.anonymousId {
            content["vid"] = .string(anonymousId)
            content["cuid"] = .string(identity.visitorId)
        } else {
            content["vid"] = .string(identity.visitorId)
        }
        content["ds"] = .string("APP")
        content["cid"] = .string(envId)
        return OutgoingHit(id: HitID.make(visitorId: identity.visitorId, createdAt: createdAt), type: type,
                           createdAt: createdAt, fields: content)
    }

    /// An activate (PROTOCOL.md section 3): the ids the other way round from a hit, `vid` the visitor
    /// id and `aid` its anonymous id, with the variation group (`caid`) and variation (`vaid`).
    static func activate(identity: Identity, variationGroupId: String, variationId: String, createdAt: Int64) -> OutgoingHit {
        var fields: [String: JSONValue] = [
            "vid": .string(identity.visitorId), "caid": .string(variationGroupId), "vaid": .string(variationId),
        ]
        if let anonymousId = identity.anonymousId { fields["aid"] = .string(anonymousId) }
        return OutgoingHit(id: HitID.make(visitorId: identity.visitorId, createdAt: createdAt), type: "ACTIVATE",
                           createdAt: createdAt, fields: fields)
    }
}
