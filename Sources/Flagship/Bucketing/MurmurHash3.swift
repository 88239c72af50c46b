/// MurmurHash3, x86 32-bit variant: the hash that places a visitor in a variation group's
/// allocation (BUCKETING.md: `murmur3_x86_32(utf8(variationGroupId + visitorId), seed 0) % 100`).
///
/// The hash is fed in pieces through ``State``, so a group can keep the state after its own id
/// and each decision only feeds the visitor id: no concatenated string, no allocation.
package enum MurmurHash3 {
    /// The hash of `bytes`.
    package static func x86_32(_ bytes: some Sequence<UInt8>, seed: UInt32 = 0) -> UInt32 {
        var state = State(seed: seed)
        state.append(bytes)
        return state.finalized()
    }

    /// The hash of the UTF-8 bytes of `first` followed by those of `second`, without building
    /// `first + second`.
    package static func x86_32(utf8Of first: String, followedBy second: String, seed: UInt32 = 0) -> UInt32 {
        var state = State(seed: seed)
        state.append(utf8Of: first)
        state.append(utf8Of: second)
        return state.finalized()
    }

    /// A hash under way: bytes go in by any slices, the result is the hash of them all in order.
    package struct State: Sendable, Equatable {
        private var h1: UInt32
        /// Bytes of the current block not yet mixed, little-endian, `pendingCount` of them (0...3).
        private var pending: UInt32 = 0
        private var pendingCount = 0
        private var length = 0

        package init(seed: UInt32 = 0) {
            h1 = seed
        }

        package mutating func append(utf8Of string: String) {
            var string = string
            string.withUTF8 { append(UnsafeRawBufferPointer($0)) }
        }

        package mutating func append(_ bytes: some Sequence<UInt8>) {
            let contiguous: Void? = bytes.withContiguousStorageIfAvailable { append(UnsafeRawBufferPointer($0)) }
            if contiguous == nil {
                for byte in bytes { append(byte) }
            }
        }

        package mutating func append(_ bytes: UnsafeRawBufferPointer) {
            var index = 0
            let count = bytes.count
            // Complete a block begun by the previous piece first.
            while pendingCount > 0, index < count {
                append(bytes[index])
                index += 1
            }
            while index + 4 <= count {
                mix(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self)))
                length += 4
                index += 4
            }
            while index < count {
                append(bytes[index])
                index += 1
            }
        }

        package mutating func append(_ byte: UInt8) {
            pending |= UInt32(byte) << (8 * UInt32(pendingCount))
            pendingCount += 1
            length += 1
            if pendingCount == 4 {
                mix(pending)
                pending = 0
                pendingCount = 0
            }
        }

        /// The hash of every byte appended so far (the state itself is left as it was).
        package func finalized() -> UInt32 {
            var hash = h1
            if pendingCount > 0 {
                hash ^= Self.scramble(pending)
            }
            hash ^= UInt32(truncatingIfNeeded: length)
            hash ^= hash >> 16
            hash &*= 0x85eb_ca6b
            hash ^= hash >> 13
            hash &*= 0xc2b2_ae35
            hash ^= hash >> 16
            return hash
        }

        private mutating func mix(_ block: UInt32) {
            h1 ^= Self.scramble(block)
            h1 = (h1 << 13) | (h1 >> 19)
            h1 = h1 &* 5 &+ 0xe654_6b64
        }

        private static func scramble(_ block: UInt32) -> UInt32 {
            var k1 = block &* 0xcc9e_2d51
            k1 = (k1 << 15) | (k1 >> 17)
            return k1 &* 0x1b87_3593
        }
    }
}
