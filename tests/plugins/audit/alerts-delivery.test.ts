/**
 * Where an alert goes once stored: MQTT `meshhub/audit/alerts` on the hub's own broker (a real
 * mqtt client on loopback; admins receive it, a non-admin is refused by name and filtered out of
 * a `meshhub/#` wildcard) and ALERT_WEBHOOK_URL (a loopback receiver: the alert as JSON, signed;
 * a failing or private receiver leaves the stored alert `failed`, counted in /metrics).
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { directoryAudit } from '../../fakes/microsoft/fixtures.js';
import { waitFor } from '../../helpers/hub.js';
import { connect, endClients, grantedQos } from '../../mqtt/helpers.js';
import { type AlertsHub, jsonBody, PASSWORD, startAlertsHub } from './alerts-hub.js';

const running: AlertsHub[] = [];
const servers: Server[] = [];
afterEach(async () => {
  await endClients();
  for (const h of running.splice(0)) await h.stop();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const EVERY_FAILURE = { name: 'Every failure', severity: 'critical', condition: { result: 'failure' } };
let n = 1000;
const failure = (user: string) =>
  directoryAudit(++n, Date.now() - 20 * 60_000, { activity: 'Add member to role', result: 'failure', user });

describe('alerts on MQTT', () => {
  it('reach admins on meshhub/audit/alerts; a non-admin is refused by name and filtered from meshhub/#', async () => {
    const h = await startAlertsHub({}, [
      { username: 'root', roles: ['admin'] },
      { username: 'homeassistant', roles: ['integration'] },
    ]);
    running.push(h);
    const admin = await connect(h.mqttUrl, { username: 'root', password: PASSWORD });
    const integration = await connect(h.mqttUrl, { username: 'homeassistant', password: PASSWORD });
    const seen = { admin: [] as Array<{ topic: string; payload: string }>, integration: [] as string[] };
    admin.on('message', (topic, payload) => seen.admin.push({ topic, payload: payload.toString() }));
    integration.on('message', (topic) => seen.integration.push(topic));
    expect(await grantedQos(admin, ['meshhub/audit/alerts'])).toEqual([0]);
    // By name: refused in the SUBACK (0x80), the connection stays.
    expect(await grantedQos(integration, ['meshhub/audit/alerts'])).toEqual([128]);
    expect(await grantedQos(integration, ['meshhub/audit/#'])).toEqual([128]);
    expect(await grantedQos(integration, ['meshhub/#'])).toEqual([0]);

    await h.call('/api/rules', jsonBody('POST', EVERY_FAILURE));
    h.fake.directoryAudits.push(failure('mallory@contoso.com'));
    await h.fetchNow();
    const [stored] = (await h.call('/api/alerts')).body.data;
    const message = await waitFor(
      () => seen.admin.find((m) => m.topic === 'meshhub/audit/alerts'),
      10_000,
      'the alert on MQTT',
    );
    expect(JSON.parse(message.payload)).toEqual(stored);

    // The broker delivers a client's messages in publish order: once the integration has a
    // reading published after the alert, the alert would have come before it.
    await admin.publishAsync(
      'meshhub/ingest/readings',
      JSON.stringify({ node_id: 'garden', temperature_c: 18.5 }),
      {
        qos: 1,
      },
    );
    await waitFor(
      () => seen.integration.includes('meshhub/readings/garden') || undefined,
      10_000,
      'the reading',
    );
    expect(seen.integration.filter((t) => t.startsWith('meshhub/audit/'))).toEqual([]);
    // Nobody but the hub publishes there: a forged alert closes the publisher's connection and reaches no one.
    integration.publish('meshhub/audit/alerts', '{"forged":true}');
    await waitFor(() => !integration.connected || undefined, 10_000, 'the forger disconnected');
    await admin.publishAsync(
      'meshhub/ingest/readings',
      JSON.stringify({ node_id: 'shed', temperature_c: 9 }),
      { qos: 1 },
    );
    await admin.subscribeAsync('meshhub/readings/shed');
    await waitFor(
      () => seen.admin.some((m) => m.topic === 'meshhub/readings/shed') || undefined,
      10_000,
      'shed',
    );
    expect(seen.admin.filter((m) => m.topic === 'meshhub/audit/alerts')).toHaveLength(1);
  });
});

interface Received {
  body: string;
  headers: IncomingMessage['headers'];
}

async function receiver(status: number): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString(), headers: req.headers });
      res.statusCode = status;
      res.end();
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/alerts`, received };
}

const SECRET = 'webhook-signing-secret-0123456789';

async function deliveryOf(h: AlertsHub, wanted: string) {
  return waitFor(
    async () => {
      const [alert] = (await h.call('/api/alerts')).body.data;
      return alert?.delivery === wanted ? alert : undefined;
    },
    10_000,
    `delivery ${wanted}`,
  );
}

describe('alerts to ALERT_WEBHOOK_URL', () => {
  it('posts each alert as JSON, signed with ALERT_WEBHOOK_SECRET, and records the delivery', async () => {
    const hook = await receiver(204);
    const h = await startAlertsHub({ ALERT_WEBHOOK_URL: hook.url, ALERT_WEBHOOK_SECRET: SECRET });
    running.push(h);
    await h.call('/api/rules', jsonBody('POST', EVERY_FAILURE));
    h.fake.directoryAudits.push(failure('mallory@contoso.com'));
    await h.fetchNow();
    const alert = await deliveryOf(h, 'delivered');
    expect(hook.received).toHaveLength(1);
    const [got] = hook.received;
    expect(got!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(got!.body)).toEqual({ ...alert, delivery: 'pending' });
    expect(got!.headers['x-meshhub-signature']).toBe(
      `sha256=${createHmac('sha256', SECRET).update(got!.body).digest('hex')}`,
    );
    const metrics = await (await fetch(`${h.base}/metrics`)).text();
    expect(metrics).toMatch(
      /meshhub_audit_alert_deliveries_total\{destination="webhook",outcome="delivered"\} 1/,
    );
    expect(metrics).toMatch(/meshhub_audit_alerts_fired_total\{severity="critical"\} 1/);
  });

  it('keeps the alert when the receiver fails: retried, then failed, logged and counted', async () => {
    const hook = await receiver(503);
    const h = await startAlertsHub({ ALERT_WEBHOOK_URL: hook.url, ALERT_WEBHOOK_MAX_RETRIES: '1' });
    running.push(h);
    await h.call('/api/rules', jsonBody('POST', EVERY_FAILURE));
    h.fake.directoryAudits.push(failure('mallory@contoso.com'));
    await h.fetchNow();
    const alert = await deliveryOf(h, 'failed');
    expect(alert.key).toBe('mallory@contoso.com');
    expect(hook.received).toHaveLength(2);
    expect(await (await fetch(`${h.base}/metrics`)).text()).toMatch(
      /meshhub_audit_alert_deliveries_total\{destination="webhook",outcome="failed"\} 1/,
    );
    const actor = (await h.call('/health')).body.actors.find(
      (a: { name: string }) => a.name === 'audit-alerts',
    );
    expect(actor.webhook.last_error).toBe('the receiver answered 503');
  });

  it('refuses a receiver on a private address before sending anything, keeping the alert', async () => {
    const h = await startAlertsHub({ ALERT_WEBHOOK_URL: 'https://10.20.30.40/hooks/alerts' });
    running.push(h);
    await h.call('/api/rules', jsonBody('POST', EVERY_FAILURE));
    h.fake.directoryAudits.push(failure('mallory@contoso.com'));
    await h.fetchNow();
    await deliveryOf(h, 'failed');
    const actor = (await h.call('/health')).body.actors.find(
      (a: { name: string }) => a.name === 'audit-alerts',
    );
    expect(actor.webhook.last_error).toBe(
      '10.20.30.40 is a non-public address; refused (ALERT_ALLOW_PRIVATE_NETWORK=true allows it)',
    );
  });

  it('does not follow a redirect', async () => {
    const target = await receiver(204);
    const redirect = createServer((_req, res) => {
      res.writeHead(307, { location: target.url });
      res.end();
    });
    servers.push(redirect);
    await new Promise<void>((r) => redirect.listen(0, '127.0.0.1', r));
    const h = await startAlertsHub({
      ALERT_WEBHOOK_URL: `http://127.0.0.1:${(redirect.address() as AddressInfo).port}/`,
      ALERT_WEBHOOK_MAX_RETRIES: '0',
    });
    running.push(h);
    await h.call('/api/rules', jsonBody('POST', EVERY_FAILURE));
    h.fake.directoryAudits.push(failure('mallory@contoso.com'));
    await h.fetchNow();
    await deliveryOf(h, 'failed');
    expect(target.received).toEqual([]);
  });
});
