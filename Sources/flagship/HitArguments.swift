import ArgumentParser
import Flagship

/// The hit `flagship send-hit` sends: one kind, chosen by its option, with the options of that kind.
struct HitArguments: ParsableArguments {
    @Option(help: ArgumentHelp("An event hit with this action (ea).", valueName: "action"))
    var event: String?
    @Option(help: ArgumentHelp("The event's category (ec): action, Action Tracking (the default), or engagement, User Engagement.",
                               valueName: "category"))
    var category: EventCategory?
    @Option(help: ArgumentHelp("The event's label (el).", valueName: "label")) var label: String?
    @Option(help: ArgumentHelp("The event's value (ev), a whole number, not negative.", valueName: "n")) var value: Int?

    @Option(help: ArgumentHelp("A screen view hit of this screen (dl).", valueName: "location")) var screen: String?
    @Option(help: ArgumentHelp("A page view hit of this absolute URL (dl).", valueName: "url")) var page: String?

    @Option(help: ArgumentHelp(
        "A transaction hit with this id (tid), with --affiliation; with --item, the item's transaction.",
        valueName: "id"))
    var transaction: String?
    @Option(help: ArgumentHelp("The transaction's name (ta).", valueName: "name")) var affiliation: String?
    @Option(help: ArgumentHelp("The transaction's total revenue (tr).", valueName: "amount")) var revenue: Float?
    @Option(help: ArgumentHelp("The transaction's currency (tc), e.g. EUR.", valueName: "code")) var currency: String?

    @Option(help: ArgumentHelp(
        "An item hit of this product name (in): --item NAME --code CODE --transaction ID.", valueName: "name"))
    var item: String?
    @Option(help: ArgumentHelp("The item's product code or SKU (ic).", valueName: "code")) var code: String?
    @Option(help: ArgumentHelp("The item's unit price (ip).", valueName: "amount")) var price: Float?
    @Option(help: ArgumentHelp("The item's quantity (iq).", valueName: "n")) var quantity: Int?

    enum EventCategory: String, ExpressibleByArgument, CaseIterable {
        case action, engagement
    }

    /// The hit kinds, as their options name them.
    private enum Kind: String {
        case event = "--event", screen = "--screen", page = "--page", transaction = "--transaction", item = "--item"
    }

    /// `--item` makes `--transaction` the item's transaction; otherwise `--transaction` is a hit of its own.
    private var kinds: [Kind] {
        var kinds: [Kind] = []
        if event != nil { kinds.append(.event) }
        if screen != nil { kinds.append(.screen) }
        if page != nil { kinds.append(.page) }
        if item != nil { kinds.append(.item) } else if transaction != nil { kinds.append(.transaction) }
        return kinds
    }

    func validate() throws {
        let kinds = kinds
        guard let kind = kinds.first else {
            throw ValidationError("choose the hit to send: --event, --screen, --page, --transaction or --item")
        }
        guard kinds.count == 1 else {
            throw ValidationError("choose one hit to send, not \(kinds.map(\.rawValue).joined(separator: " and "))")
        }
        let belonging: [(option: String, isSet: Bool, kind: Kind)] = [
            ("--category", category != nil, .event), ("--label", label != nil, .event), ("--value", value != nil, .event),
            ("--affiliation", affiliation != nil, .transaction), ("--revenue", revenue != nil, .transaction),
            ("--currency", currency != nil, .transaction),
            ("--code", code != nil, .item), ("--price", price != nil, .item), ("--quantity", quantity != nil, .item),
        ]
        for option in belonging where option.isSet && option.kind != kind {
            throw ValidationError("\(option.option) goes with \(option.kind.rawValue), not with \(kind.rawValue)")
        }
        switch kind {
        case .transaction where affiliation == nil:
            throw ValidationError("--transaction needs --affiliation, the transaction's name (or --item for an item of it)")
        case .item where code == nil || transaction == nil:
            throw ValidationError("--item needs --code and --transaction: --item NAME --code CODE --transaction ID")
        default:
            break
        }
        // The SDK's event value is unsigned: a negative one cannot even be handed to it.
        if let value, value < 0 {
            throw ValidationError("--value, the event's value (ev), must not be negative (got \(value))")
        }
    }

    /// The hit to send; `number` (`--durable`) is carried by the hit, so that whoever receives it
    /// can tell which one it is: in its session event number (sen), and in an event's label.
    func hit(number: Int?) -> any FSTrackingProtocol {
        let hit: any FSHitWithCommonFields
        if let event {
            let built = FSEvent(eventCategory: category == .engagement ? .User_Engagement : .Action_Tracking, eventAction: event)
            built.label = number.map { number in label.map { "\($0)-\(number)" } ?? "\(number)" } ?? label
            built.eventValue = value.flatMap { UInt(exactly: $0) }
            hit = built
        } else if let screen {
            hit = FSScreen(screen)
        } else if let page {
            hit = FSPage(page)
        } else if let item, let code, let transaction {
            let built = FSItem(transactionId: transaction, name: item, code: code)
            built.price = price
            built.quantity = quantity
            hit = built
        } else {
            let built = FSTransaction(transactionId: transaction ?? "", affiliation: affiliation ?? "")
            built.revenue = revenue
            built.currency = currency
            hit = built
        }
        if let number { hit.sessionEventNumber = number }
        return hit
    }
}
