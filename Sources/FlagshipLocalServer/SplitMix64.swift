/// A small seeded generator (Vigna's SplitMix64): the same seed, the same sequence, on every
/// platform and Swift version, which the standard library's generator does not promise. Public
/// so that a test or a torture run names its seed and is repeated exactly.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence `seed` fixes; any value, 0 included, is a valid seed.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits of the sequence.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A double in 0..<1.
    public mutating func nextUnitInterval() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }
}
