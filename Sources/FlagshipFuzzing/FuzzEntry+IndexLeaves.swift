import FlagshipStore
import Foundation

// MARK: - A store file's B-trees, walked from their interior pages

extension FuzzEntry {
    /// The most roots walked in one input: its first pages, whatever each holds.
    private static let rootsWalked = 64

    /// The input is a database file (its 100-byte header says the page size, at offset 16). The
    /// B-tree whose root is each of its first pages is walked as a prune's read ahead walks the
    /// indexes it names: a walk may end with nothing, but never crashes, names only pages of the
    /// file, at most as many as it has, in order, and gives the same answer twice; the reads it
    /// plans cover those pages exactly. Accepted when the walk from the schema's root (page 1)
    /// found leaves: every seed is a real SQLite file.
    static func indexLeaves(_ input: Data) throws(Violation) -> Outcome {
        let bytes = [UInt8](input)
        guard bytes.count >= 100, bytes.starts(with: Array("SQLite format 3\u{0}".utf8)) else { return .refused }
        let declared = Int(bytes[16]) << 8 | Int(bytes[17])
        let pageSize = declared == 1 ? 65_536 : declared
        guard pageSize >= 512, pageSize & (pageSize - 1) == 0, bytes.count >= pageSize else { return .refused }
        let pageCount = bytes.count / pageSize
        let page = { (number: Int) -> [UInt8]? in
            guard (1...pageCount).contains(number) else { return nil }
            return Array(bytes[(number - 1) * pageSize ..< number * pageSize])
        }
        var schemaLeaves: [Int]?
        for root in 1...min(pageCount, rootsWalked) {
            let leaves = IndexLeaves.leaves(root: root, pageCount: pageCount, pageSize: pageSize, page: page)
            try check(leaves == IndexLeaves.leaves(root: root, pageCount: pageCount, pageSize: pageSize, page: page),
                      "two walks from page \(root) differ")
            if root == 1 { schemaLeaves = leaves }
            guard let leaves else { continue }
            try checkLeaves(leaves, root: root, pageCount: pageCount, rootPage: page(root) ?? [])
        }
        return schemaLeaves?.isEmpty == false ? .accepted : .refused
    }

    private static func checkLeaves(_ leaves: [Int], root: Int, pageCount: Int, rootPage: [UInt8]) throws(Violation) {
        try check(!leaves.isEmpty, "a walk from page \(root) found no leaf, yet did not end with nothing")
        try check(leaves.count <= pageCount, "\(leaves.count) leaves from page \(root) in a file of \(pageCount) pages")
        try check(leaves.allSatisfy { (1...pageCount).contains($0) }, "a leaf from page \(root) is not a page of the file")
        try check(leaves == leaves.sorted(), "the leaves from page \(root) are not in file order")
        if let kind = IndexLeaves.kind(of: rootPage, number: root), IndexLeaves.isLeaf(kind) {
            try check(leaves == [root], "page \(root) is a leaf, yet the walk found \(leaves)")
        }
        for longest in [1, 3, 64] {
            let runs = IndexLeaves.runs(leaves, longest: longest)
            try check(runs.allSatisfy { $0.count >= 1 && $0.count <= longest }, "a read of more than \(longest) pages, or of none")
            try check(runs.flatMap { run in (0..<run.count).map { run.first + $0 } } == leaves,
                      "the reads planned (\(longest) pages at most) are not the leaves from page \(root)")
        }
    }
}
