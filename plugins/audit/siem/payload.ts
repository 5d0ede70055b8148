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
 *                 "tenant": "default", "ingested_at": "…Z", "raw": { …the upstream record… } } ] }
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
import type { OutboxEvent } from './delivery-repository.js';
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
const DAY_MS = 86_400_000;
const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : String(n));

/**
 * `Date#toISOString` for many nearby times: the date part is kept for the last day seen and the
 * time of day is formatted by hand (same text; anything unusual goes to `toISOString`).
 */
class IsoClock {
  private day = Number.NaN;
  private prefix = '';

  format(ms: number): string {
    if (!Number.isInteger(ms)) return iso(ms);
    const day = Math.floor(ms / DAY_MS);
    if (day !== this.day) {
      const text = iso(day * DAY_MS);
      if (text.length !== 24) return iso(ms); // years outside 0000–9999
      this.day = day;
      this.prefix = text.slice(0, 11);
    }
    let rest = ms - day * DAY_MS;
    const milli = rest % 1000;
    rest = (rest - milli) / 1000;
    const sec = rest % 60;
    rest = (rest - sec) / 60;
    const min = rest % 60;
    const hour = (rest - min) / 60;
    return `${this.prefix}${pad2(hour)}:${pad2(min)}:${pad2(sec)}.${pad3(milli)}Z`;
  }
}

const tsClock = new IsoClock();
const ingestedClock = new IsoClock();
const q = JSON.stringify;

/**
 * The event object of both formats, as JSON text: the fields in a fixed order, each string
 * escaped by `JSON.stringify`, and the raw record spliced in as stored (never re-parsed).
 */
export function eventJson(e: OutboxEvent): string {
  return `{"id":"${e[0]}","timestamp":"${tsClock.format(e[3])}","service":${q(e[4])},"operation":${q(e[5])},"result":${q(e[6])},"result_raw":${q(e[7])},"actor":${q(e[8])},"target":${q(e[9])},"tags":${tagsJson(e[10])},"source":${q(e[1])},"source_id":${q(e[2])},"tenant":${q(e[13] ?? 'default')},"ingested_at":"${ingestedClock.format(e[11])}","raw":${e[12] ?? 'null'}}`;
}

function tagsJson(tags: string): string {
  return tags === '[]' ? tags : q(safeTags(tags));
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
    time: Math.round(e[3]) / 1000,
    host: options.host,
    source: `meshhub:${e[1]}`,
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
  // UTF-8 takes at most 3 bytes per UTF-16 unit: count exact bytes only once 3× the length
  // could pass the bound (a batch of ASCII-heavy events never needs to).
  let chars = 0;
  let bytes = -1;
  for (const e of events) {
    if (parts.length >= options.maxEvents) break;
    const part = options.format === 'splunk-hec' ? hecJson(e, options) : eventJson(e);
    if (bytes < 0 && (chars + part.length + 1) * 3 > options.maxBytes) {
      bytes = 0;
      for (const p of parts) bytes += Buffer.byteLength(p) + 1;
    }
    if (bytes >= 0) {
      const size = Buffer.byteLength(part) + 1;
      if (parts.length > 0 && bytes + size > options.maxBytes) break;
      bytes += size;
    }
    parts.push(part);
    chars += part.length + 1;
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
      first_id: String(first[0]),
      last_id: String(last[0]),
      count: parts.length,
    });
    text = `${head.slice(0, -1)},"events":[${parts.join(',')}]}`;
  }
  return { body: Buffer.from(text), count: parts.length, firstSeq: first[0], lastSeq: last[0] };
}
