#if Postgres
import Foundation
import NIOSSL
import PostgresNIO

extension FlagshipPostgresStore {
    /// How a store's connections are secured: libpq's `sslmode` and `sslrootcert`, read from the
    /// URL's query (`?sslmode=verify-full&sslrootcert=/etc/ssl/pg-ca.pem`), else from `PGSSLMODE`
    /// and `PGSSLROOTCERT`, with libpq's default, `prefer`.
    ///
    /// | mode | encrypted | the server's certificate |
    /// |---|---|---|
    /// | `disable` | never | — |
    /// | `allow`, `prefer` | when the server offers TLS, else in clear | not checked |
    /// | `require` | always: a server without TLS is refused | not checked; checked as `verify-ca` does when a root certificate is given or `~/.postgresql/root.crt` exists (as libpq does) |
    /// | `verify-ca` | always | signed by a root certificate |
    /// | `verify-full` | always | signed by a root certificate, and issued for the host connected to |
    ///
    /// Issued for the host: one of the certificate's DNS names matches the URL's host name, or one
    /// of its IP addresses is the address connected to (swift-nio-ssl's check, RFC 6125). libpq is
    /// stricter for a host given by name: it ignores IP addresses in the certificate then, where
    /// this store accepts a certificate naming only `IP:127.0.0.1` for `localhost`. The check is
    /// swift-nio-ssl's, made inside postgres-nio's connections, and neither lets a store replace it.
    ///
    /// The root certificates: `sslrootcert` (a PEM file of one or more certificates, or `system`
    /// for the system's trust store), else `~/.postgresql/root.crt`. `verify-ca` and `verify-full`
    /// without either are refused before anything is connected, as libpq refuses them. `allow` is
    /// read as `prefer` (it encrypts where libpq would first try in clear).
    public struct TransportSecurity: Sendable, Equatable, CustomStringConvertible {
        /// libpq's `sslmode` values.
        public enum Mode: String, Sendable, CaseIterable {
            /// In clear, always.
            case disable
            /// Read as `prefer`: libpq tries in clear first, this store TLS first.
            case allow
            /// TLS when the server offers it, else in clear; the certificate is not checked.
            case prefer
            /// TLS always; the certificate is checked only when a root certificate is given.
            case require
            /// TLS always; the certificate must be signed by the root certificates.
            case verifyCA = "verify-ca"
            /// TLS always; the certificate must be signed by the root certificates and issued for
            /// the host connected to.
            case verifyFull = "verify-full"
        }

        /// The certificates a server's certificate must be signed by.
        public enum RootCertificates: Sendable, Equatable {
            /// A PEM file of one or more certificates (read when the security is made).
            case file(String)
            /// The system's trust store (`sslrootcert=system`).
            case system
        }

        /// The `sslmode`.
        public let mode: Mode
        /// Where the root certificates come from, when the server's certificate is checked.
        public let rootCertificates: RootCertificates?
        /// The certificates read from `rootCertificates`' file.
        private let trusted: [NIOSSLCertificate]?

        /// Whether a connection is always encrypted (a server without TLS is refused).
        public var requiresEncryption: Bool {
            [.require, .verifyCA, .verifyFull].contains(mode)
        }

        /// libpq's default: TLS when the server offers it, certificates not checked.
        public static let prefer = TransportSecurity(mode: .prefer, rootCertificates: nil, trusted: nil)
        /// In clear, always: for a server reached over a trusted network or a tunnel.
        public static let disable = TransportSecurity(mode: .disable, rootCertificates: nil, trusted: nil)

        private init(mode: Mode, rootCertificates: RootCertificates?, trusted: [NIOSSLCertificate]?) {
            self.mode = mode
            self.rootCertificates = rootCertificates
            self.trusted = trusted
        }

        /// `mode`, checking the server's certificate against `rootCertificates` where the mode
        /// does (`require` included, when given some). The file is read here: a file that cannot
        /// be read, or holds no certificate, is refused now, naming it.
        public init(mode: Mode, rootCertificates: RootCertificates? = nil) throws(FlagshipPostgresError) {
            try self.init(mode: mode, rootCertificates: rootCertificates, origin: "the root certificate file")
        }

        private init(mode: Mode, rootCertificates: RootCertificates?, origin: String) throws(FlagshipPostgresError) {
            self.mode = mode
            switch mode {
            case .disable, .allow, .prefer:
                self.rootCertificates = nil
                trusted = nil
            case .require, .verifyCA, .verifyFull:
                self.rootCertificates = rootCertificates
                if case .file(let path)? = rootCertificates {
                    trusted = try Self.certificates(at: path, origin: origin)
                } else {
                    trusted = nil
                }
                if rootCertificates == nil, mode != .require {
                    throw FlagshipPostgresError(code: .invalidURL, description: "sslmode \(mode.rawValue) checks the server's certificate, but no root certificate is given: "
                        + "name a PEM file with sslrootcert (or PGSSLROOTCERT, or put it at ~/.postgresql/root.crt), or use sslrootcert=system for the system's trust store")
                }
            }
        }

