/// Holds what a benchmark's setup made for its teardown.
public final class Box<Value> {
    public var value: Value?

    public init() {}
}
