import FlagshipStore
import Foundation

/// Ids of hits and activates: `<visitorId>:<uuid>`, where the UUID is a version 7 UUID (RFC 9562):
/// the creation time in milliseconds, then a per-process sequence, then random bits.
///
/// Time-ordered ids keep the hit table's primary key appending instead of scattering every
/// insert and delete over random pages (random UUIDs doubled the pages a commit wrote), and
/// they cost one `getrandom` call instead of opening `/dev/urandom` for each hit.
enum HitID {
    private struct Sequence {
        var millisecond: Int64 = 0
        var counter: UInt16 = 0
    }

    private static let sequence = Locked(Sequence())

    static func make(visitorId: String, createdAt: Int64) -> String {
        "\(visitorId):\(uuid(millisecond: createdAt))"
    }

    /// A version 7 UUID in lower-case text; ids made in one millisecond by this process sort in
    /// the order they were made (a 12-bit sequence, started at a random point each millisecond).
    static func uuid(millisecond: Int64) -> String {
        var random = SystemRandomNumberGenerator()
        let bits = random.next() as UInt64
        let counter = sequence.withLock { state -> UInt16 in
            if state.millisecond == millisecond {
                state.counter &+= 1
            } else {
                state.millisecond = millisecond
                state.counter = UInt16(truncatingIfNeeded: bits >> 52) & 0x07FF
            }
            return state.counter & 0x0FFF
        }
        let time = UInt64(bitPattern: max(0, millisecond)) & 0xFFFF_FFFF_FFFF
        let high = time << 16 | 0x7000 | UInt64(counter)
        let low = (bits & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        let hex = hexDigits(high, 16) + hexDigits(low, 16)
        let characters = Array(hex)
        return String(characters[0..<8]) + "-" + String(characters[8..<12]) + "-" + String(characters[12..<16])
            + "-" + String(characters[16..<20]) + "-" + String(characters[20..<32])
    }

    private static func hexDigits(_ value: UInt64, _ count: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: count - text.count) + text
    }
}