        /// From a URL's query and the environment, as libpq reads them; any other query parameter
        /// is refused, naming it.
        init(query: [URLQueryItem], environment: [String: String], home: String = NSHomeDirectory()) throws(FlagshipPostgresError) {
            var mode: (value: String, origin: String) = environment["PGSSLMODE"].map { ($0, "PGSSLMODE") } ?? ("prefer", "the default sslmode")
            var root: (value: String, origin: String)? = environment["PGSSLROOTCERT"].map { ($0, "PGSSLROOTCERT") }
            for item in query {
                switch item.name {
                case "sslmode": mode = (item.value ?? "", "sslmode in the URL")
                case "sslrootcert": root = (item.value ?? "", "sslrootcert in the URL")
                default:
                    throw FlagshipPostgresError(code: .invalidURL, description: "the PostgreSQL URL's query parameter '\(item.name)' is not one this store reads (it reads sslmode and sslrootcert)")
                }
            }
            guard let known = Mode(rawValue: mode.value) else {
                throw FlagshipPostgresError(code: .invalidURL, description: "\(mode.origin) is '\(mode.value)', which is not a libpq sslmode (\(Mode.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            let roots: RootCertificates?
            let origin: String
            if let root {
                roots = root.value == "system" ? .system : .file(root.value)
                origin = root.origin
            } else {
                // libpq's default file, used when it is there.
                let fallback = (home as NSString).appendingPathComponent(".postgresql/root.crt")
                roots = FileManager.default.fileExists(atPath: fallback) ? .file(fallback) : nil
                origin = "the default root certificate file"
            }
            try self.init(mode: known, rootCertificates: roots, origin: origin)
        }

        private static func certificates(at path: String, origin: String) throws(FlagshipPostgresError) -> [NIOSSLCertificate] {
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMFile(path)
            } catch {
                let reason = FileManager.default.isReadableFile(atPath: path) ? "it holds no PEM certificate that can be read" : "no such file, or it cannot be read"
                throw FlagshipPostgresError(code: .invalidURL, description: "\(origin) \(path) cannot be used: \(reason)")
            }
            guard !certificates.isEmpty else {
                throw FlagshipPostgresError(code: .invalidURL, description: "\(origin) \(path) cannot be used: it holds no certificate")
            }
            return certificates
        }

        /// The TLS settings of a connection, `nil` when it is in clear.
        private var configuration: TLSConfiguration? {
            guard mode != .disable else { return nil }
            var configuration = TLSConfiguration.makeClientConfiguration()
            switch (mode, rootCertificates) {
            case (.verifyFull, _):
                configuration.certificateVerification = .fullVerification
            case (.verifyCA, _), (.require, _?):
                configuration.certificateVerification = .noHostnameVerification
            default:
                configuration.certificateVerification = .none
            }
            if let trusted { configuration.trustRoots = .certificates(trusted) } else { configuration.trustRoots = .default }
            return configuration
        }

        /// For a pool of connections.
        var clientTLS: PostgresClient.Configuration.TLS {
            guard let configuration else { return .disable }
            return requiresEncryption ? .require(configuration) : .prefer(configuration)
        }

        /// For one connection.
        func connectionTLS() throws(FlagshipPostgresError) -> PostgresConnection.Configuration.TLS {
            guard let configuration else { return .disable }
            do {
                let context = try NIOSSLContext(configuration: configuration)
                return requiresEncryption ? .require(context) : .prefer(context)
            } catch {
                throw FlagshipPostgresError(code: .transportSecurity, description: "the TLS settings (sslmode \(mode.rawValue)) cannot be used: \(error)")
            }
        }

        /// `sslmode=…`, and where the root certificates come from.
        public var description: String {
            switch rootCertificates {
            case .file(let path)?: "sslmode=\(mode.rawValue) sslrootcert=\(path)"
            case .system?: "sslmode=\(mode.rawValue) sslrootcert=system"
            case nil: "sslmode=\(mode.rawValue)"
            }
        }

        public static func == (lhs: TransportSecurity, rhs: TransportSecurity) -> Bool {
            lhs.mode == rhs.mode && lhs.rootCertificates == rhs.rootCertificates
        }
    }
}
#endif
