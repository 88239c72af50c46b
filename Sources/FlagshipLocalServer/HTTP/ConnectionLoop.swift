import Flagship
import FlagshipStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The server's sockets, served by one thread that polls them all.
///
/// One thread per server whatever the number of connections, and none of Swift's cooperative
/// threads blocked in a socket call. A request is handed to `handler` with a callback; the
/// reply may come from any thread, at any later time (a fault's latency is an async wait
/// elsewhere), and is queued here and the thread woken through a pipe.
final class ConnectionLoop: @unchecked Sendable {
    typealias Handler = @Sendable (HTTPRequestMessage, @escaping @Sendable (HTTPReply) -> Void) -> Void

    let port: UInt16

    // Shared with other threads, under the lock.
    private struct Mailbox {
        var replies: [(connection: Int, reply: HTTPReply)] = []
        var stopping = false
        /// The polling thread has left its loop: the pipe is closed or about to be.
        var exited = false
        var thread: pthread_t?
    }
    private let mailbox = Locked(Mailbox())
    private let handler: Handler
    /// The input bytes all connections may hold at once (`Configuration.maximumBufferedBytes`),
    /// and the count of connections refused at that bound.
    private let maximumBufferedBytes: Int
    private let refusals: Locked<Int>
    /// `bufferedBytes` as other threads may read it (`LocalFlagshipServer.bytesHeld`).
    private let held: Locked<Int>
    private let listener: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32

    // Confined to the polling thread.
    private var connections: [Int: HTTPConnection] = [:]
    /// The sum of the connections' `input` counts.
    private var bufferedBytes = 0 {
        didSet { held.withLock { $0 = bufferedBytes } }
    }
    private var nextConnectionID = 0

