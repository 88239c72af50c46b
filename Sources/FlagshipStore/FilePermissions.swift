import Foundation

/// The permission bits of a file that holds what others must not read: a store (visitor data), an
/// API key file, a record of requests. Asked so that the SDK and the tool can say so; never changed.
package enum FilePermissions {
    /// The file's permission bits (`0o644`...) when group or other users have any permission on
    /// it (`stat` follows a symbolic link); `nil` when only its owner has, or it cannot be read.
    package static func openToOthers(atPath path: String) -> mode_t? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let permissions = status.st_mode & 0o777
        return permissions & 0o077 == 0 ? nil : permissions
    }

    /// `644`: how `ls -l`'s numeric form and `chmod` write it.
    package static func octal(_ permissions: mode_t) -> String {
        String(permissions, radix: 8)
    }
}
