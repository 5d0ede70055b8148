/**
 * A loopback SIEM receiver for the forwarding tests and the bench: the one boundary we cannot run
 * here. It speaks both formats the hub sends:
 *
 * - `meshhub-json`: `POST <any path>`, one JSON object `{schema, version, …, events: [...]}`.
 * - `splunk-hec`: Splunk HTTP Event Collector as documented — `POST /services/collector/event`,
 *   `Authorization: Splunk <token>`, a body of event objects stacked one after another, each
 *   with an `event` field; answers `{"text":"Success","code":0}`, and the documented errors:
 *   401 `{"text":"Token is required","code":2}`, 401 `{"text":"Invalid authorization","code":3}`,
 *   403 `{"text":"Invalid token","code":4}`, 400 `{"text":"No data","code":5}`,
 *   400 `{"text":"Invalid data format","code":6}`, 400 `{"text":"Event field is required","code":12}`.
 *
 * Bodies may be gzip (`Content-Encoding: gzip`). With a secret, `X-Meshhub-Signature` is checked
 * against the exact body received, with a constant-time compare. `down()` stops listening (the
 * connection is refused) and `up()` listens again on the same port.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface ReceivedBatch {
  path: string;
  headers: IncomingHttpHeaders;
  /** The body as received (gzip bytes when compressed). */
  body: Buffer;
  /** true / false when a secret is set and the header was checked; undefined without a secret. */
  signatureValid: boolean | undefined;
  /** The event objects (meshhub: `events`; HEC: each stacked object's `event`). */
  events: Array<Record<string, unknown>>;
  /** HEC only: the stacked objects as sent (time, host, source, sourcetype, event). */
  hecObjects?: Array<Record<string, unknown>>;
  /** meshhub-json only: the envelope without `events`. */
  envelope?: Record<string, unknown>;
}

export type Responder = (
  batch: ReceivedBatch,
) => { status: number; body?: unknown; headers?: Record<string, string> } | undefined;

export interface FakeSiemOptions {
  format?: 'meshhub-json' | 'splunk-hec';
  secret?: string;
  hecToken?: string;
}

export class FakeSiem {
  /** Accepted batches, in arrival order. */
  readonly accepted: ReceivedBatch[] = [];
  /** Every request that reached the handler, accepted or not. */
  requests = 0;
  /** Answer something else than success (return undefined to accept). */
  respond: Responder | undefined;
  /** Delay every answer by this many ms (a slow receiver). */
  delayMs = 0;
  private server: Server | undefined;
  private port = 0;

  constructor(private readonly options: FakeSiemOptions = {}) {}

  get url(): string {
    const path = this.options.format === 'splunk-hec' ? '/services/collector/event' : '/siem/ingest';
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Ids of the accepted events, in the order received. */
  get ids(): string[] {
    return this.accepted.flatMap((b) => b.events.map((e) => String(e.id)));
  }

  async up(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void this.handle(req.url ?? '/', req.headers, Buffer.concat(chunks), res, () => req.socket.destroyed);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }

  private async handle(
    path: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
    res: ServerResponse,
    gone: () => boolean,
  ): Promise<void> {
    this.requests++;
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    // The sender gave up waiting: nothing is accepted (as a receiver that times out the request).
    if (gone()) return;
    const answer = (status: number, payload: unknown, extra: Record<string, string> = {}) => {
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json', ...extra });
      res.end(JSON.stringify(payload));
    };
    const hec = this.options.format === 'splunk-hec';
    if (hec) {
      if (path.split('?')[0] !== '/services/collector/event')
        return answer(404, { text: 'Not found', code: 404 });
      const auth = headers.authorization;
      if (!auth) return answer(401, { text: 'Token is required', code: 2 });
      const m = /^Splunk (.+)$/.exec(auth);
      if (!m) return answer(401, { text: 'Invalid authorization', code: 3 });
      if (m[1] !== this.options.hecToken) return answer(403, { text: 'Invalid token', code: 4 });
    }
    let signatureValid: boolean | undefined;
    if (this.options.secret) {
      const expected = Buffer.from(
        `sha256=${createHmac('sha256', this.options.secret).update(body).digest('hex')}`,
      );
      const given = Buffer.from(String(headers['x-meshhub-signature'] ?? ''));
      signatureValid = given.length === expected.length && timingSafeEqual(given, expected);
    }
    let text: string;
    try {
      text = (headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString('utf8');
    } catch {
      return answer(400, hec ? { text: 'Invalid data format', code: 6 } : { error: 'not gzip' });
    }
    const batch: ReceivedBatch = { path, headers, body, signatureValid, events: [] };
    if (hec) {
      if (!text.trim()) return answer(400, { text: 'No data', code: 5 });
      let objects: Array<Record<string, unknown>>;
      try {
        objects = parseStacked(text);
      } catch {
        return answer(400, { text: 'Invalid data format', code: 6 });
      }
      const missing = objects.findIndex((o) => o.event === undefined || o.event === null || o.event === '');
      if (missing >= 0)
        return answer(400, { text: 'Event field is required', code: 12, 'invalid-event-number': missing });
      batch.hecObjects = objects;
      batch.events = objects.map((o) => o.event as Record<string, unknown>);
    } else {
      try {
        const { events, ...envelope } = JSON.parse(text) as { events: Array<Record<string, unknown>> };
        batch.events = events;
        batch.envelope = envelope;
      } catch {
        return answer(400, { error: 'not JSON' });
      }
    }
    const custom = this.respond?.(batch);
    if (custom) return answer(custom.status, custom.body ?? {}, custom.headers);
    if (this.options.secret && !signatureValid) return answer(401, { error: 'bad signature' });
    this.accepted.push(batch);
    return answer(200, hec ? { text: 'Success', code: 0 } : { accepted: batch.events.length });
  }
}

/** Event objects one after another (HEC's batch format): whitespace between them, no commas. */
export function parseStacked(text: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (ch === '}') {
      depth--;
      if (depth === 0) out.push(JSON.parse(text.slice(start, i + 1)) as Record<string, unknown>);
      if (depth < 0) throw new Error('unbalanced');
    } else if (depth === 0 && !/\s/.test(ch ?? '')) {
      throw new Error(`unexpected ${ch} between events`);
    }
  }
  if (depth !== 0) throw new Error('truncated');
  return out;
}
