/**
 * The bodies SIEM forwarding sends (before gzip), in two formats:
 *
 * `meshhub-json` (SIEM_FORMAT default), version 1 — one JSON object per request:
 *
 * ```json
 * { "schema": "meshhub.audit.events", "version": 1, "sent_at": "2026-11-03T10:00:00.000Z",
 *   "host": "pi-site-1", "first_id": "101", "last_id": "600", "count": 500,
 *   "events": [ { "id": "101", "timestamp": "…Z", "service": "directory", "operation": "Add member to role",
 *                 "result": "failure", "result_raw": "failure", "actor": "mallory@contoso.com",
 *                 "target": "…", "tags": [], "source": "directory", "source_id": "…",
 *                 "ingested_at": "…Z", "raw": { …the upstream record… } } ] }
 * ```
 *
 * Events are in `id` order (the store's sequence: commit order), and ids only grow; after a
 * failure a batch may be sent again (at-least-once), so a receiver deduplicates on `id`. A new
 * field may be added within version 1; a change of meaning or a removal is version 2.
 *
 * `splunk-hec` — Splunk HTTP Event Collector's JSON event protocol (`POST
 * /services/collector/event`): event objects stacked one after another (separated by a newline),
 * each `{"time": <epoch seconds with milliseconds>, "host", "source": "meshhub:<source>",
 * "sourcetype", ["index",] "event": {…the same event object…}}`.
 */
import type { OutboxEvent } from './delivery-store.js';
import type { SiemFormat } from './settings.js';

export const MESHHUB_SCHEMA = 'meshhub.audit.events';
export const MESHHUB_SCHEMA_VERSION = 1;

export interface PayloadOptions {
  format: SiemFormat;
  host: string;
  hec: { sourcetype: string; index?: string };
  maxEvents: number;
  maxBytes: number;
  now?: () => number;
}

export interface Batch {
  body: Buffer;
  /** Events in the body: a prefix of those given. */
  count: number;
  firstSeq: number;
  lastSeq: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The event object of both formats, as JSON text (the raw record is spliced in, not re-parsed). */
export function eventJson(e: OutboxEvent): string {
  const head = JSON.stringify({
    id: String(e.seq),
    timestamp: iso(e.ts),
    service: e.service,
    operation: e.operation,
    result: e.result,
    result_raw: e.result_raw,
    actor: e.actor,
    target: e.target,
    tags: safeTags(e.tags),
    source: e.source,
    source_id: e.source_key,
    ingested_at: iso(e.ingested_at),
  });
  return `${head.slice(0, -1)},"raw":${e.raw ?? 'null'}}`;
}

function safeTags(tags: string): string[] {
  if (tags === '[]') return [];
  try {
    const parsed: unknown = JSON.parse(tags);
    return Array.isArray(parsed) ? parsed.filter((t): t is string => typeof t === 'string') : [];
  } catch {
    return [];
  }
}

function hecJson(e: OutboxEvent, options: PayloadOptions): string {
  const meta = JSON.stringify({
    time: Math.round(e.ts) / 1000,
    host: options.host,
    source: `meshhub:${e.source}`,
    sourcetype: options.hec.sourcetype,
    ...(options.hec.index ? { index: options.hec.index } : {}),
  });
  return `${meta.slice(0, -1)},"event":${eventJson(e)}}`;
}

/**
 * The longest prefix of `events` (at least one) within the event and byte bounds, as one body.
 * `events` must be non-empty and in seq order.
 */
export function buildBatch(events: readonly OutboxEvent[], options: PayloadOptions): Batch {
  const parts: string[] = [];
  let bytes = 0;
  for (const e of events) {
    if (parts.length >= options.maxEvents) break;
    const part = options.format === 'splunk-hec' ? hecJson(e, options) : eventJson(e);
    const size = Buffer.byteLength(part) + 1;
    if (parts.length > 0 && bytes + size > options.maxBytes) break;
    parts.push(part);
    bytes += size;
  }
  const first = events[0]!;
  const last = events[parts.length - 1]!;
  let text: string;
  if (options.format === 'splunk-hec') {
    text = parts.join('\n');
  } else {
    const head = JSON.stringify({
      schema: MESHHUB_SCHEMA,
      version: MESHHUB_SCHEMA_VERSION,
      sent_at: iso((options.now ?? Date.now)()),
      host: options.host,
      first_id: String(first.seq),
      last_id: String(last.seq),
      count: parts.length,
    });
    text = `${head.slice(0, -1)},"events":[${parts.join(',')}]}`;
  }
  return { body: Buffer.from(text), count: parts.length, firstSeq: first.seq, lastSeq: last.seq };
}
