/**
 * Microsoft Graph sources: `GET /v1.0/auditLogs/directoryAudits` and
 * `GET /v1.0/deviceManagement/auditEvents`, filtered with `$filter=activityDateTime ge {from}`
 * and paged with `@odata.nextLink` until a page has none.
 *
 * Late events lose nothing: `from` is the previous run's start less the overlap (AUDIT_OVERLAP),
 * so an event that shows up in the API up to that long after it happened is still seen; what
 * the overlap fetches again is dropped by the dedupe key. The watermark moves only when a run
 * has read every page; a run that ends early is repeated from the same point.
 */
import { apiUrl, UpstreamError } from '../microsoft/upstream.js';
import { GRAPH_COLLECTIONS, type GraphSourceName } from '../sources.js';
import { countMalformed, getCounted, ingest, type SourceRun, windowStart } from './source-run.js';

/** A run reads at most this many pages; a loop of links ends the run instead of spinning. */
const MAX_PAGES = 100_000;

export async function fetchGraphSource(run: SourceRun & { source: GraphSourceName }): Promise<void> {
  const from = windowStart(run);
  let url = apiUrl(run.config.graphBaseUrl, GRAPH_COLLECTIONS[run.source], {
    $filter: `activityDateTime ge ${new Date(from).toISOString()}`,
  });
  const seen = new Set<string>();
  for (let pages = 0; ; pages++) {
    if (pages >= MAX_PAGES || seen.has(url.href)) {
      throw new UpstreamError('malformed_response', 'the upstream kept handing out the same page');
    }
    seen.add(url.href);
    const { body } = await getCounted(run, url);
    const page = body as { value?: unknown; '@odata.nextLink'?: unknown } | undefined;
    if (!page || typeof page !== 'object' || !Array.isArray(page.value)) {
      countMalformed(run);
      throw new UpstreamError('malformed_response', `${url.pathname} answered without a "value" list`);
    }
    await ingest(run, page.value);
    const next = page['@odata.nextLink'];
    if (next === undefined || next === null) break;
    url = run.client.follow(next);
  }
  run.states().setWatermark(run.source, run.startedAt);
}
