import Foundation

/// A real PostgreSQL server for the tests, started by the tests themselves: Debian's binaries
/// (`make deps` installs them), `initdb` in a temporary directory, a free port on 127.0.0.1,
/// password authentication, stopped by `stop()` (and by the process's exit at the latest).
///
/// Root may not run PostgreSQL: as root, the cluster belongs to the `postgres` user and every
/// command runs through `runuser -u postgres --`.
public final class TemporaryPostgres: @unchecked Sendable {
    /// Why no server could be started, for a test to skip or fail with.
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    public let host = "127.0.0.1"
    public let port: Int
    /// The superuser, with a password: tests connect as it, or as the roles they create.
    public let username = "flagship_admin"
    public let password = "admin-password-\(UInt32.random(in: 0...UInt32.max))"
    public let directory: URL
    private let binaries: URL
    private let lock = NSLock()
    private var running = true
    private var databaseCount = 0

    /// One server for the whole test process, started at first use and stopped at its exit: or
    /// why there is none.
    public static let shared: Result<TemporaryPostgres, Unavailable> = start(durable: false) {
        if case .success(let server) = TemporaryPostgres.shared { server.stop() }
    }

    /// As `shared`, with commits flushed to the disk: for the benchmarks.
    public static let sharedDurable: Result<TemporaryPostgres, Unavailable> = start(durable: true) {
        if case .success(let server) = TemporaryPostgres.sharedDurable { server.stop() }
    }

    /// Starts a server, stopped at the process's exit by `stop` (which reads it back).
    private static func start(durable: Bool, _ stop: @escaping @convention(c) () -> Void) -> Result<TemporaryPostgres, Unavailable> {
        do {
            let server = try TemporaryPostgres(durable: durable)
            atexit(stop)
            return .success(server)
        } catch let error as Unavailable {
            return .failure(error)
        } catch {
            return .failure(Unavailable(description: String(describing: error)))
        }
    }

    /// Whether a missing PostgreSQL must fail the tests instead of skipping them: in CI
    /// (`FLAGSHIP_REQUIRE_POSTGRES=1`, set by `.ci/run`).
    public static var isRequired: Bool {
        ProcessInfo.processInfo.environment["FLAGSHIP_REQUIRE_POSTGRES"] == "1"
    }