    /// Listens on 127.0.0.1:`port` (`0`: any free port) and starts the polling thread.
    init(port requestedPort: UInt16, maximumBufferedBytes: Int = 256 * 1024 * 1024, refusals: Locked<Int> = Locked(0),
         held: Locked<Int> = Locked(0), handler: @escaping Handler) throws {
        let (listener, port) = try Socket.makeListener(port: requestedPort)
        let wake: (read: Int32, write: Int32)
        do {
            wake = try Socket.makeWakePipe()
        } catch {
            Socket.closeDescriptor(listener)
            throw error
        }
        self.listener = listener
        self.port = port
        self.wakeRead = wake.read
        self.wakeWrite = wake.write
        self.handler = handler
        self.maximumBufferedBytes = maximumBufferedBytes
        self.refusals = refusals
        self.held = held
        // The thread holds the loop until `run` returns; `stop()` joins it.
        let context = Unmanaged.passRetained(self).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t?
        let created = pthread_create(&thread, nil, { ConnectionLoop.threadMain($0) }, context)
        #else
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { ConnectionLoop.threadMain($0!) }, context)
        #endif
        guard created == 0 else {
            Unmanaged<ConnectionLoop>.fromOpaque(context).release()
            [listener, wake.read, wake.write].forEach(Socket.closeDescriptor)
            throw LocalServerError.socket(call: "pthread_create", errno: created)
        }
        mailbox.withLock { $0.thread = thread }
        // A started server is a running thread, named (what a leak check looks for) before `init`
        // returns: named from here, so nothing waits for the thread to name itself.
        Self.name(thread)
    }

    private static func threadMain(_ context: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer? {
        let loop = Unmanaged<ConnectionLoop>.fromOpaque(context).takeRetainedValue()
        loop.run()
        return nil
    }

    /// Closes every socket and returns once the polling thread has ended. Safe to call twice.
    func stop() {
        let thread = mailbox.withLock { box -> pthread_t? in
            guard !box.stopping else { return nil }
            box.stopping = true
            if !box.exited { wake() }
            defer { box.thread = nil }
            return box.thread
        }
        if let thread { _ = pthread_join(thread, nil) }
    }

    /// Queues `reply` for connection `id`; ignored once stopping (the sockets are gone).
    private func post(_ reply: HTTPReply, to id: Int) {
        mailbox.withLock { box in
            guard !box.stopping, !box.exited else { return }
            box.replies.append((id, reply))
            wake()
        }
    }

    /// Called under the mailbox lock, never once `exited`: the pipe is then closed.
    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func run() {
        var descriptors: [pollfd] = []
        var polled: [HTTPConnection] = []
        while true {
            polled = Array(connections.values)
            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            descriptors.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0))
            for connection in polled {
                var events = Int16(POLLIN)
                if connection.hasPendingOutput { events |= Int16(POLLOUT) }
                descriptors.append(pollfd(fd: connection.descriptor, events: events, revents: 0))
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if descriptors[0].revents != 0 {
                drainWakePipe()
                let (stopping, replies) = mailbox.withLock { box in
                    defer { box.replies.removeAll() }
                    return (box.stopping, box.replies)
                }
                if stopping { break }
                for (id, reply) in replies {
                    if let connection = connections[id] { deliver(reply, on: connection) }
                }
            }
            if descriptors[1].revents != 0 { acceptPending() }
            for (index, connection) in polled.enumerated() where !connection.isClosed {
                let events = descriptors[index + 2].revents
                if events & Int16(POLLOUT) != 0 { flush(connection) }
                if !connection.isClosed && events & Int16(POLLIN | POLLHUP | POLLERR) != 0 { readInput(from: connection) }
            }
        }
        // Also reached when poll fails: nobody may write to the pipe once it is closed.
        mailbox.withLock { $0.exited = true }
        for connection in Array(connections.values) { closeConnection(connection) }
        Socket.closeDescriptor(listener)
        Socket.closeDescriptor(wakeRead)
        Socket.closeDescriptor(wakeWrite)
    }

    /// `flagship-server` in `ps -L`, gdb and /proc, where a leaked thread would be looked for.
    /// Foundation keeps `Thread.name` to itself on Linux; the kernel reads the name (15 bytes
    /// at most) from this file.
    /// Names the polling thread `flagship-server` (Linux: what `/proc/<pid>/task/*/comm` shows).
    /// glibc's `pthread_setname_np` (a GNU extension Swift's Glibc module leaves out), found once.
    #if os(Linux)
    private static let setName: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32)? = dlsym(dlopen(nil, RTLD_NOW), "pthread_setname_np")
        .map { unsafeBitCast($0, to: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32).self) }
    #endif

    private static func name(_ thread: pthread_t?) {
        #if os(Linux)
        if let thread, let setName { _ = setName(thread, "flagship-server") }
        #endif
    }

    private func drainWakePipe() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while bytes.withUnsafeMutableBytes({ read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
    }

    private func acceptPending() {
        while let descriptor = Socket.acceptConnection(listener) {
            nextConnectionID += 1
            connections[nextConnectionID] = HTTPConnection(id: nextConnectionID, descriptor: descriptor)
        }
    }

    private func readInput(from connection: HTTPConnection) {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let received: Int?
            do {
                received = try chunk.withUnsafeMutableBytes { try Socket.receiveBytes(connection.descriptor, into: $0) }
            } catch {
                closeConnection(connection)
                return
            }
            guard let received else { break }
            // The client closed its side: nothing more will come, and nobody waits for an answer.
            guard received > 0 else {
                closeConnection(connection)
                return
            }
            // Its answer is the last (a refusal being sent): what else it sends is read and dropped.
            if connection.closeWhenFlushed { continue }
            // Over the bound for all connections: this one is refused, and what it sent let go.
            guard bufferedBytes + received <= maximumBufferedBytes else {
                refuseOverBufferLimit(connection)
                return
            }
            connection.input.append(contentsOf: chunk[..<received])
            bufferedBytes += received
        }
        takeRequest(from: connection)
    }

    private func refuseOverBufferLimit(_ connection: HTTPConnection) {
        refusals.withLock { $0 += 1 }
        // A reply still owed on this connection would come after the refusal: close instead.
        guard !connection.awaitingReply else { return closeConnection(connection) }
        release(connection)
        let reason = "the server holds \(maximumBufferedBytes) bytes of requests at most, over all connections: try again"
        let response = HTTPResponseMessage(status: 503, headers: [("Content-Type", "application/json"), ("Retry-After", "1")],
                                           body: Data(#"{"message":\#(jsonString(reason))}"#.utf8))
        connection.output.append(contentsOf: response.serialized(closing: true))
        connection.closeWhenFlushed = true
        flush(connection)
    }

    /// The connection's input no longer counts against the bound (taken, refused or closed).
    private func release(_ connection: HTTPConnection) {
        bufferedBytes -= connection.input.count
        connection.input = []
    }

    /// Hands the next complete request to the handler, unless one is being answered: requests
    /// on one connection are answered in order.
    private func takeRequest(from connection: HTTPConnection) {
        guard !connection.awaitingReply, !connection.closeWhenFlushed, !connection.isClosed else { return }
        switch HTTPRequestParser.parse(connection.input) {
        case .incomplete(let expectsContinue):
            if expectsContinue && !connection.sentContinue {
                connection.sentContinue = true
                connection.output.append(contentsOf: Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                flush(connection)
            }
        case .request(let request, let consumed):
            connection.input.removeFirst(consumed)
            bufferedBytes -= consumed
            connection.sentContinue = false
            connection.awaitingReply = true
            connection.keepAlive = request.keepAlive
            let id = connection.id
            handler(request) { [self] reply in post(reply, to: id) }
        case .invalid(let status, let reason):
            release(connection)
            let body = Data(#"{"message":\#(jsonString(reason))}"#.utf8)
            let response = HTTPResponseMessage(status: status, headers: [("Content-Type", "application/json")], body: body)
            connection.output.append(contentsOf: response.serialized(closing: true))
            connection.closeWhenFlushed = true
            flush(connection)
        }
    }

    private func deliver(_ reply: HTTPReply, on connection: HTTPConnection) {
        connection.awaitingReply = false
        switch reply {
        case .respond(let response, let close):
            let closing = close || !connection.keepAlive
            connection.output.append(contentsOf: response.serialized(closing: closing))
            connection.closeWhenFlushed = closing
        case .cutOff(let response):
            connection.output.append(contentsOf: response.serialized(closing: true, bodyPrefix: response.body.count / 2))
            connection.closeWhenFlushed = true
        case .drop:
            closeConnection(connection)
            return
        }
        flush(connection)
        // A pipelined request may already be waiting.
        takeRequest(from: connection)
    }

    /// Sends what the socket takes now; the rest goes when poll says it is writable.
    private func flush(_ connection: HTTPConnection) {
        while connection.hasPendingOutput {
            let sent: Int?
            do {
                sent = try connection.output[connection.outputOffset...].withUnsafeBytes {
                    try Socket.sendBytes(connection.descriptor, $0)
                }
            } catch {
                closeConnection(connection)
                return
            }
            guard let sent else { return }
            connection.outputOffset += sent
        }
        connection.output.removeAll(keepingCapacity: true)
        connection.outputOffset = 0
        if connection.closeWhenFlushed { closeConnection(connection) }
    }

    private func closeConnection(_ connection: HTTPConnection) {
        guard !connection.isClosed else { return }
        release(connection)
        connection.isClosed = true
        connections[connection.id] = nil
        Socket.closeDescriptor(connection.descriptor)
    }
}

/// `text` as a JSON string literal, quotes included.
func jsonString(_ text: String) -> String {
    FSJSONValue.string(text).description
}
