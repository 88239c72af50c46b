import FlagshipStore
import Foundation
import Logging

/// The bucketing file of the store as a start reads it: from its compiled form
/// (`CompiledBucketingFile`), so no JSON is parsed and no digest of the file's bytes computed, each
/// variation's flags read when first needed. A store without that form (written by an older SDK,
/// or its JSON edited by hand) or with one this SDK cannot read gives the JSON, parsed as a
/// download is: the caller writes the form again for the next start (`recompile`).
struct StoredBucketingFile {
    let file: BucketingFile
    let campaigns: BucketingFileCampaigns
    let lastModified: String?
    let downloadedAt: Int64
    /// Set when the file was read from its JSON: the JSON (the version kept needs it) and the
    /// download its compiled form is written for.
    let recompile: (document: String, downloadedAt: Int64)?

    /// `nil` when there is none, or none this SDK can use (logged, as the caller would).
    static func read(from store: FlagshipDatabase, envId: String, maximumBytes: Int, logger: Logger) -> StoredBucketingFile? {
        let stored: CompiledBucketingRecord?
        do {
            stored = try store.read { try $0.bucketing.compiledFile(envId: envId) }
        } catch {
            logger.error("The stored bucketing file could not be read: \(error)")
            return nil
        }
        guard let stored else {
            logger.info("No bucketing file stored yet: waiting for the first download")
            return nil
        }
        guard stored.documentBytes <= maximumBytes else {
            let error = BucketingFileError(reason: BucketingFile.tooLarge("the document", size: "\(stored.documentBytes) bytes", limit: maximumBytes))
            logger.error("The stored bucketing file is unusable (\(error)); waiting for a new download")
            return nil
        }
        if let compiled = stored.compiled {
            do {
                let (file, campaigns) = try CompiledBucketingFile.decode(compiled)
                return StoredBucketingFile(file: file, campaigns: campaigns, lastModified: stored.lastModified,
                                           downloadedAt: stored.downloadedAt, recompile: nil)
            } catch where error.olderFormat {
                logger.info("The stored bucketing file was compiled by an older SDK (\(error)): its JSON is read instead, and compiled again")
            } catch {
                logger.warning("The stored bucketing file's compiled form is unusable (\(error)): its JSON is read instead, and compiled again")
            }
        }
        do {
            // Read again: another process may have stored a download since; its times go with its JSON.
            guard let record = try store.read({ try $0.bucketing.file(envId: envId) }) else { return nil }
            let (parsed, file) = try BucketingFile.readKeepingTree(json: Data(record.document.utf8), maximumBytes: maximumBytes)
            return StoredBucketingFile(file: file, campaigns: BucketingFileCampaigns(parsed: parsed, file: file),
                                       lastModified: record.lastModified, downloadedAt: record.downloadedAt,
                                       recompile: (record.document, record.downloadedAt))
        } catch {
            logger.error("The stored bucketing file is unusable (\(error)); waiting for a new download")
            return nil
        }
    }

    /// Keeps `file` by version (decision provenance) in the store and the fleet's, used at `now`,
    /// with the newest `keeping`. `document` `nil`: the file came from the store's compiled form,
    /// without its JSON, which is read only when the version must be written with it (not kept
    /// yet, or for the fleet), and only if it is still that version. The store's part runs on its
    /// own queue, the fleet's is awaited.
    static func keepVersion(of file: BucketingFile, document: String?, origin: BucketingFileVersion.Origin, envId: String,
                            at now: Int64, keeping: Int, store: FlagshipDatabase?, shared: (any SharedBucketingFiles)?) async throws {
        let fileVersion = file.version
        let version: @Sendable (String) -> BucketingFileVersion = { document in
            BucketingFileVersion(version: fileVersion, envId: envId, document: document, origin: origin, firstUsedAt: now, lastUsedAt: now)
        }
        var text = document
        if let store {
            let forFleet = shared != nil
            text = try await store.queued { store -> String? in
                /// The stored JSON, if it is still the file's version.
                func storedDocument() throws -> String? {
                    guard let text = try store.read({ try $0.bucketing.file(envId: envId)?.document }),
                          SHA256.hex(of: text.utf8) == fileVersion else { return nil }
                    return text
                }
                if store.opening.readOnly == nil {
                    let marked = try document == nil && store.write {
                        try $0.bucketingFiles.markUsed(version: fileVersion, envId: envId, at: now, keeping: keeping)
                    }
                    if !marked, let text = try document ?? storedDocument() {
                        try store.write { try $0.bucketingFiles.use(version(text), keeping: keeping) }
                        return text
                    }
                }
                return forFleet ? try document ?? storedDocument() : document
            }
        }
        if let shared, let text {
            try await shared.keep(version(text), keeping: keeping)
        }
    }

    /// Writes the compiled form of a stored file read from its JSON, for the next start, if the
    /// file is still the download of `downloadedAt`. Synchronous: on the store's own queue.
    static func writeCompiled(_ compiled: [UInt8], envId: String, downloadedAt: Int64,
                              to store: FlagshipDatabase, logger: Logger) {
        do {
            try store.write { try $0.bucketing.saveCompiled(compiled, envId: envId, downloadedAt: downloadedAt) }
        } catch {
            logger.warning("The stored bucketing file could not be compiled for the next start (\(error)): it reads the JSON again")
        }
    }
}
