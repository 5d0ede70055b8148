/**
 * Helpers of the upstream tests: a live stream read event by event, and a signed-in user's
 * bearer token (the upstream's reads need one: README "The upstream's reads"), a migrated
 * scratch schema with sites in it, and a whole upstream started on one.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { pino } from 'pino';
import { UpstreamUserService } from '../../../sync/upstream/auth/user-service.js';
import { migrateUpstream } from '../../../sync/upstream/db/migrate.js';
import { openPool } from '../../../sync/upstream/db/pool.js';
import { createUpstream } from '../../../sync/upstream/main.js';
import type { UpstreamServer } from '../../../sync/upstream/server.js';
import { loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { createTestSchema, type TestSchema } from '../../helpers/postgres.js';

export const READER_PASSWORD = 'reader-on-the-ridge-7';

/**
 * Adds a user (roles: subscriber unless given) and signs it in through POST /api/v1/auth/token,
 * as the web UI does; answers the `Authorization` header value.
 */
export async function signedIn(
  upstream: UpstreamServer,
  username = 'reader',
  roles: string[] = ['subscriber'],
): Promise<string> {
  await new UpstreamUserService(upstream.pool).add({ username, password: READER_PASSWORD, roles });
  const res = await fetch(`http://127.0.0.1:${upstream.port}/api/v1/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password: READER_PASSWORD }),
  });
  if (res.status !== 200) throw new Error(`signing ${username} in answered ${res.status}`);
  const { access_token } = (await res.json()) as { access_token: string };
  return `Bearer ${access_token}`;
}

/** Server-sent events as they come: `next(name)` resolves with the data of the next such event. */
export async function liveEvents(url: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const res = await fetch(url, { signal: controller.signal, headers });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const events: { event: string; data: string }[] = [];
  const pump = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
          const data = /^data: (.*)$/m.exec(block)?.[1] ?? '';
          events.push({ event, data });
        }
      }
    } catch {
      // aborted
    }
  })();
  return {
    events,
    async next(name: string, after = 0): Promise<unknown> {
      for (let i = 0; i < 200; i++) {
        const found = events.slice(after).find((e) => e.event === name);
        if (found) return JSON.parse(found.data);
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`no ${name} event`);
    },
    async close() {
      controller.abort();
      await pump;
    },
  };
}

/**
 * A fresh schema (named after `prefix`) with the upstream's tables, a pool of `max` connections
 * on it, and one row in `sites` (no keys, created at 0) for each of `siteIds`.
 */
export async function migratedSchema(
  prefix: string,
  siteIds: string[],
  max = 4,
): Promise<{ schema: TestSchema; pool: pg.Pool }> {
  const schema = await createTestSchema(prefix);
  const pool = openPool(schema.url, { max });
  await migrateUpstream(pool);
  const values = siteIds.map((_, i) => `($${i + 1}, '{"keys":[]}', 0)`).join(', ');
  await pool.query(`INSERT INTO sites (site_id, public_jwks, created_at) VALUES ${values}`, siteIds);
  return { schema, pool };
}

export interface ScratchUpstream {
  schema: TestSchema;
  dataDir: string;
  upstream: UpstreamServer;
  /** `http://127.0.0.1:<port>` */
  base: string;
}

/**
 * A whole upstream started on a fresh schema and a fresh data folder (both named after
 * `prefix`), on a free loopback port, with no web app, a silent log and no default metrics;
 * `settings` and `options` add to those. The caller stops it, drops the schema and removes the
 * folder.
 */
export async function startScratchUpstream(
  prefix: string,
  settings: Record<string, string> = {},
  options: Partial<Parameters<typeof createUpstream>[1]> = {},
): Promise<ScratchUpstream> {
  const schema = await createTestSchema(prefix);
  const dataDir = mkdtempSync(join(tmpdir(), `meshhub-upstream-${prefix}-`));
  try {
    const upstream = await createUpstream(
      loadUpstreamSettings({
        UPSTREAM_DATABASE_URL: schema.url,
        HTTP_PORT: '0',
        DATA_DIR: dataDir,
        WEB_ROOT: join(dataDir, 'no-web'),
        ...settings,
      }),
      { log: pino({ level: 'silent' }), defaultMetrics: false, ...options },
    );
    await upstream.start();
    return { schema, dataDir, upstream, base: `http://127.0.0.1:${upstream.port}` };
  } catch (error) {
    await schema.drop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}
