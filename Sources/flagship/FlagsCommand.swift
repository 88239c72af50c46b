import ArgumentParser
import Flagship
import Foundation

/// `flagship flags`: every flag key a bucketing file can give, with its value types per
/// variation. A key whose types differ across variations is flagged: a typed read
/// (`FlagKey<Bool>`) would give some visitors the default with `TYPE_MISMATCH`.
struct FlagsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flags",
        abstract: "List the flag keys of a bucketing file with their value types, offline.",
        discussion: """
            One row per key, sorted: its types (string, boolean, integer, number, object, array, \
            null), how many variations give it, the campaigns. A key given values of more than one \
            type (null aside, integer counted as number) is marked "types differ"; the command still \
            exits 0. With --json: \
            {"flags": [{"key", "types", "typesDiffer", "variations": [{"campaignId", \
            "variationGroupId", "variationId", "type"}]}]}.
            """
    )

    @Option(help: ArgumentHelp("The bucketing file, as served at <cdn>/<env-id>/bucketing.json.", valueName: "file"))
    var bucketingFile: String
    @Flag(help: "Print JSON instead of a table.") var json = false
    @OptionGroup var maximumBytes: BucketingFileLimit

    /// One variation's value for a key.
    private struct Given {
        let campaignId: String
        let variationGroupId: String
        let variationId: String
        let type: String
    }

    func run() throws {
        let file = try BucketingFileArgument.load(bucketingFile, maximumBytes: maximumBytes.bytes)
        for warning in file.warnings { Output.warn("\(bucketingFile): \(warning)") }
        var keys: [String: [Given]] = [:]
        for campaign in file.campaigns {
            for group in campaign.variationGroups {
                for variation in group.variations {
                    guard let assignment = variation.assignment else { continue }
                    for (key, value) in assignment.flags {
                        keys[key, default: []].append(Given(campaignId: campaign.id, variationGroupId: group.id,
                                                            variationId: assignment.variationId, type: Self.typeName(value)))
                    }
                }
            }
        }
        let sorted = keys.sorted { $0.key < $1.key }
        if json {
            try Output.printJSON(["flags": sorted.map { key, given -> [String: Any] in
                [
                    "key": key,
                    "types": Self.types(given),
                    "typesDiffer": Self.typesDiffer(given),
                    "variations": given.map {
                        ["campaignId": $0.campaignId, "variationGroupId": $0.variationGroupId, "variationId": $0.variationId, "type": $0.type]
                    },
                ]
            }])
            return
        }
        guard !sorted.isEmpty else {
            Output.line("no flag in \(bucketingFile)")
            return
        }
        var rows = [["KEY", "TYPES", "VARIATIONS", "CAMPAIGNS", ""]]
        for (key, given) in sorted {
            var campaigns: [String] = []
            for campaign in given.map(\.campaignId) where !campaigns.contains(campaign) { campaigns.append(campaign) }
            rows.append([key, Self.types(given).joined(separator: ", "), String(given.count), campaigns.joined(separator: ", "),
                         Self.typesDiffer(given) ? "types differ" : ""])
        }
        Output.line(Output.table(rows))
    }

    /// The types a key is given, in a fixed order.
    private static func types(_ given: [Given]) -> [String] {
        let present = Set(given.map(\.type))
        return ["string", "boolean", "integer", "number", "object", "array", "null"].filter(present.contains)
    }

    /// Whether variations give the key values of different types: `null` (no value) aside, and
    /// an integer counted as a number (a `FlagKey<Double>` reads both).
    private static func typesDiffer(_ given: [Given]) -> Bool {
        Set(given.map { $0.type == "integer" ? "number" : $0.type }).subtracting(["null"]).count > 1
    }

    private static func typeName(_ value: FSJSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "boolean"
        case .int: return "integer"
        case .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

/// A bucketing file named on the command line, read and parsed, or a clear error.
enum BucketingFileArgument {
    static func load(_ path: String, maximumBytes: Int? = nil) throws -> BucketingFile {
        try read(path, maximumBytes: maximumBytes).file
    }

    /// The file's bytes, once checked to be a usable bucketing file.
    static func bytes(_ path: String, maximumBytes: Int? = nil) throws -> Data {
        try read(path, maximumBytes: maximumBytes).bytes
    }

    /// Reads the file once, at most `maximumBytes` (`--bucketing-file-maximum-bytes`, else
    /// `BucketingFile.maximumBytes`): a regular file, or a FIFO or a process substitution (`<(curl …)`).
    private static func read(_ path: String, maximumBytes: Int?) throws -> (bytes: Data, file: BucketingFile) {
        let limit = maximumBytes ?? BucketingFile.maximumBytes
        let data: Data
        do {
            data = try BucketingFile.bytes(at: URL(fileURLWithPath: path), maximumBytes: limit)
        } catch {
            throw CommandFailure("cannot read the bucketing file \(path): \(error.reason)")
        }
        do {
            return (data, try BucketingFile(json: data, maximumBytes: limit))
        } catch {
            throw CommandFailure("\(path) is not a usable bucketing file: \(error.reason)")
        }
    }
}

/// `--bucketing-file-maximum-bytes`: the largest bucketing file a command reads (the SDK's
/// `withBucketingFileMaximumBytes`), 10 MiB unless given.
struct BucketingFileLimit: ParsableArguments {
    @Option(name: .customLong("bucketing-file-maximum-bytes"),
            help: ArgumentHelp("The largest bucketing file read, in bytes (default: 10 MiB, 10485760).", valueName: "bytes"))
    var value: Int?

    var bytes: Int? { value }

    mutating func validate() throws {
        if let value, value < 1_024 || value > Int(Int32.max) {
            throw ValidationError("--bucketing-file-maximum-bytes must be from 1024 bytes to 2 GiB")
        }
    }
}
