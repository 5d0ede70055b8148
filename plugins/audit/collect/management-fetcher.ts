/**
 * Office 365 Management Activity API sources (Audit.Exchange, Audit.SharePoint, Audit.General).
 *
 * 1. The content type's subscription is started when `subscriptions/list` does not show it
 *    enabled (once per process, and again if listing says AF20022 "no subscription").
 * 2. Content is listed with `startTime`/`endTime` at most 24 hours apart and at most 7 days back
 *    (API reference "List available content"): the window from the watermark (less the overlap)
 *    to now is clamped to the last 7 days and walked 24 hours at a time, following `NextPageUri`.
 *    The listing's time axis is when a blob became available (`contentCreated`), so a blob of
 *    old events that appears late is still inside the next window.
 * 3. Each blob is fetched from its `contentUri`; a blob already fetched is skipped; a blob that
 *    fails is kept as pending and retried by later runs until `contentExpiration`.
 * Every request carries `PublisherIdentifier` (our tenant GUID by default), which gives the
 * tenant its own throttling quota instead of the shared one.
 */
import { apiUrl, UpstreamError } from '../microsoft/upstream.js';
import { parseUpstreamTime } from '../normalize.js';
import { CONTENT_TYPES, type ManagementSourceName } from '../sources.js';
import type { ContentBlob } from '../store/source-state.js';
import { countMalformed, getCounted, ingest, type SourceRun, windowStart } from './source-run.js';

const HOUR = 3_600_000;
const WINDOW_MS = 24 * HOUR;
/** The API refuses a startTime more than 7 days back; keep a margin for the request's own latency. */
const MAX_AGE_MS = 7 * 24 * HOUR - 10 * 60_000;
const MAX_PAGES_PER_WINDOW = 10_000;

/** `YYYY-MM-DDTHH:MM:SS`, UTC, as the API reference lists its accepted formats. */
export function managementTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

export interface ManagementSession {
  /** Content types whose subscription this process has seen enabled. */
  subscribed: Set<string>;
}

function withPublisher(url: URL, run: SourceRun): URL {
  const publisher = run.tenant.publisherId;
  if (publisher && !url.searchParams.has('PublisherIdentifier'))
    url.searchParams.set('PublisherIdentifier', publisher);
  return url;
}

function feedUrl(run: SourceRun, operation: string, query: Record<string, string> = {}): URL {
  const tenant = encodeURIComponent(run.tenant.tenantId);
  return withPublisher(
    apiUrl(run.config.managementBaseUrl, `/api/v1.0/${tenant}/activity/feed/${operation}`, query),
    run,
  );
}

async function ensureSubscription(
  run: SourceRun,
  contentType: string,
  session: ManagementSession,
): Promise<void> {
  if (session.subscribed.has(contentType)) return;
  const { body } = await run.client.get(feedUrl(run, 'subscriptions/list'), run.signal);
  const list = Array.isArray(body) ? body : [];
  const current = list.find(
    (s): s is { status?: unknown } =>
      typeof s === 'object' && s !== null && (s as { contentType?: unknown }).contentType === contentType,
  );
  if (current?.status !== 'enabled') {
    await run.client.post(feedUrl(run, 'subscriptions/start', { contentType }), run.signal);
    run.log.info(
      { tenant: run.tenant.name, source: run.source, contentType },
      'started the Management Activity API subscription',
    );
  }
  session.subscribed.add(contentType);
}

function readBlob(item: unknown, run: SourceRun): ContentBlob | undefined {
  if (!item || typeof item !== 'object') return undefined;
  const i = item as Record<string, unknown>;
  const created = parseUpstreamTime(i.contentCreated, run.now());
  const expiration = typeof i.contentExpiration === 'string' ? Date.parse(i.contentExpiration) : Number.NaN;
  if (
    typeof i.contentId !== 'string' ||
    !i.contentId ||
    typeof i.contentUri !== 'string' ||
    created === undefined
  ) {
    return undefined;
  }
  return {
    contentId: i.contentId,
    contentUri: i.contentUri,
    contentCreated: created,
    contentExpiration: Number.isFinite(expiration) ? expiration : created + 7 * 24 * HOUR,
  };
}

