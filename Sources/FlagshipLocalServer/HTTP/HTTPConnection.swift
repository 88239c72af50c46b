/// One accepted connection's state. Touched only by the polling thread.
final class HTTPConnection {
    let id: Int
    let descriptor: Int32
    /// Bytes received and not yet taken by a request.
    var input: [UInt8] = []
    /// Bytes to send, from `outputOffset` on.
    var output: [UInt8] = []
    var outputOffset = 0
    /// A request was handed to the server and its reply has not come back.
    var awaitingReply = false
    /// The client asked to keep the connection after the request being answered.
    var keepAlive = true
    /// `100 Continue` was sent for the request being received.
    var sentContinue = false
    /// Close once `output` is sent: no further request is read.
    var closeWhenFlushed = false
    var isClosed = false

    init(id: Int, descriptor: Int32) {
        self.id = id
        self.descriptor = descriptor
    }

    var hasPendingOutput: Bool { outputOffset < output.count }
}
