import { gzipSync } from 'node:zlib';
import type { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { type Batch, batchSchema, SYNC_API, type SyncRecord } from '../../../sync/protocol.js';
import { signSiteRequest } from '../../../sync/signing.js';

/** POSTs `batch` as site `siteId` would (gzip'd JSON, signed now by `site`) to the upstream at `baseUrl`. */
export async function postSignedBatch(
  baseUrl: string,
  site: LocalIssuer,
  batch: unknown,
  siteId = 'north',
): Promise<Response> {
  const body = new Uint8Array(gzipSync(Buffer.from(JSON.stringify(batch))));
  const path = `${SYNC_API}/batches`;
  const token = await signSiteRequest(site, { siteId, method: 'POST', path, body, nowMs: Date.now() });
  return fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-encoding': 'gzip',
      'content-type': 'application/json',
    },
    body,
  });
}

/** A record as a test writes it into a batch: its kind and body, and when it was made where that matters. */
export interface BatchEntry {
  kind: SyncRecord['kind'];
  body: unknown;
  at?: number;
}

/**
 * Site `siteId`'s batch of `entries` numbered from `firstSeq` and sent at `sentAt`: entry i made
 * at its own `at`, else at `sentAt + i`; the `dropped` sequence numbers after the last record are
 * reported as dropped.
 */
export function numberedBatch(
  siteId: string,
  firstSeq: number,
  entries: readonly BatchEntry[],
  sentAt: number,
  dropped = 0,
): Batch {
  const lastRecord = firstSeq + entries.length - 1;
  return {
    protocol: 1,
    site_id: siteId,
    first_seq: firstSeq,
    last_seq: lastRecord + dropped,
    records: entries.map(
      (e, i) => ({ seq: firstSeq + i, at: e.at ?? sentAt + i, kind: e.kind, body: e.body }) as SyncRecord,
    ),
    dropped: dropped > 0 ? [[lastRecord + 1, lastRecord + dropped]] : [],
    sent_at: sentAt,
  };
}

/**
 * Builds batches each of which follows the last one of its site: `make` numbers its records with
 * `seq()`. `nextSeq` holds each site's next sequence number.
 */
export function batchSequence() {
  const nextSeq = new Map<string, number>();
  const batchOf = (siteId: string, make: (seq: () => number) => SyncRecord[]): Batch => {
    const first = nextSeq.get(siteId) ?? 1;
    let seq = first;
    const records = make(() => seq++);
    nextSeq.set(siteId, seq);
    return batchSchema.parse({
      protocol: 1,
      site_id: siteId,
      first_seq: first,
      last_seq: seq - 1,
      records,
      dropped: [],
      sent_at: Date.now(),
    });
  };
  return { batchOf, nextSeq };
}
