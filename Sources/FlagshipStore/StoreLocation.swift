import Foundation

/// Where an environment's database lives: `<cache dir>/flagship-<envId>.sqlite`.
package enum StoreLocation {
    /// `$FLAGSHIP_CACHE_DIR`, else `$XDG_CACHE_HOME/flagship`, else `~/.cache/flagship`.
    package static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let directory = environment["FLAGSHIP_CACHE_DIR"], !directory.isEmpty {
            return URL(fileURLWithPath: directory, isDirectory: true)
        }
        if let cacheHome = environment["XDG_CACHE_HOME"], !cacheHome.isEmpty {
            return URL(fileURLWithPath: cacheHome, isDirectory: true).appendingPathComponent("flagship", isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true)
            .appendingPathComponent(".cache", isDirectory: true)
            .appendingPathComponent("flagship", isDirectory: true)
    }

    /// The database file of `envId` in `directory`. Characters other than letters, digits, `-`
    /// and `_` become `_`, so an env id can never name a path outside the directory.
    package static func databaseFile(envId: String, in directory: URL) -> URL {
        let safe = String(envId.unicodeScalars.map { scalar -> Character in
            let allowed = scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || scalar == "-" || scalar == "_")
            return allowed ? Character(scalar) : "_"
        })
        return directory.appendingPathComponent("flagship-\(safe).sqlite", isDirectory: false)
    }
}
