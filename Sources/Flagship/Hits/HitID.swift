import FlagshipStore
import Foundation

/// Ids of hits and activates: `<visitorId>:<uuid>`, where the UUID is a version 7 UUID (RFC 9562):
/// the creation time in milliseconds, then a per-process sequence, then random bits.
///
/// Time-ordered ids keep the hit table's primary key appending instead of scattering every
/// insert and delete over random pages (random UUIDs doubled the pages a commit wrote). The
/// random bits come from the system generator 512 ids' worth at a time, and the text is written
/// into one buffer: a flag read's activate is made on the caller's thread.
enum HitID {
    private struct State {
        var millisecond: Int64 = 0
        var counter: UInt16 = 0
        /// Random words from the system generator, used from `next` on.
        var random = [UInt64](repeating: 0, count: 512)
        var next = 512

        mutating func randomWord() -> UInt64 {
            if next == random.count {
                var generator = SystemRandomNumberGenerator()
                for index in random.indices { random[index] = generator.next() }
                next = 0
            }
            defer { next += 1 }
            return random[next]
        }
    }

    private static let state = Locked(State())

    static func make(visitorId: String, createdAt: Int64) -> String {
        visitorId + ":" + uuid(millisecond: createdAt)
    }

    /// A version 7 UUID in lower-case text; ids made in one millisecond by this process sort in
    /// the order they were made (a 12-bit sequence, started at a random point each millisecond).
    static func uuid(millisecond: Int64) -> String {
        let (counter, bits) = state.withLock { state -> (UInt16, UInt64) in
            let bits = state.randomWord()
            if state.millisecond == millisecond {
                state.counter &+= 1
            } else {
                state.millisecond = millisecond
                state.counter = UInt16(truncatingIfNeeded: bits >> 52) & 0x07FF
            }
            return (state.counter & 0x0FFF, bits)
        }
        let time = UInt64(bitPattern: max(0, millisecond)) & 0xFFFF_FFFF_FFFF
        let high = time << 16 | 0x7000 | UInt64(counter)
        let low = (bits & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var position = 0
            func put(_ value: UInt64, nibbles: Int, from start: Int) {
                for nibble in 0..<nibbles {
                    let shift = UInt64((start - nibble) * 4)
                    buffer[position] = hexDigits[Int((value >> shift) & 0xF)]
                    position += 1
                }
            }
            func dash() {
                buffer[position] = UInt8(ascii: "-")
                position += 1
            }
            put(high, nibbles: 8, from: 15)
            dash()
            put(high, nibbles: 4, from: 7)
            dash()
            put(high, nibbles: 4, from: 3)
            dash()
            put(low, nibbles: 4, from: 15)
            dash()
            put(low, nibbles: 12, from: 11)
            return position
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