    /// The folder holding `initdb`, `pg_ctl` and `postgres`: `$FLAGSHIP_POSTGRES_BIN`, else the
    /// newest `/usr/lib/postgresql/<version>/bin`.
    public static func binaries() -> URL? {
        if let given = ProcessInfo.processInfo.environment["FLAGSHIP_POSTGRES_BIN"], !given.isEmpty {
            return URL(fileURLWithPath: given, isDirectory: true)
        }
        let root = URL(fileURLWithPath: "/usr/lib/postgresql", isDirectory: true)
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return versions.compactMap(Int.init).sorted().reversed()
            .map { root.appendingPathComponent("\($0)/bin", isDirectory: true) }
            .first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("initdb").path) }
    }

    /// Starts a new cluster; throws `Unavailable` when there are no binaries or it cannot start.
    /// Whether commits reach the disk (`fsync`): off for the tests, which need speed and not
    /// durability; on for the benchmarks, which measure commits.
    public let durable: Bool

    /// How a server speaks TLS: not at all, or with a self-signed certificate issued for
    /// `localhost` only (made by `openssl`), beside clear text or instead of it.
    public enum TLS: Sendable {
        case off
        case offered
        case required
    }

    public let tls: TLS
    /// The server's certificate (PEM), self-signed: the root certificate a client that checks it
    /// trusts. `nil` without TLS.
    public var certificate: URL? { tls == .off ? nil : directory.appendingPathComponent("server.crt") }

    /// `durable`: commits are flushed to the disk, as on a real server. Extra server options may
    /// be given in `FLAGSHIP_POSTGRES_OPTIONS` (for example `-c log_min_duration_statement=5`).
    /// `tls`: `.required` accepts TCP connections over TLS only (`hostssl` in `pg_hba.conf`).
    public init(durable: Bool = false, tls: TLS = .off) throws {
        self.durable = durable
        self.tls = tls
        guard let binaries = Self.binaries() else {
            throw Unavailable(description: "no PostgreSQL binaries (apt-get install postgresql, or set FLAGSHIP_POSTGRES_BIN)")
        }
        self.binaries = binaries
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        let data = directory.appendingPathComponent("data").path
        let passwordFile = directory.appendingPathComponent("pwfile")
        try Data(password.utf8).write(to: passwordFile)
        if tls != .off {
            let key = directory.appendingPathComponent("server.key").path
            try Self.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                                              "-out", directory.appendingPathComponent("server.crt").path, "-days", "2",
                                              "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
            // PostgreSQL refuses a key others may read.
            chmod(key, 0o600)
        }
        if getuid() == 0 {
            try Self.run("/bin/chown", ["-R", "postgres:postgres", directory.path])
        }
        try runAsOwner("initdb", ["-D", data, "-U", username, "--pwfile", passwordFile.path, "--auth=scram-sha-256",
                                  "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        if tls == .required {
            let hba = directory.appendingPathComponent("data/pg_hba.conf")
            let lines = try String(contentsOf: hba, encoding: .utf8).components(separatedBy: "\n")
            let onlyTLS = lines.map { $0.hasPrefix("host ") ? "hostssl " + $0.dropFirst(5) : $0 }
            // In place: the file keeps its owner.
            try onlyTLS.joined(separator: "\n").write(to: hba, atomically: false, encoding: .utf8)
        }
        try runAsOwner("pg_ctl", ["-D", data, "-l", directory.appendingPathComponent("server.log").path,
                                  "-o", serverOptions, "-w", "-t", "30", "start"])
        try watchOver(data: data)
    }

    /// A watchdog in a session of its own (`setsid --fork`: Ctrl-C and the terminal's signals do
    /// not reach it), which stops the server and removes its files once this process is gone,
    /// however it ended: `atexit` does not run after SIGINT or SIGKILL, and pg_ctl's server
    /// outlives the process that started it, with its data folder (179 MB after a `make test`).
    private func watchOver(data: String) throws {
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let pgCtl = binaries.appendingPathComponent("pg_ctl").path
        let stop = (getuid() == 0 ? "/usr/sbin/runuser -u postgres -- /usr/bin/env -C / " : "") + quoted(pgCtl)
            + " -D \(quoted(data)) -m immediate -w stop"
        let script = """
            trap '' INT TERM HUP
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            \(stop) >/dev/null 2>&1
            rm -rf \(quoted(directory.path))
            """
        try Self.run("/usr/bin/setsid", ["--fork", "/bin/sh", "-c", script])
    }

    private var serverOptions: String {
        let extra = ProcessInfo.processInfo.environment["FLAGSHIP_POSTGRES_OPTIONS"].map { " " + $0 } ?? ""
        let tlsOptions = tls == .off ? "" : " -c ssl=on -c ssl_cert_file=\(directory.path)/server.crt -c ssl_key_file=\(directory.path)/server.key"
        return "-p \(port) -k \(directory.path) -c listen_addresses=\(host) -c max_connections=200" + (durable ? "" : " -c fsync=off") + tlsOptions + extra
    }

    /// A new, empty database, owned by the superuser.
    public func createDatabase(_ prefix: String = "test") throws -> String {
        let name = lock.withLock { () -> String in
            databaseCount += 1
            return "\(prefix)_\(databaseCount)"
        }
        try psql("postgres", "CREATE DATABASE \(name)")
        return name
    }

    /// The URL of `database` for the superuser, without the password (given as `PGPASSWORD`).
    public func url(_ database: String) -> String {
        "postgres://\(username)@\(host):\(port)/\(database)"
    }

    /// Runs SQL through `psql` as the superuser (set-up a test cannot do through the SDK).
    @discardableResult
    public func psql(_ database: String, _ sql: String) throws -> String {
        try runAsOwner("psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", "\(port)",
                                "-U", username, "-d", database, "-c", sql],
                       environment: ["PGPASSWORD": password])
    }

    /// Stops the server at once (SIGQUIT) and removes its files. Safe to call twice.
    public func stop() {
        let wasRunning = lock.withLock { () -> Bool in
            defer { running = false }
            return running
        }
        guard wasRunning else { return }
        _ = try? runAsOwner("pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops it as a crash would, keeping its files: `start()` brings it back on the same port.
    public func kill() throws {
        try runAsOwner("pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
    }

    public func start() throws {
        try runAsOwner("pg_ctl", ["-D", directory.appendingPathComponent("data").path,
                                  "-l", directory.appendingPathComponent("server.log").path,
                                  "-o", serverOptions, "-w", "-t", "30", "start"])
    }

    deinit {
        stop()
    }

    @discardableResult
    private func runAsOwner(_ tool: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let path = binaries.appendingPathComponent(tool).path
        if getuid() == 0 {
            let env = environment.map { "\($0.key)=\($0.value)" }
            // From a directory the postgres user may enter (`env -C /`): it cannot read root's.
            return try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", "/usr/bin/env", "-C", "/"] + env + [path] + arguments)
        }
        return try Self.run(path, arguments, environment: environment)
    }

    /// Runs a program to its end (posix_spawn and waitpid: Foundation's `Process` can wait forever
    /// for a child that started a daemon, as `pg_ctl start` does); its output goes to a file, not a
    /// pipe, since the daemon would hold a pipe open.
    @discardableResult
    private static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let outputFile = FileManager.default.temporaryDirectory.appendingPathComponent("flagship-pg-output-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: outputFile) }
        let pid = try spawn(executable, arguments, environment: environment, output: outputFile.path)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = ((try? String(contentsOf: outputFile, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        // Exited normally (the low 7 bits clear) with status 0.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw Unavailable(description: "\(URL(fileURLWithPath: executable).lastPathComponent) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text
    }

    /// Starts `executable` with `arguments` (`environment` added to this process's), its input
    /// from /dev/null, its output and errors to `output` (a file, created); returns at once.
    /// Foundation's `Process` is not used: on Linux it may wait for ever for a child killed by a
    /// signal.
    public static func spawn(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                             output: String = "/dev/null") throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw Unavailable(description: "cannot run \(executable): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    /// A port nobody listens on now: bound to port 0, read back, released.
    private static func freePort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Unavailable(description: "no socket for a free port") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0 else { throw Unavailable(description: "cannot bind a port on 127.0.0.1") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0 else { throw Unavailable(description: "cannot read the bound port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
