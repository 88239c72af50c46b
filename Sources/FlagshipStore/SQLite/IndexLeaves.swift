/// The leaf pages of a B-tree of the file, found from its interior pages as the file holds them.
///
/// A prune of many visitors of a big store read cold spends a quarter of its time reading, one
/// 4 KB page at a time on its own thread between its writes, the leaves of the two indexes keyed
/// by visitor id, at random places (`PruneReadAhead`). Knowing which pages those are lets them
/// be read first, in file order, on other threads. SQLite has no call that names a B-tree's
/// pages, so they are read from the file format itself (a page's first byte says its kind; an
/// interior page lists its children), from the interior pages only, a hundredth of the tree.
///
/// The answer is a hint, never trusted: the pages are read from the file, not from the WAL (a
/// page rewritten since the last checkpoint is read as it was), and anything that does not read
/// as a B-tree page should (a kind, a count or a child out of bounds) ends the walk with `nil`.
/// Nothing here writes, and the pages found are only read. The fuzz target `FuzzIndexLeaves`
/// walks mutated files.
package enum IndexLeaves {
    /// The first header byte of each kind of B-tree page.
    static let interiorIndex: UInt8 = 2
    static let interiorTable: UInt8 = 5
    static let leafIndex: UInt8 = 10
    static let leafTable: UInt8 = 13

    /// The leaf pages of the B-tree whose root is page `root`, in file order: `[root]` when the
    /// root is a leaf itself; `nil` when a page does not read as a B-tree page or the walk would
    /// pass `maximumDepth` levels or read more pages than the file has.
    /// - Parameter page: the bytes of a page (numbered from 1), `pageSize` of them, or `nil`.
    package static func leaves(root: Int, pageCount: Int, pageSize: Int, maximumDepth: Int = 20,
                               page: (Int) -> [UInt8]?) -> [Int]? {
        guard pageCount > 0, (1...pageCount).contains(root), let rootPage = page(root),
              let rootKind = kind(of: rootPage, number: root) else { return nil }
        if isLeaf(rootKind) { return [root] }
        var level = [root]
        var read = 1
        for _ in 0..<maximumDepth {
            var below: [Int] = []
            for number in level {
                let bytes: [UInt8]?
                if number == root { bytes = rootPage } else { bytes = page(number); read += 1 }
                guard let bytes, let children = children(of: bytes, number: number, pageSize: pageSize, pageCount: pageCount)
                else { return nil }
                below += children
            }
            // A B-tree is balanced: the kind of the first page below is the kind of them all.
            guard let first = below.first, let firstPage = page(first),
                  let firstKind = kind(of: firstPage, number: first) else { return nil }
            read += 1
            if isLeaf(firstKind) { return below.sorted() }
            guard read + below.count <= pageCount else { return nil }
            level = below
        }
        return nil
    }

    /// The kind of B-tree page `bytes` is (its first header byte), or `nil` for any other byte.
    package static func kind(of bytes: [UInt8], number: Int) -> UInt8? {
        let header = headerOffset(number)
        guard bytes.count > header else { return nil }
        let kind = bytes[header]
        return [interiorIndex, interiorTable, leafIndex, leafTable].contains(kind) ? kind : nil
    }

    package static func isLeaf(_ kind: UInt8) -> Bool { kind == leafIndex || kind == leafTable }

    /// The pages an interior page points to, left to right, its right-most pointer last; `nil`
    /// when it is not an interior page or a count, an offset or a page number is out of bounds.
    static func children(of bytes: [UInt8], number: Int, pageSize: Int, pageCount: Int) -> [Int]? {
        let header = headerOffset(number)
        guard bytes.count >= pageSize, pageSize >= 512, header + 12 <= pageSize,
              bytes[header] == interiorIndex || bytes[header] == interiorTable else { return nil }
        let cells = Int(bigEndian16(bytes, header + 3))
        let pointers = header + 12
        guard cells > 0, pointers + 2 * cells <= pageSize else { return nil }
        var children: [Int] = []
        children.reserveCapacity(cells + 1)
        for cell in 0..<cells {
            let offset = Int(bigEndian16(bytes, pointers + 2 * cell))
            guard offset >= pointers + 2 * cells, offset + 4 <= pageSize else { return nil }
            children.append(Int(bigEndian32(bytes, offset)))
        }
        children.append(Int(bigEndian32(bytes, header + 8)))
        // Page 1 is the schema's root, never a child.
        guard children.allSatisfy({ (2...max(2, pageCount)).contains($0) }) else { return nil }
        return children
    }

    /// Page 1 starts with the file's 100-byte header; every other page with its own.
    private static func headerOffset(_ number: Int) -> Int { number == 1 ? 100 : 0 }

    private static func bigEndian16(_ bytes: [UInt8], _ at: Int) -> UInt16 {
        UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    private static func bigEndian32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    /// The runs of consecutive page numbers in `pages` (sorted), each at most `longest` long, as
    /// (first page, count): what one read each takes.
    package static func runs(_ pages: [Int], longest: Int) -> [(first: Int, count: Int)] {
        var runs: [(first: Int, count: Int)] = []
        for page in pages {
            if let last = runs.last, last.first + last.count == page, last.count < longest {
                runs[runs.count - 1].count += 1
            } else {
                runs.append((page, 1))
            }
        }
        return runs
    }
}
