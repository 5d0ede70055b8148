/**
 * SIEM forwarding end to end: events collected from the loopback Microsoft fake are stored by the
 * plugin's real writer, and its forwarder sends them to a loopback SIEM receiver (tests/fakes/siem)
 * that goes down, comes back, answers errors, slowly, or with a redirect into the LAN. Whatever
 * happens, the receiver ends up with every event, once, in order, and every batch signed.
 */
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OutboxEvent } from '../../../plugins/audit/siem/delivery-repository.js';
import { SiemForwarderActor } from '../../../plugins/audit/siem/forwarder-actor.js';
import { eventJson } from '../../../plugins/audit/siem/payload.js';
import { AuditStore } from '../../../plugins/audit/store/audit-store.js';
import { privateModuleMetrics } from '../../../scripts/bench/lib/module-metrics.js';
import { FakeMicrosoft } from '../../fakes/microsoft/fake-microsoft.js';
import { directoryAudit } from '../../fakes/microsoft/fixtures.js';
import { FakeSiem, type FakeSiemOptions } from '../../fakes/siem/fake-siem.js';
import { waitFor } from '../../helpers/hub.js';
import { type AuditTestApp, auditApp, capturingLogger, silent } from './helpers.js';

const SECRET = 'siem-secret-0123456789abcdef';
const HOUR = 3_600_000;

let microsoft: FakeMicrosoft;
let siem: FakeSiem;
let hub: AuditTestApp | undefined;
const extra: SiemForwarderActor[] = [];

beforeEach(async () => {
  microsoft = new FakeMicrosoft();
  await microsoft.start();
});
afterEach(async () => {
  for (const a of extra.splice(0)) await a.stop();
  await hub?.close();
  hub = undefined;
  await siem?.down();
  await microsoft.stop();
});

function siemEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    ...microsoft.env(),
    AUDIT_SOURCES: 'directory',
    SIEM_ENABLED: 'true',
    SIEM_WEBHOOK_URL: siem.url,
    SIEM_WEBHOOK_SECRET: SECRET,
    SIEM_BATCH_MAX_EVENTS: '25',
    SIEM_BACKOFF_BASE_MS: '5',
    SIEM_BACKOFF_MAX_MS: '40',
    SIEM_TIMEOUT_MS: '2000',
    ...overrides,
  };
}

/** The receiver up (`fake`: the shared secret by default), then a hub forwarding to it (siemEnv with `overrides`). */
async function startForwarding(
  overrides: Record<string, string> = {},
  fake: FakeSiemOptions = { secret: SECRET },
  app: Parameters<typeof auditApp>[1] = {},
): Promise<AuditTestApp> {
  siem = new FakeSiem(fake);
  await siem.up();
  return auditApp(siemEnv(overrides), app);
}

let n = 0;
/** `count` new directory events at the fake, collected and stored by the plugin. */
async function collect(count: number): Promise<void> {
  const base = Date.now() - HOUR;
  for (let i = 0; i < count; i++) microsoft.directoryAudits.push(directoryAudit(++n, base + n));
  expect(hub!.collector.requestFetch('admin')).toBe('queued');
  await hub!.collector.idle();
}

const forwarder = () => hub!.actors.find((a) => a.name === 'audit-siem') as SiemForwarderActor;
const state = () => forwarder().describe().siem as Record<string, unknown>;
const storedIds = () =>
  (hub!.db.prepare('SELECT seq FROM audit_events ORDER BY seq').pluck().all() as number[]).map(String);
const metric = async (name: string) => {
  const line = (await hub!.registry.metrics())
    .split('\n')
    .find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.split(' ').pop());
};

async function drained(): Promise<void> {
  await forwarder().drained(20_000);
}

function expectEveryEventOnceInOrder(): void {
  const ids = siem.ids;
  expect(ids).toEqual(storedIds());
  expect(new Set(ids).size).toBe(ids.length);
}

