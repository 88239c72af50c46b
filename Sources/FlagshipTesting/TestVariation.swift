import Flagship

/// The campaign, variation group and variation a test's flag value comes in, as the SDK sees them
/// (`FSFlag.metadata()`, activates).
///
/// Each flag key is a campaign of its own (type `toggle`) with one variation group; each value
/// of the key is a variation. The ids are derived from the key and the value alone, so they are
/// the same in every run and for every visitor given that value:
/// `c-<key>`, `vg-<key>`, `v-<key>-<12 hex digits of the value's JSON text hashed>`.
public struct TestVariation: Sendable, Hashable {
    /// The flag's key, which names the campaign and the variation group.
    public let flagKey: String
    /// The flag's value, which names the variation.
    public let value: FSJSONValue

    /// The variation that serves `value` for `flagKey`, with the ids the environment gives it.
    public init(flagKey: String, value: FSJSONValue) {
        self.flagKey = flagKey
        self.value = value
    }

    /// `c-<key>`.
    public var campaignId: String { "c-\(flagKey)" }
    /// `vg-<key>`.
    public var variationGroupId: String { "vg-\(flagKey)" }
    /// `v-<key>-<12 hex digits>`: the same for every visitor given this value.
    public var variationId: String { "v-\(flagKey)-\(Self.digest(value.description))" }
    /// The campaign's name and slug: the flag key.
    public var campaignName: String { flagKey }
    /// The variation's name: the value as JSON text.
    public var variationName: String { value.description }
    /// The type of every test campaign: `toggle`.
    public static let campaignType = "toggle"
    /// The name of every test variation group: `FlagshipTesting`.
    public static let variationGroupName = "FlagshipTesting"

    /// FNV-1a, 64 bits, as 12 hex digits: stable across runs and platforms, unlike `Hasher`.
    private static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let hex = String(hash >> 16, radix: 16)
        return String(repeating: "0", count: 12 - hex.count) + hex
    }
}
