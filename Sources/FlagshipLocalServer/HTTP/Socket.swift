#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX socket calls the server makes, with the platform differences kept here.
///
/// Every descriptor is non-blocking (one thread polls them all) and close-on-exec (a test that
/// spawns a process must not hand it the server's sockets).
enum Socket {
    /// A TCP socket listening on 127.0.0.1:`port` (`0`: a port the system picks), and its port.
    static func makeListener(port: UInt16) throws -> (descriptor: Int32, port: UInt16) {
        let descriptor = makeSocket()
        guard descriptor >= 0 else { throw LocalServerError.socket(call: "socket", errno: errno) }
        do {
            // A restarted server can take its port back while the old connections sit in TIME_WAIT.
            try setOption(descriptor, SOL_SOCKET, SO_REUSEADDR, 1, call: "setsockopt(SO_REUSEADDR)")
            var address = loopbackAddress(port: port)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw LocalServerError.portUnavailable(port: port, errno: errno) }
            guard listen(descriptor, 128) == 0 else { throw LocalServerError.socket(call: "listen", errno: errno) }
            var boundAddress = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &boundAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0 else { throw LocalServerError.socket(call: "getsockname", errno: errno) }
            return (descriptor, UInt16(bigEndian: boundAddress.sin_port))
        } catch {
            _ = close(descriptor)
            throw error
        }
    }

    /// The next pending connection on `listener`, ready for small request/response exchanges:
    /// TCP_NODELAY, so an answer leaves at once instead of waiting for the client's delayed ACK.
    /// `nil` when none is pending (or it vanished before being accepted).
    static func acceptConnection(_ listener: Int32) -> Int32? {
        let descriptor = accept(listener, nil, nil)
        guard descriptor >= 0 else { return nil }
        configureDescriptor(descriptor)
        #if canImport(Darwin)
        try? setOption(descriptor, SOL_SOCKET, SO_NOSIGPIPE, 1, call: "setsockopt(SO_NOSIGPIPE)")
        #endif
        try? setOption(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, 1, call: "setsockopt(TCP_NODELAY)")
        return descriptor
    }

    /// A pipe whose write end wakes the polling thread.
    static func makeWakePipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw LocalServerError.socket(call: "pipe", errno: errno) }
        configureDescriptor(ends[0])
        configureDescriptor(ends[1])
        return (ends[0], ends[1])
    }

    /// Bytes sent, or `nil` when the socket cannot take more now; throws the errno of a broken one.
    static func sendBytes(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) throws -> Int? {
        #if os(Linux)
        let flags = Int32(MSG_NOSIGNAL)
        #else
        let flags: Int32 = 0
        #endif
        let sent = send(descriptor, bytes.baseAddress, bytes.count, flags)
        if sent >= 0 { return sent }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return nil }
        throw SocketFailure(errno: code)
    }

    /// Bytes read into `buffer`, `0` at the end of the stream, `nil` when nothing is there now.
    static func receiveBytes(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        let received = recv(descriptor, buffer.baseAddress, buffer.count, 0)
        if received >= 0 { return received }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return nil }
        throw SocketFailure(errno: code)
    }

    static func closeDescriptor(_ descriptor: Int32) {
        _ = close(descriptor)
    }

    private static func makeSocket() -> Int32 {
        #if os(Linux)
        return socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        if descriptor >= 0 { configureDescriptor(descriptor) }
        return descriptor
        #endif
    }

    private static func loopbackAddress(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private static func setOption(
        _ descriptor: Int32, _ level: Int32, _ name: Int32, _ value: Int32, call: String
    ) throws {
        var value = value
        guard setsockopt(descriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw LocalServerError.socket(call: call, errno: errno)
        }
    }

    private static func configureDescriptor(_ descriptor: Int32) {
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
    }
}

/// A socket call that failed for good: the connection is closed.
struct SocketFailure: Error {
    let errno: Int32
}