describe('SIEM forwarding (meshhub-json)', () => {
  it('delivers every event once, in order, after the receiver was down for a while', async () => {
    hub = await startForwarding();
    await collect(30);
    await drained();
    expect(siem.ids).toHaveLength(30);

    await siem.down();
    await collect(120);
    await collect(60);
    await waitFor(
      () => Number(state().consecutive_failures) >= 3 || undefined,
      10_000,
      'failures while down',
    );
    expect(state().status).toBe('retrying');
    expect(String(state().last_error)).toMatch(/could not reach 127\.0\.0\.1/);
    expect(forwarder().ready()).toBe(false); // /health: degraded while the SIEM is unreachable
    // The source-health view shows it too, where an administrator looks for collection trouble.
    const down = (await hub.json('/api/source-health')).body.siem;
    expect(down).toMatchObject({ status: 'retrying', format: 'meshhub-json', lag_events: 180 });
    expect(down.consecutive_failures).toBeGreaterThanOrEqual(3);
    expect(down.last_error).toMatch(/could not reach 127\.0\.0\.1/);
    expect(JSON.stringify(down)).not.toContain(SECRET);
    expect(await metric('meshhub_audit_siem_lag_events')).toBe(180);
    expect(await metric('meshhub_audit_siem_lag_seconds')).toBeGreaterThan(0);
    expect(await metric('meshhub_audit_siem_requests_total{outcome="retry"}')).toBeGreaterThanOrEqual(3);

    await siem.up();
    await drained();
    expectEveryEventOnceInOrder();
    expect(siem.ids).toHaveLength(210);
    expect(siem.accepted.every((b) => b.events.length <= 25)).toBe(true);
    expect(siem.accepted.every((b) => b.signatureValid === true)).toBe(true);
    expect(await metric('meshhub_audit_siem_delivered_events_total')).toBe(210);
    expect(await metric('meshhub_audit_siem_lag_events')).toBe(0);
    expect(forwarder().ready()).toBe(true);
    expect(state()).toMatchObject({ status: 'idle', consecutive_failures: 0, lag_events: 0, delivered: 210 });
    expect((await hub.json('/api/source-health')).body.siem).toMatchObject({
      status: 'idle',
      consecutive_failures: 0,
      lag_events: 0,
      last_error: null,
    });
  });

  it('sends a versioned, gzip-compressed, signed body in the documented shape', async () => {
    hub = await startForwarding();
    await collect(3);
    await drained();
    const features = (await hub.json('/api/config/features')).body;
    expect(features).toMatchObject({
      siem_enabled: true,
      siem: { format: 'meshhub-json', status: 'idle', lag_events: 0 },
    });
    const [batch] = siem.accepted;
    expect(batch!.headers['content-encoding']).toBe('gzip');
    expect(batch!.headers['content-type']).toBe('application/json');
    // The signature is the HMAC of the exact bytes on the wire (the gzip body), checked in constant time.
    expect(batch!.signatureValid).toBe(true);
    expect(JSON.parse(gunzipSync(batch!.body).toString()).events).toHaveLength(3);
    expect(batch!.envelope).toMatchObject({
      schema: 'meshhub.audit.events',
      version: 1,
      count: 3,
      first_id: storedIds()[0],
      last_id: storedIds()[2],
    });
    expect(batch!.events[0]).toMatchObject({
      id: storedIds()[0],
      service: 'directory',
      source: 'directory',
      result: expect.any(String),
      actor: expect.any(String),
      raw: expect.objectContaining({ id: expect.any(String) }),
    });
  });

  it('a restart mid-backlog resumes from the persisted checkpoint', async () => {
    hub = await startForwarding({ SIEM_BATCH_MAX_EVENTS: '10' });
    // Three batches get through, then the receiver fails until the restart.
    siem.respond = () => (siem.accepted.length >= 3 ? { status: 503, body: { error: 'busy' } } : undefined);
    await collect(95);
    await waitFor(() => Number(state().consecutive_failures) >= 1 || undefined, 10_000, 'a failure');
    await forwarder().stop();
    const checkpoint = hub.db
      .prepare("SELECT last_seq FROM audit_siem_delivery WHERE sink = 'siem'")
      .pluck()
      .get();
    expect(String(checkpoint)).toBe(storedIds()[29]);

    // A request the stop cut off may still reach the receiver (its body was on the wire): it
    // lands while the receiver still refuses, as it would on a hub that really died, instead of
    // being accepted after the stop and counted twice once the new forwarder resends it.
    await new Promise((resolve) => setTimeout(resolve, 250));
    // A new forwarder over the same database, as after a restart of the hub: nothing in memory.
    siem.respond = undefined;
    const fresh = new SiemForwarderActor({
      config: forwarder().config,
      store: new AuditStore(() => hub!.db),
      metrics: privateModuleMetrics('test_'),
      log: silent,
      version: 'test',
    });
    extra.push(fresh);
    await fresh.start();
    await fresh.drained(20_000);
    expectEveryEventOnceInOrder();
    expect(siem.ids).toHaveLength(95);
  });

  it('rides out 5xx and a slow receiver, recording each failure', async () => {
    hub = await startForwarding({ SIEM_TIMEOUT_MS: '150' });
    let answered = 0;
    siem.respond = () => (++answered <= 3 ? { status: 503, body: { error: 'maintenance' } } : undefined);
    await collect(40);
    await drained();
    expect(await metric('meshhub_audit_siem_requests_total{outcome="retry"}')).toBe(3);

    siem.delayMs = 600; // longer than SIEM_TIMEOUT_MS: the forwarder gives up and retries
    await collect(20);
    await waitFor(
      () => String(state().last_error ?? '').includes('no answer within 150 ms') || undefined,
      10_000,
      'a timeout',
    );
    siem.delayMs = 0;
    await drained();
    expectEveryEventOnceInOrder();
    expect(Number(state().failures)).toBeGreaterThanOrEqual(4);
  });

  it('holds on a redirect into the LAN (never followed) and on a refused signature, skipping nothing', async () => {
    hub = await startForwarding();
    siem.respond = () => ({ status: 302, headers: { location: 'http://10.0.0.1/ingest' } });
    await collect(30);
    await waitFor(() => (state().status === 'held' ? true : undefined), 10_000, 'held');
    expect(String(state().last_error)).toMatch(/redirect \(302 to 10\.0\.0\.1\).*not followed/);
    expect(await metric('meshhub_audit_siem_held')).toBe(1);
    expect(forwarder().ready()).toBe(false);
    expect(siem.accepted).toHaveLength(0);

    siem.respond = () => ({ status: 401, body: { error: 'bad signature' } });
    await waitFor(() => (String(state().last_error).includes('401') ? true : undefined), 10_000, '401');
    expect(state().status).toBe('held');

    siem.respond = undefined;
    await drained();
    expectEveryEventOnceInOrder();
    expect(hub.db.prepare('SELECT count(*) FROM audit_siem_rejected').pluck().get()).toBe(0);
  });

  it('a 400 for one event skips and records only that event; a 400 for everything holds', async () => {
    hub = await startForwarding();
    await collect(40);
    await drained();
    // Seqs are assigned in commit order: the 18th event of the next fetch.
    const poison = String(Number(storedIds().at(-1)) + 18);
    siem.respond = (b) =>
      b.events.some((e) => e.id === poison) ? { status: 400, body: { error: 'bad event' } } : undefined;
    await collect(40);
    await drained();
    expect(siem.ids).toEqual(storedIds().filter((id) => id !== poison));
    const rejected = hub.db.prepare('SELECT seq, status, reason FROM audit_siem_rejected').all();
    expect(rejected).toEqual([{ seq: Number(poison), status: 400, reason: expect.stringContaining('400') }]);
    expect(await metric('meshhub_audit_siem_rejected_events_total')).toBe(1);

    // A receiver refusing everything cannot drain the queue into the rejected list.
    siem.respond = () => ({ status: 400, body: { error: 'schema mismatch' } });
    await collect(30);
    await waitFor(() => (state().status === 'held' ? true : undefined), 10_000, 'held on repeated 400s');
    expect(String(state().last_error)).toMatch(/refuses event after event/);
    expect(hub.db.prepare('SELECT count(*) FROM audit_siem_rejected').pluck().get()).toBe(2);
    siem.respond = undefined;
    await drained();
    const skipped = (hub.db.prepare('SELECT seq FROM audit_siem_rejected').pluck().all() as number[]).map(
      String,
    );
    expect(siem.ids).toEqual(storedIds().filter((id) => !skipped.includes(id)));
  });

  it('starts at the newest stored event when first turned on', async () => {
    hub = await startForwarding({ SIEM_ENABLED: 'false' });
    expect((await hub.json('/api/config/features')).body).toMatchObject({ siem_enabled: false, siem: null });
    expect(hub.actors.map((a) => a.name)).not.toContain('audit-siem');
    await collect(5);
    const db = hub.db;
    const late = new SiemForwarderActor({
      config: {
        url: new URL(siem.url),
        format: 'meshhub-json',
        secret: { reveal: () => SECRET } as never,
        hec: { sourcetype: 'meshhub:audit' },
        allowedHosts: [],
        allowPrivateNetwork: false,
        batchMaxEvents: 10,
        batchMaxBytes: 1 << 20,
        timeoutMs: 2000,
        backoffBaseMs: 5,
        backoffMaxMs: 40,
      },
      store: new AuditStore(() => db),
      metrics: privateModuleMetrics('test_'),
      log: silent,
      version: 'test',
    });
    extra.push(late);
    await late.start();
    await late.drained();
    expect(siem.requests).toBe(0);
  });
});

