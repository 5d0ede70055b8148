/**
 * `GET /api/sync/v1/ping` and `POST /api/sync/v1/batches` (issue 12 "Bad input and faults"):
 * every refusal is the exact 4xx problem a site gets, and after each one the database is exactly
 * as before. Tokens are signed by real LocalIssuers, bodies really gzip'd; the body limit is
 * also checked over a real socket, where the body streams in without a length.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalIssuer } from '../../../src/auth/local-issuer.js';
import {
  type Batch,
  batchAckSchema,
  MAX_BATCH_BYTES,
  MAX_BATCH_INFLATED_BYTES,
  pingAnswerSchema,
  SYNC_API,
  SYNC_REFUSALS,
  type SyncRecord,
} from '../../../sync/protocol.js';
import { signSiteRequest } from '../../../sync/signing.js';
import { type ApplyOutcome, BatchApplier } from '../../../sync/upstream/batch-apply.js';
import { migrateUpstream } from '../../../sync/upstream/db/migrate.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { syncRoutes } from '../../../sync/upstream/routes/sync-routes.js';
import { SiteRegistry } from '../../../sync/upstream/sites.js';
import { createTestSchema, skipWithoutPostgres, type TestSchema } from '../../helpers/postgres.js';
import { readingBody } from '../helpers/records.js';

const skip = await skipWithoutPostgres();

const BATCHES = `${SYNC_API}/batches`;
const T0 = Date.UTC(2026, 2, 10, 8, 0);

function batchOf(siteId: string, firstSeq: number, count: number): Batch {
  const records = Array.from(
    { length: count },
    (_, i) =>
      ({
        seq: firstSeq + i,
        at: T0 + i,
        kind: 'readings',
        body: {
          rows: [
            ['!0000000a', T0 + (firstSeq + i) * 60_000, 20 + i, null, null, null, null, null, null, null],
          ],
        },
      }) satisfies SyncRecord,
  );
  return {
    protocol: 1,
    site_id: siteId,
    first_seq: firstSeq,
    last_seq: firstSeq + count - 1,
    records,
    dropped: [],
    sent_at: T0,
  };
}

const gz = (value: unknown) => new Uint8Array(gzipSync(Buffer.from(JSON.stringify(value))));

describe.skipIf(skip)('sync routes', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  let sites: SiteRegistry;
  let app: Hono;
  let site: LocalIssuer;
  let stranger: LocalIssuer;
  const dirs: string[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) dirs.push(mkdtempSync(join(tmpdir(), 'meshhub-sync-routes-')));
    site = await LocalIssuer.open(dirs[0]!);
    stranger = await LocalIssuer.open(dirs[1]!);
  });
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    schema = await createTestSchema('routes');
    pool = openPool(schema.url, { max: 4 });
    await migrateUpstream(pool);
    sites = new SiteRegistry(pool);
    await sites.add({ siteId: 'north', publicJwks: site.jwks() });
    await sites.add({ siteId: 'south', publicJwks: stranger.jwks() });
    app = new Hono();
    app.route(SYNC_API, syncRoutes({ sites, applier: new BatchApplier(pool) }));
  });
  afterEach(async () => {
    await pool.end();
    await schema.drop();
  });

  interface PostOptions {
    signer?: LocalIssuer;
    siteId?: string;
    encoding?: string | null;
    /** The bytes the token signs, when not the body (a token for another body). */
    signedBody?: Uint8Array;
    token?: string;
  }

  async function post(body: Uint8Array, options: PostOptions = {}): Promise<Response> {
    const token =
      options.token ??
      (await signSiteRequest(options.signer ?? site, {
        siteId: options.siteId ?? 'north',
        method: 'POST',
        path: BATCHES,
        body: options.signedBody ?? body,
        nowMs: Date.now(),
      }));
    const headers: Record<string, string> = {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
    };
    if (options.encoding !== null) headers['content-encoding'] = options.encoding ?? 'gzip';
    return app.request(BATCHES, { method: 'POST', headers, body });
  }

  /** A site token for POSTing `body` to the batches route, signed now by north's key. */
  const signBatch = (body: Uint8Array) =>
    signSiteRequest(site, { siteId: 'north', method: 'POST', path: BATCHES, body, nowMs: Date.now() });

  /** POSTs a signed batch to sync routes whose applier throws `message` with PostgreSQL's `code`. */
  async function postToFailingApplier(message: string, code: string): Promise<Response> {
    class FailingApplier extends BatchApplier {
      override async apply(): Promise<ApplyOutcome> {
        throw Object.assign(new Error(message), { code });
      }
    }
    const failing = new Hono();
    failing.route(SYNC_API, syncRoutes({ sites, applier: new FailingApplier(pool) }));
    const body = gz(batchOf('north', 1, 1));
    const token = await signBatch(body);
    return failing.request(BATCHES, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-encoding': 'gzip' },
      body,
    });
  }

  async function state(): Promise<unknown> {
    const out: Record<string, unknown> = {};
    for (const table of [
      'readings',
      'readings_hourly',
      'readings_latest',
      'sync_batches',
      'sync_request_ids',
    ]) {
      out[table] = (await pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0];
    }
    out.sites = (
      await pool.query('SELECT site_id, acked_seq, records_applied, last_batch_at FROM sites ORDER BY 1')
    ).rows;
    return out;
  }

  /** Sends, expects the problem, and that nothing changed. */
  async function expectRefused(
    send: () => Promise<Response>,
    status: number,
    reason: string,
    detail: string | RegExp,
  ): Promise<Record<string, unknown>> {
    const before = await state();
    const response = await send();
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await response.json()) as Record<string, unknown>;
    expect(problem).toMatchObject({ type: `urn:meshhub:sync:${reason}`, reason, status });
    if (typeof detail === 'string') expect(problem.detail).toBe(detail);
    else expect(problem.detail).toMatch(detail);
    expect(typeof problem.server_time).toBe('number');
    expect(await state()).toEqual(before);
    return problem;
  }

  it('answers a ping with the site’s cursor and the upstream’s clock', async () => {
    const token = await signSiteRequest(site, {
      siteId: 'north',
      method: 'GET',
      path: `${SYNC_API}/ping`,
      nowMs: Date.now(),
    });
    const response = await app.request(`${SYNC_API}/ping`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(200);
    const answer = pingAnswerSchema.parse(await response.json());
    expect(answer).toMatchObject({ site_id: 'north', acked_seq: 0 });
    expect((await sites.get('north'))?.lastContactAt).toBeGreaterThan(0);
  });

  it('applies a batch and acknowledges it; a retry with a fresh token is acknowledged as a duplicate', async () => {
    const body = gz(batchOf('north', 1, 3));
    const first = await post(body);
    expect(first.status).toBe(200);
    expect(batchAckSchema.parse(await first.json())).toMatchObject({
      site_id: 'north',
      acked_seq: 3,
      duplicate: false,
    });
    const again = await post(body);
    expect(again.status).toBe(200);
    expect(batchAckSchema.parse(await again.json())).toMatchObject({ acked_seq: 3, duplicate: true });
    expect((await pool.query('SELECT count(*)::int AS n FROM readings')).rows[0]).toEqual({ n: 3 });
    const row = await sites.get('north');
    expect(row).toMatchObject({ ackedSeq: 3, recordsApplied: 3 });
    expect(row?.lastContactAt).toBeGreaterThan(0);
  });

  it('409 gap and 409 sequence_backwards carry the sequence number the upstream expects', async () => {
    expect((await post(gz(batchOf('north', 1, 3)))).status).toBe(200);
    const gap = await expectRefused(
      () => post(gz(batchOf('north', 10, 2))),
      409,
      'gap',
      'the batch starts at 10, but the next sequence number the upstream needs is 4',
    );
    expect(gap.expected_seq).toBe(4);
    const back = await expectRefused(
      () => post(gz(batchOf('north', 2, 5))),
      409,
      'sequence_backwards',
      'the batch starts at 2, at or before 3, which is applied already',
    );
    expect(back.expected_seq).toBe(4);
  });

  it('409 replayed_request for the same signed request twice', async () => {
    const body = gz(batchOf('north', 1, 2));
    const token = await signBatch(body);
    expect((await post(body, { token })).status).toBe(200);
    const problem = await expectRefused(
      () => post(body, { token }),
      409,
      'replayed_request',
      'this signed request (batch 1..2) was received before',
    );
    expect(problem.expected_seq).toBe(3);
  });

  it('401 unknown_site for a site nobody registered, or a key that is not the site’s', async () => {
    const body = gz(batchOf('east', 1, 1));
    await expectRefused(
      () => post(body, { siteId: 'east' }),
      401,
      'unknown_site',
      'the token names no registered site',
    );
    await expectRefused(
      () => post(gz(batchOf('north', 1, 1)), { signer: stranger }),
      401,
      'unknown_site',
      "the request token does not verify with site north's key",
    );
    await expectRefused(
      async () => app.request(BATCHES, { method: 'POST', body: gz(batchOf('north', 1, 1)) }),
      401,
      'unknown_site',
      'a site request token (Authorization: Bearer) is required',
    );
  });

  it('401 bad_token for a token of another request, another body, or expired', async () => {
    const body = gz(batchOf('north', 1, 1));
    await expectRefused(
      () => post(body, { signedBody: gz(batchOf('north', 1, 2)) }),
      401,
      'bad_token',
      'the request token does not sign this body',
    );
    const ping = await signSiteRequest(site, {
      siteId: 'north',
      method: 'GET',
      path: `${SYNC_API}/ping`,
      nowMs: Date.now(),
    });
    await expectRefused(
      () => post(body, { token: ping }),
      401,
      'bad_token',
      `the request token is for "GET ${SYNC_API}/ping", not "POST ${BATCHES}"`,
    );
    const old = await signSiteRequest(site, {
      siteId: 'north',
      method: 'POST',
      path: BATCHES,
      body,
      nowMs: Date.now() - 3 * 3_600_000,
    });
    await expectRefused(
      () => post(body, { token: old }),
      401,
      'bad_token',
      'the request token has expired (is the site clock right?)',
    );
  });

  it('403 revoked_site once the operator revoked it', async () => {
    await sites.revoke('north');
    await expectRefused(() => post(gz(batchOf('north', 1, 1))), 403, 'revoked_site', 'site north is revoked');
  });

  it('403 site_mismatch when the batch names another site than the token', async () => {
    await expectRefused(
      () => post(gz(batchOf('south', 1, 1))),
      403,
      'site_mismatch',
      "the batch names site south, but the token is site north's",
    );
  });

  it('415 for a body that is not declared gzip, 400 for one that is not gzip data', async () => {
    const plain = new TextEncoder().encode(JSON.stringify(batchOf('north', 1, 1)));
    await expectRefused(
      () => post(plain, { encoding: null }),
      415,
      'bad_batch',
      `a batch is sent gzip'd (Content-Encoding: gzip), not "identity"`,
    );
    await expectRefused(
      () => post(plain, { encoding: 'br' }),
      415,
      'bad_batch',
      `a batch is sent gzip'd (Content-Encoding: gzip), not "br"`,
    );
    await expectRefused(() => post(plain), 400, 'bad_batch', 'the body is not valid gzip data');
  });

  it('400 for gzip that is not JSON, and for JSON that is not a batch, naming the fields', async () => {
    await expectRefused(
      () => post(new Uint8Array(gzipSync(Buffer.from('{"protocol": 1,')))),
      400,
      'bad_batch',
      'the batch is not valid JSON',
    );
    const bad = { ...batchOf('north', 1, 3), protocol: 2 } as Record<string, unknown>;
    const records = bad.records as Record<string, unknown>[];
    records[1]!.kind = 'reading';
    records[1]!.body = { node_id: 'no pe', ts: 1 };
    records[2]!.body = { rows: [['!0000000a', T0, 1, null, null, null, null, null, null]] };
    const problem = await expectRefused(
      () => post(gz(bad)),
      400,
      'bad_batch',
      /^invalid protocol, records\.1\.body\./,
    );
    const fields = (problem.errors as { field: string }[]).map((e) => e.field);
    expect(fields).toContain('protocol');
    expect(fields).toContain('records.1.body.node_id');
    expect(fields).toContain('records.1.body.temperature_c');
    // A readings row is checked whole, by the hand-written loop, and named down to its index.
    expect(problem.errors).toContainEqual({
      field: 'records.2.body.rows.0',
      message: 'expected a row of 10 values',
    });
    // A gap inside the batch is refused like a gap between batches, before anything is applied.
    const holed = batchOf('north', 1, 3);
    holed.records.splice(1, 1);
    await expectRefused(() => post(gz(holed)), 400, 'bad_batch', 'invalid records');
  });

  it('400 for a count or sequence number past an INTEGER column: the schema bounds them', async () => {
    const transition = (seq: number): SyncRecord => ({
      seq: 3,
      at: T0,
      kind: 'message_transition',
      body: { message_id: '01950000-0000-7000-8000-000000000001', seq, status: 'sent', reason: null, at: T0 },
    });
    const batch = batchOf('north', 1, 2);
    batch.records.push(transition(2 ** 31));
    batch.last_seq = 3;
    const problem = await expectRefused(
      () => post(gz(batch)),
      400,
      'bad_batch',
      'invalid records.2.body.seq',
    );
    expect(problem.errors).toEqual([
      { field: 'records.2.body.seq', message: 'Too big: expected number to be <=2147483647' },
    ]);
    // The largest an INTEGER holds is stored.
    batch.records[2] = transition(2 ** 31 - 1);
    expect((await post(gz(batch))).status).toBe(200);
    const { rows } = await pool.query('SELECT seq FROM message_transitions');
    expect(rows).toEqual([{ seq: 2 ** 31 - 1 }]);
  });

  it('400, not a 500, should PostgreSQL still refuse a value (a data exception)', async () => {
    const response = await postToFailingApplier(
      'value "1e400" is out of range for type double precision',
      '22003',
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      reason: 'bad_batch',
      detail: 'a record cannot be stored: value "1e400" is out of range for type double precision',
    });
  });

  it('names every refusal it answers in the protocol’s SYNC_REFUSALS', async () => {
    expect(SYNC_REFUSALS).toContain('bad_token');
    const answered = new Set<string>();
    const body = gz(batchOf('north', 1, 1));
    answered.add(
      ((await (await post(body, { signedBody: new Uint8Array(1) })).json()) as { reason: string }).reason,
    );
    answered.add(
      ((await (await post(gz(batchOf('east', 1, 1)), { siteId: 'east' })).json()) as { reason: string })
        .reason,
    );
    answered.add(((await (await post(body, { encoding: null })).json()) as { reason: string }).reason);
    for (const reason of answered) expect(SYNC_REFUSALS).toContain(reason);
    expect([...answered].sort()).toEqual(['bad_batch', 'bad_token', 'unknown_site']);
  });

  it('takes the per-reading records of sites not yet upgraded, and station ids', async () => {
    const legacy = {
      protocol: 1,
      site_id: 'north',
      first_seq: 1,
      last_seq: 2,
      records: [
        {
          seq: 1,
          at: T0,
          kind: 'reading',
          body: readingBody('roof-1', T0, { temperature_c: 20 }),
        },
        {
          seq: 2,
          at: T0,
          kind: 'readings',
          body: { rows: [['roof-1', T0 + 1, 21, null, null, null, null, null, null, null]] },
        },
      ],
      dropped: [],
      sent_at: T0,
    };
    expect((await post(gz(legacy))).status).toBe(200);
    const { rows } = await pool.query('SELECT node_id, ts, temperature_c FROM readings ORDER BY ts');
    expect(rows).toEqual([
      { node_id: 'roof-1', ts: T0, temperature_c: 20 },
      { node_id: 'roof-1', ts: T0 + 1, temperature_c: 21 },
    ]);
  });

  it('413 too_large over MAX_BATCH_BYTES as sent', async () => {
    // Random bytes do not compress: over the limit as sent, whatever they would inflate to.
    const big = new Uint8Array(MAX_BATCH_BYTES + 1);
    for (let i = 0; i < big.length; i += 65_536) crypto.getRandomValues(big.subarray(i, i + 65_536));
    await expectRefused(
      () => post(big),
      413,
      'too_large',
      `a batch is at most ${MAX_BATCH_BYTES} bytes gzip'd`,
    );
  });

  it('413 too_large for a zip bomb: inflating stops at MAX_BATCH_INFLATED_BYTES', async () => {
    const bomb = new Uint8Array(gzipSync(Buffer.alloc(MAX_BATCH_INFLATED_BYTES + 1, 0x20), { level: 9 }));
    expect(bomb.length).toBeLessThan(MAX_BATCH_BYTES);
    await expectRefused(
      () => post(bomb),
      413,
      'too_large',
      `a batch is at most ${MAX_BATCH_INFLATED_BYTES} bytes once inflated`,
    );
  });

  it('503 with Retry-After when the database is away, not a 500', async () => {
    const response = await postToFailingApplier(
      'terminating connection due to administrator command',
      '57P01',
    );
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(await response.json()).toMatchObject({
      status: 503,
      detail: 'the upstream database is unavailable; retry later',
    });
  });

  it('over a real socket, a body streamed without a length is cut off at the limit', async () => {
    const server = createAdaptorServer({ fetch: app.fetch }) as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const token = await signSiteRequest(site, {
        siteId: 'north',
        method: 'POST',
        path: BATCHES,
        body: new Uint8Array(1),
        nowMs: Date.now(),
      });
      const chunk = Buffer.alloc(256 * 1024, 1);
      let written = 0;
      let answered = false;
      const result = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        let status = 0;
        let text = '';
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: BATCHES,
            headers: {
              authorization: `Bearer ${token}`,
              'content-encoding': 'gzip',
              'transfer-encoding': 'chunked',
            },
          },
          (res) => {
            answered = true;
            status = res.statusCode ?? 0;
            res.setEncoding('utf8');
            res.on('data', (d: string) => {
              text += d;
            });
            res.on('end', () => resolve({ status, body: text }));
          },
        );
        // Once the server has answered it drains what is still in flight for a moment and then
        // closes the socket, so a write still under way may fail with EPIPE or ECONNRESET: that
        // is the cut-off working. An error before any answer is a real failure.
        req.on('error', (error) => {
          if (answered && text.length > 0) resolve({ status, body: text });
          else reject(error);
        });
        // Keep sending (up to 4x the limit) until the server answers.
        const pump = () => {
          while (!answered && written < 4 * MAX_BATCH_BYTES) {
            written += chunk.length;
            if (!req.write(chunk)) {
              req.once('drain', pump);
              return;
            }
          }
          req.end();
        };
        pump();
      });
      expect(result.status).toBe(413);
      expect(JSON.parse(result.body)).toMatchObject({ type: 'urn:meshhub:sync:too_large' });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