/** Fetches and stores one blob. Returns false when it failed and waits for a retry. */
async function fetchBlob(run: SourceRun, blob: ContentBlob): Promise<boolean> {
  const states = () => run.states();
  try {
    const url = withPublisher(run.client.follow(blob.contentUri), run);
    const { body } = await getCounted(run, url);
    if (!Array.isArray(body)) {
      countMalformed(run);
      throw new UpstreamError(
        'malformed_response',
        `content blob ${blob.contentId.slice(0, 60)} is not a JSON list`,
      );
    }
    await ingest(run, body);
    states().markBlob(run.source, blob, 'done', run.now());
    return true;
  } catch (error) {
    if (!(error instanceof UpstreamError) || error.kind === 'aborted') throw error;
    states().markBlob(run.source, blob, 'pending', run.now(), error.message);
    run.totals.failedBlobs++;
    run.log.warn(
      { tenant: run.tenant.name, source: run.source, kind: error.kind, err: error.message },
      'content blob failed; will retry',
    );
    // Throttled past the retries: every further request would be too; end the run here.
    if (error.kind === 'throttled') throw error;
    return false;
  }
}

async function listWindow(
  run: SourceRun,
  contentType: string,
  start: number,
  end: number,
  session: ManagementSession,
): Promise<ContentBlob[]> {
  let url = feedUrl(run, 'subscriptions/content', {
    contentType,
    startTime: managementTime(start),
    endTime: managementTime(end),
  });
  const blobs: ContentBlob[] = [];
  const seen = new Set<string>();
  for (let pages = 0; ; pages++) {
    if (pages >= MAX_PAGES_PER_WINDOW || seen.has(url.href)) {
      throw new UpstreamError('malformed_response', 'the upstream kept handing out the same content page');
    }
    seen.add(url.href);
    let answer: Awaited<ReturnType<typeof run.client.get>>;
    try {
      answer = await getCounted(run, url);
    } catch (error) {
      // AF20022: no subscription for this content type (stopped by an admin, say): start it again.
      if (
        error instanceof UpstreamError &&
        error.extras.code === 'AF20022' &&
        session.subscribed.delete(contentType)
      ) {
        await ensureSubscription(run, contentType, session);
        answer = await run.client.get(url, run.signal);
      } else throw error;
    }
    if (!Array.isArray(answer.body)) {
      countMalformed(run);
      throw new UpstreamError('malformed_response', 'the content list is not a JSON list');
    }
    for (const item of answer.body) {
      const blob = readBlob(item, run);
      if (blob) blobs.push(blob);
      else countMalformed(run);
    }
    // The reference's own sample shows the header HTML-escaped; accept both spellings.
    const next = answer.headers.get('NextPageUri')?.replaceAll('&amp;', '&');
    if (!next) return blobs;
    url = withPublisher(run.client.follow(next), run);
  }
}

export async function fetchManagementSource(
  run: SourceRun & { source: ManagementSourceName },
  session: ManagementSession,
): Promise<void> {
  const contentType = CONTENT_TYPES[run.source];
  const states = () => run.states();
  await ensureSubscription(run, contentType, session);

  // Blobs that failed on earlier runs first: they expire seven days after they appeared.
  const expired = states().expire(run.source, run.now());
  if (expired) {
    run.totals.expiredBlobs += expired;
    run.log.error(
      { tenant: run.tenant.name, source: run.source, expired },
      'content blobs expired before they could be fetched',
    );
  }
  for (const blob of states().pending(run.source, run.now())) await fetchBlob(run, blob);

  const now = run.startedAt;
  let start = Math.floor(windowStart(run, now - MAX_AGE_MS) / 1000) * 1000;
  while (start < now) {
    const end = Math.min(start + WINDOW_MS, now);
    const blobs = await listWindow(run, contentType, start, end, session);
    for (const blob of blobs) {
      if (states().blobDone(run.source, blob.contentId)) continue;
      await fetchBlob(run, blob);
    }
    // Progress is kept window by window: a run cut short resumes at the window it was in.
    states().setWatermark(run.source, end);
    start = end;
  }
}