describe('SIEM forwarding (splunk-hec)', () => {
  const TOKEN = '9c3e2b1a-6f4d-4e8a-b7c5-0d1e2f3a4b5c';
  /** HEC with TOKEN, no signature secret. */
  const hec = { SIEM_FORMAT: 'splunk-hec', SIEM_HEC_TOKEN: TOKEN, SIEM_WEBHOOK_SECRET: '' };

  it('speaks HEC: stacked event objects, Authorization: Splunk <token>, time in epoch seconds', async () => {
    const { log, lines } = capturingLogger();
    hub = await startForwarding(
      {
        SIEM_FORMAT: 'splunk-hec',
        SIEM_HEC_TOKEN: TOKEN,
        SIEM_HEC_INDEX: 'm365',
        SIEM_HEC_HOST: 'pi-site-1',
        SIEM_WEBHOOK_SECRET: '',
      },
      { format: 'splunk-hec', hecToken: TOKEN },
      { log },
    );
    await collect(30);
    await drained();
    expectEveryEventOnceInOrder();
    const batch = siem.accepted[0]!;
    expect(batch.headers.authorization).toBe(`Splunk ${TOKEN}`);
    expect(batch.headers['content-encoding']).toBe('gzip');
    expect(batch.headers['x-meshhub-signature']).toBeUndefined();
    const ts = hub.db
      .prepare('SELECT ts FROM audit_events WHERE seq = ?')
      .pluck()
      .get(Number(storedIds()[0]));
    expect(batch.hecObjects![0]).toEqual({
      time: (ts as number) / 1000,
      host: 'pi-site-1',
      source: 'meshhub:directory',
      sourcetype: 'meshhub:audit',
      index: 'm365',
      event: expect.objectContaining({ id: storedIds()[0], service: 'directory' }),
    });
    expect(lines.join('\n')).not.toContain(TOKEN);
  });

  it('holds on "Invalid token" (403, code 4) without skipping, and resumes once the token is right', async () => {
    hub = await startForwarding(hec, { format: 'splunk-hec', hecToken: 'the-right-token' });
    await collect(20);
    await waitFor(() => (state().status === 'held' ? true : undefined), 10_000, 'held');
    expect(String(state().last_error)).toContain('"code":4');
    expect(hub.db.prepare('SELECT count(*) FROM audit_siem_rejected').pluck().get()).toBe(0);
    (siem as unknown as { options: { hecToken: string } }).options.hecToken = TOKEN; // the admin fixes the token
    await drained();
    expectEveryEventOnceInOrder();
  });

  it('isolates an event HEC refuses with "Event field is required" (400, code 12)', async () => {
    hub = await startForwarding(hec, { format: 'splunk-hec', hecToken: TOKEN });
    await collect(20);
    const poison = storedIds()[6]!;
    siem.respond = (b) =>
      b.events.some((e) => e.id === poison)
        ? { status: 400, body: { text: 'Event field is required', code: 12, 'invalid-event-number': 0 } }
        : undefined;
    await drained();
    expect(siem.ids).toEqual(storedIds().filter((id) => id !== poison));
  });
});

