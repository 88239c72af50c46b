import FlagshipStore
import Foundation
import Logging

/// A download of the bucketing file: a new one parsed, stored, then used; a failure logged, the current file kept.
extension BucketingPoller {
    /// One download: a new file is parsed, stored, then used; anything else keeps the current one.
    func poll() async {
        var request = FSHTTPRequest(method: .get, url: url, headers: [
            "Accept": "application/json",
            "x-sdk-client": SDKInfo.clientName,
            "x-sdk-version": SDKInfo.version,
        ], timeout: timeout)
        if let lastModified = state.withLock({ $0.lastModified }) {
            request.headers["If-Modified-Since"] = lastModified
        }
        let response: FSHTTPResponse
        do {
            response = try await transport.send(request)
        } catch {
            if error != .cancelled { downloadFailed(String(describing: error)) }
            return
        }
        switch response.status {
        case 304:
            downloaded()
            logger.debug("Bucketing file not modified since \(request.headers["If-Modified-Since"] ?? "")")
        case 200:
            downloaded()
            await accept(response)
        default:
            downloadFailed("HTTP status \(response.status)")
        }
    }

    /// One warning when downloads start failing; each further failure is a debug line.
    func downloadFailed(_ reason: String) {
        let note = keptFileNote
        outage.failed(
            started: { _ in "Bucketing file not downloaded (\(reason)); \(note). Tried again every \(Int(interval)) s; said again once downloaded" },
            retrying: { failures in "Bucketing file not downloaded (\(reason)); \(note) (failure \(failures) in a row)" })
    }

    func downloaded() {
        outage.succeeded { failures, seconds in
            "Bucketing file downloaded again, after \(failures) failed attempt(s) over \(seconds) s"
        }
    }

    var keptFileNote: String {
        file == nil ? "no file yet, flags cannot be decided" : "the current file is kept"
    }

    /// Serves a new file at once, then stores it, as store work the poll waits for: the local
    /// write on the store's own queue (a busy timeout of seconds when another process holds the
    /// lock), the fleet's awaited, never on a thread of Swift's pool.
    func accept(_ response: FSHTTPResponse) async {
        let parsed: ParsedBucketingFile
        let file: BucketingFile
        do {
            (parsed, file) = try await Self.parse(response.body, maximumBytes: maximumBytes)
        } catch {
            logger.error("The downloaded bucketing file is unusable (\(error)); \(keptFileNote)")
            return
        }
        for warning in file.warnings {
            logger.warning("Bucketing file: \(warning)")
        }
        let lastModified = response.headers["last-modified"]
        let downloadedAt = clock.now().unixMilliseconds
        let campaigns = BucketingFileCampaigns(parsed: parsed, file: file)
        guard !state.withLock({ $0.closed }) else { return }
        // The status first: a fetch that finds the file finds the SDK initialized (one that
        // finds no file yet waits for the end of this attempt).
        onFile(file)
        let changed = state.withLock { state -> (Bool, BucketingFileCampaigns?) in
            guard !state.closed else { return (false, nil) }
            defer { state.campaigns = campaigns }
            state.file = file
            state.lastModified = lastModified
            state.downloadedAt = downloadedAt
            state.bootstrapped = false
            return (true, state.campaigns)
        }
        guard changed.0 else { return }
        tellChange(from: changed.1, to: campaigns)
        logger.info("New bucketing file: \(file.campaignCount) campaign(s)\(file.panic ? ", panic" : "")")
        guard store != nil || shared != nil else { return }
        let record = BucketingRecord(envId: envId, document: String(decoding: response.body, as: UTF8.self),
                                     lastModified: lastModified, downloadedAt: downloadedAt)
        let (store, shared, logger) = (store, shared, logger)
        let version = versionToKeep(of: file, document: record.document, origin: .download)
        await runStoreWork {
            // Stored with its compiled form, from which the next start decides without the JSON:
            // compiled on Swift's global executor, written on the store's queue.
            if let store {
                var compiled = record
                compiled.compiled = await Self.compile(file, digests: campaigns.digests)
                _ = try? await store.queued { [compiled] store in
                    Self.storeLocally(compiled, version: version, in: store, logger: logger,
                                      failure: "The new bucketing file could not be stored")
                }
            }
            do {
                try await shared?.save(record)
                if let version { try await shared?.keep(version.file, keeping: version.keeping) }
            } catch {
                logger.warning("The new bucketing file could not be shared with the fleet (\(error)): the other instances download it themselves")
            }
        }
    }
}
