/// SHA-256 (FIPS 180-4), for the version of a bucketing file: the digest of its bytes as
/// received. The `Flagship` product depends on CSQLite and swift-log only, so it has its own.
package enum SHA256 {
    /// The digest of `bytes`, as 64 lowercase hex digits. Read in place where the bytes are
    /// contiguous (`Data`, arrays, a native string's UTF-8), copied once where they are not.
    package static func hex<Bytes: Collection<UInt8>>(of bytes: Bytes) -> String {
        if let digest = bytes.withContiguousStorageIfAvailable({ digest(of: UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return Array(bytes).withUnsafeBytes { digest(of: $0) }
    }

    private static func digest(of bytes: UnsafeRawBufferPointer) -> String {
        var state = initial
        var schedule = [UInt32](repeating: 0, count: 64)
        let whole = bytes.count - bytes.count % 64
        for offset in stride(from: 0, to: whole, by: 64) {
            compress(&state, UnsafeRawBufferPointer(rebasing: bytes[offset ..< offset + 64]), &schedule)
        }
        // Padding: a 1 bit, zeros up to 56 bytes mod 64, then the length in bits, big-endian;
        // one block after the last whole one, or two when fewer than 9 bytes are left in it.
        var tail = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[whole...]))
        tail.append(0x80)
        let blocks = tail.count > 56 ? 2 : 1
        tail.append(contentsOf: repeatElement(0, count: blocks * 64 - 8 - tail.count))
        let bitLength = UInt64(bytes.count) &* 8
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        tail.withUnsafeBytes { tail in
            for offset in stride(from: 0, to: tail.count, by: 64) {
                compress(&state, UnsafeRawBufferPointer(rebasing: tail[offset ..< offset + 64]), &schedule)
            }
        }
        var text = ""
        text.reserveCapacity(64)
        for word in state {
            for shift in stride(from: 28, through: 0, by: -4) {
                text.append(hexDigits[Int((word >> UInt32(shift)) & 0xF)])
            }
        }
        return text
    }

    /// The digest of a string's UTF-8 bytes.
    package static func hex(of text: String) -> String {
        hex(of: text.utf8)
    }

    private static let hexDigits = Array("0123456789abcdef")

    private static let initial: [UInt32] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    ]

    /// The first 32 bits of the fractional parts of the cube roots of the first 64 primes.
    private static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private static func rotateRight(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value >> count) | (value << (32 - count))
    }

    /// One 64-byte block into the state.
    private static func compress(_ state: inout [UInt32], _ block: UnsafeRawBufferPointer, _ schedule: inout [UInt32]) {
        schedule.withUnsafeMutableBufferPointer { w in
            for index in 0..<16 {
                w[index] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
            }
            for index in 16..<64 {
                let s0 = rotateRight(w[index - 15], 7) ^ rotateRight(w[index - 15], 18) ^ (w[index - 15] >> 3)
                let s1 = rotateRight(w[index - 2], 17) ^ rotateRight(w[index - 2], 19) ^ (w[index - 2] >> 10)
                w[index] = w[index - 16] &+ s0 &+ w[index - 7] &+ s1
            }
            roundConstants.withUnsafeBufferPointer { k in
                var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
                for index in 0..<64 {
                    let s1 = rotateRight(e, 6) ^ rotateRight(e, 11) ^ rotateRight(e, 25)
                    let choice = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ choice &+ k[index] &+ w[index]
                    let s0 = rotateRight(a, 2) ^ rotateRight(a, 13) ^ rotateRight(a, 22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let t2 = s0 &+ majority
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                }
                state[0] &+= a
                state[1] &+= b
                state[2] &+= c
                state[3] &+= d
                state[4] &+= e
                state[5] &+= f
                state[6] &+= g
                state[7] &+= h
            }
        }
    }
}
