import Foundation

/// The permission bits of a file, for the commands that warn about secrets others can read.
enum FileMode {
    /// The file's mode (`0o644`...) when group or other users have any permission on it; `nil`
    /// when only its owner has, or when it cannot be read.
    static func openToOthers(atPath path: String) -> Int? {
        guard let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber,
              mode.intValue & 0o077 != 0 else { return nil }
        return mode.intValue & 0o777
    }

    /// `644`.
    static func octal(_ mode: Int) -> String {
        String(mode, radix: 8)
    }
}
