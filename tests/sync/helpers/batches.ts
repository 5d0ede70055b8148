import { gzipSync } from 'node:zlib';
import type { LocalIssuer } from '../../../src/auth/local-issuer.js';
import { SYNC_API } from '../../../sync/protocol.js';
import { signSiteRequest } from '../../../sync/signing.js';

/** POSTs `batch` as site north would (gzip'd JSON, signed now by `site`) to the upstream at `baseUrl`. */
export async function postBatchAsNorth(
  baseUrl: string,
  site: LocalIssuer,
  batch: unknown,
): Promise<Response> {
  const body = new Uint8Array(gzipSync(Buffer.from(JSON.stringify(batch))));
  const path = `${SYNC_API}/batches`;
  const token = await signSiteRequest(site, {
    siteId: 'north',
    method: 'POST',
    path,
    body,
    nowMs: Date.now(),
  });
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