describe('SIEM event JSON', () => {
  it('writes timestamps exactly as Date#toISOString, across days, before 1970 and past 9999', () => {
    const times = [
      Date.UTC(2026, 10, 3, 23, 59, 59, 999),
      Date.UTC(2026, 10, 4, 0, 0, 0, 0),
      Date.UTC(2026, 10, 4, 9, 5, 7, 45),
      Date.UTC(1969, 11, 31, 23, 59, 59, 1),
      -1,
      0,
      Date.UTC(2026, 10, 4, 9, 5, 7, 45),
      253_402_300_800_000, // +010000-01-01
    ];
    for (const ts of times) {
      const e: OutboxEvent = [
        7,
        'directory',
        'k',
        ts,
        's',
        'op',
        'success',
        'Succeeded',
        'a',
        't',
        '[]',
        ts,
        '{"x":1}',
      ];
      const parsed = JSON.parse(eventJson(e)) as Record<string, unknown>;
      expect(parsed).toMatchObject({ id: '7', timestamp: new Date(ts).toISOString(), raw: { x: 1 } });
      expect(parsed.ingested_at).toBe(new Date(ts).toISOString());
    }
  });

  it('escapes names and keeps only the string tags', () => {
    const e: OutboxEvent = [
      1,
      'directory',
      'k"1',
      0,
      'svc',
      'Add "x"\n',
      'failure',
      'Failed',
      'müller\u2028',
      '',
      '["a",2,"b"]',
      0,
      null,
    ];
    expect(JSON.parse(eventJson(e))).toMatchObject({
      source_id: 'k"1',
      operation: 'Add "x"\n',
      actor: 'müller\u2028',
      tags: ['a', 'b'],
      raw: null,
    });
  });
});
