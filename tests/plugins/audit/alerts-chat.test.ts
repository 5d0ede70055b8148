/**
 * Alerts where people look (issue 29): ALERT_TEAMS_WEBHOOK_URL gets an Adaptive Card in the
 * message shape Teams' incoming webhooks and Workflows take, ALERT_SLACK_WEBHOOK_URL gets Block
 * Kit with every event word mrkdwn-escaped. Loopback receivers check the payloads field by field;
 * a receiver that fails, hangs or times out never keeps another from its alert; the URLs (a token
 * in their path) appear in no log, /health, features report or start-up error.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { readableTime } from '../../../plugins/audit/alerts/chat-message.js';
import type { ApiAlert } from '../../../plugins/audit/alerts/schemas.js';
import { SLACK_LIMITS, slackMessage } from '../../../plugins/audit/alerts/slack.js';
import { loadAuditConfig } from '../../../plugins/audit/settings.js';
import { directoryAudit } from '../../fakes/microsoft/fixtures.js';
import { waitFor } from '../../helpers/hub.js';
import { type AlertsHub, jsonBody, startAlertsHub } from './alerts-hub.js';
import { auditConfigProblems, capturingLogger, startAuditCli } from './helpers.js';

const running: AlertsHub[] = [];
const servers: Server[] = [];
const scratch: string[] = [];
afterEach(async () => {
  for (const h of running.splice(0)) await h.stop();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

const TEAMS_TOKEN = 'teams-sig-TOKEN-4f2a9c';
const SLACK_TOKEN = 'slack-TOKEN-xoxb-77e1d0';
const HOSTILE = '<!channel> <http://evil|x> & co';
const CONSOLE = 'https://hub.example.org/';
const EVERY_FAILURE = { name: 'Every failure', severity: 'critical', condition: { result: 'failure' } };

let n = 5000;
const failure = (user: string) =>
  directoryAudit(++n, Date.now() - 20 * 60_000, { activity: 'Add member to role', result: 'failure', user });

type Answer = number | 'hang';
interface Receiver {
  url: string;
  received: unknown[];
  hanging: ServerResponse[];
}

/** A loopback receiver answering `answers` in turn (the last one repeats); `hang` never answers. */
async function receiver(path: string, answers: Answer[]): Promise<Receiver> {
  const received: unknown[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = answers[Math.min(received.length, answers.length - 1)]!;
      received.push(JSON.parse(Buffer.concat(chunks).toString()));
      if (answer === 'hang') {
        hanging.push(res);
        return;
      }
      res.statusCode = answer;
      res.end();
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`, received, hanging };
}

const teamsReceiver = (answers: Answer[]) =>
  receiver(`/workflows/${TEAMS_TOKEN}/triggers/manual/run`, answers);
const slackReceiver = (answers: Answer[]) => receiver(`/services/T0001/B0001/${SLACK_TOKEN}`, answers);

async function alertDelivered(h: AlertsHub, wanted: string) {
  return waitFor(
    async () => {
      const [alert] = (await h.call('/api/alerts')).body.data;
      return alert?.delivery === wanted ? (alert as ApiAlert) : undefined;
    },
    15_000,
    `delivery ${wanted}`,
  );
}

async function fire(h: AlertsHub, actor = 'mallory@contoso.com') {
  expect((await h.call('/api/rules', jsonBody('POST', EVERY_FAILURE))).status).toBe(201);
  h.fake.directoryAudits.push(failure(actor));
  await h.fetchNow();
}

const metrics = async (h: AlertsHub) => (await fetch(`${h.base}/metrics`)).text();
const alertsActor = async (h: AlertsHub) =>
  (await h.call('/health')).body.actors.find((a: { name: string }) => a.name === 'audit-alerts');

interface Card {
  type: string;
  attachments: Array<{
    contentType: string;
    contentUrl: null;
    content: {
      $schema: string;
      type: string;
      version: string;
      body: Array<{ type: string; text?: string; facts?: Array<{ title: string; value: string }> }>;
      actions?: Array<{ type: string; title: string; url: string }>;
    };
  }>;
}

interface SlackBody {
  text: string;
  blocks: Array<{
    type: string;
    text?: { type: string; text: string; emoji?: boolean };
    fields?: Array<{ type: string; text: string }>;
    elements?: Array<{ type: string; text: string }>;
  }>;
}

/** Slack's limits and block types, whatever the alert held. */
function expectValidSlack(body: SlackBody): void {
  expect(typeof body.text).toBe('string');
  expect(body.blocks.map((b) => b.type)).toEqual(['header', 'section', 'context']);
  const [header, section, context] = body.blocks;
  expect(header!.text!.type).toBe('plain_text');
  expect(header!.text!.text.length).toBeLessThanOrEqual(SLACK_LIMITS.header);
  expect(section!.text!.type).toBe('mrkdwn');
  expect(section!.text!.text.length).toBeLessThanOrEqual(SLACK_LIMITS.sectionText);
  expect(section!.fields!.length).toBeLessThanOrEqual(SLACK_LIMITS.fields);
  for (const f of section!.fields!) {
    expect(f.type).toBe('mrkdwn');
    expect(f.text.length).toBeLessThanOrEqual(SLACK_LIMITS.field);
  }
  expect(context!.elements!.every((e) => e.type === 'mrkdwn')).toBe(true);
}

/** A hub sending to a Teams receiver that answers and a Slack one that never does; no retries. */
async function hangingSlack(timeoutMs: string, dataDir?: string) {
  const teams = await teamsReceiver([200]);
  const slack = await slackReceiver(['hang']);
  const h = await startAlertsHub(
    {
      ALERT_TEAMS_WEBHOOK_URL: teams.url,
      ALERT_SLACK_WEBHOOK_URL: slack.url,
      ALERT_WEBHOOK_TIMEOUT_MS: timeoutMs,
      ALERT_WEBHOOK_MAX_RETRIES: '0',
    },
    [],
    dataDir ? { dataDir } : {},
  );
  running.push(h);
  await fire(h);
  return { h, teams, slack };
}

/** Waits until Teams has its alert (delivered, counted) while Slack holds its request. */
async function teamsDoneSlackHanging<T extends Awaited<ReturnType<typeof hangingSlack>>>(
  sent: T,
): Promise<T> {
  const { h, teams, slack } = sent;
  await waitFor(
    () => (teams.received.length === 1 && slack.hanging.length === 1) || undefined,
    15_000,
    'both sent',
  );
  await waitFor(
    async () => /destination="teams",outcome="delivered"\} 1/.test(await metrics(h)) || undefined,
    15_000,
    'teams delivered',
  );
  return sent;
}

describe('alerts to Microsoft Teams and Slack', () => {
  it('posts an Adaptive Card and Block Kit, a hostile actor name escaped, and records both deliveries', async () => {
    const teams = await teamsReceiver([200]);
    const slack = await slackReceiver([200]);
    const { log, lines } = capturingLogger();
    const h = await startAlertsHub(
      { ALERT_TEAMS_WEBHOOK_URL: teams.url, ALERT_SLACK_WEBHOOK_URL: slack.url, ALERT_CONSOLE_URL: CONSOLE },
      [],
      { log },
    );
    running.push(h);
    await fire(h, HOSTILE);
    const alert = await alertDelivered(h, 'delivered');
    expect(alert.event.actor).toBe(HOSTILE);
    const link = `https://hub.example.org/audit?event=${alert.event.id}`;

    // Teams: the documented message shape, an AdaptiveCard 1.4 of known element types.
    expect(teams.received).toHaveLength(1);
    const card = teams.received[0] as Card;
    expect(card.type).toBe('message');
    expect(card.attachments).toHaveLength(1);
    const [attachment] = card.attachments;
    expect(attachment!.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(attachment!.contentUrl).toBeNull();
    const content = attachment!.content;
    expect(content.$schema).toBe('http://adaptivecards.io/schemas/adaptive-card.json');
    expect(content.type).toBe('AdaptiveCard');
    expect(content.version).toBe('1.4');
    expect(content.body.map((e) => e.type)).toEqual(['TextBlock', 'TextBlock', 'FactSet']);
    expect(content.body[0]!.text).toBe('Alert: Every failure');
    const facts = Object.fromEntries(content.body[2]!.facts!.map((f) => [f.title, f.value]));
    expect(Object.keys(facts)).toEqual([
      'Severity',
      'When',
      'Actor',
      'Operation',
      'Service',
      'Tenant',
      'Result',
      'Target',
    ]);
    expect(facts).toMatchObject({
      Severity: 'critical',
      When: readableTime(alert.event.timestamp),
      Operation: alert.event.operation,
      Service: alert.event.service,
      Tenant: 'default',
      Result: 'failure',
    });
    // Markdown punctuation is escaped: the name shows as written and makes no link.
    expect(facts.Actor).toBe('\\<!channel\\> \\<http://evil|x\\> & co');
    expect(content.actions).toEqual([
      { type: 'Action.OpenUrl', title: 'Open the event in the console', url: link },
    ]);

    // Slack: Block Kit within its limits; the name escaped everywhere (no mention, no link).
    expect(slack.received).toHaveLength(1);
    const message = slack.received[0] as SlackBody;
    expectValidSlack(message);
    const escaped = '&lt;!channel&gt; &lt;http://evil|x&gt; &amp; co';
    const actorField = message.blocks[1]!.fields!.find((f) => f.text.startsWith('*Actor*'));
    expect(actorField!.text).toBe(`*Actor*\n${escaped}`);
    expect(message.text).toContain(escaped);
    expect(message.blocks[0]!.text).toEqual({
      type: 'plain_text',
      text: 'Alert: Every failure',
      emoji: false,
    });
    const context = message.blocks[2]!.elements![0]!.text;
    expect(context).toContain(`<${link}|Open the event in the console>`);
    const mrkdwn = [
      message.text,
      message.blocks[1]!.text!.text,
      ...message.blocks[1]!.fields!.map((f) => f.text),
      context.replace(`<${link}|Open the event in the console>`, ''),
    ];
    for (const text of mrkdwn) expect(text).not.toMatch(/[<>]/);

    const counted = await metrics(h);
    expect(counted).toMatch(
      /meshhub_audit_alert_deliveries_total\{destination="teams",outcome="delivered"\} 1/,
    );
    expect(counted).toMatch(
      /meshhub_audit_alert_deliveries_total\{destination="slack",outcome="delivered"\} 1/,
    );
    const features = (await h.call('/api/config/features')).body;
    expect(features.alerts).toMatchObject({
      webhook: 'not_configured',
      teams: 'configured',
      slack: 'configured',
    });
    const health = await h.call('/health');
    for (const shown of [JSON.stringify(features), JSON.stringify(health.body), lines.join('\n')]) {
      expect(shown).not.toContain(TEAMS_TOKEN);
      expect(shown).not.toContain(SLACK_TOKEN);
    }
  });

  it('retries a receiver that answered 500, and leaves no URL in the log', async () => {
    const teams = await teamsReceiver([500, 200]);
    const slack = await slackReceiver([200]);
    const { log, lines } = capturingLogger();
    const h = await startAlertsHub(
      {
        ALERT_TEAMS_WEBHOOK_URL: teams.url,
        ALERT_SLACK_WEBHOOK_URL: slack.url,
        ALERT_WEBHOOK_MAX_RETRIES: '1',
      },
      [],
      { log },
    );
    running.push(h);
    await fire(h);
    await alertDelivered(h, 'delivered');
    expect(teams.received).toHaveLength(2);
    expect(teams.received[1]).toEqual(teams.received[0]);
    expect(slack.received).toHaveLength(1);
    // Without ALERT_CONSOLE_URL the card has no link.
    expect((teams.received[0] as Card).attachments[0]!.content.actions).toBeUndefined();
    const failed = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'alert delivery failed');
    expect(failed).toMatchObject({ destination: 'teams', err: 'the receiver answered 500', final: false });
    const logged = lines.join('\n');
    expect(logged).not.toContain(TEAMS_TOKEN);
    expect(logged).not.toContain(SLACK_TOKEN);
  });

  it('delivers to Teams while Slack has not answered', async () => {
    const { h } = await teamsDoneSlackHanging(await hangingSlack('120000'));
    // Slack still holds its request: the alert waits for it, Teams did not.
    const [pending] = (await h.call('/api/alerts')).body.data;
    expect(pending.delivery).toBe('pending');
  });

  it('after a restart, sends a pending alert only to the destination that had not answered', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-chat-restart-'));
    scratch.push(dataDir);
    const { teams } = await teamsDoneSlackHanging(await hangingSlack('120000', dataDir));
    // Stopped while Slack still holds the request: the alert stays pending for Slack.
    await running.pop()!.stop();

    const slack = await slackReceiver([200]);
    const second = await startAlertsHub(
      { ALERT_TEAMS_WEBHOOK_URL: teams.url, ALERT_SLACK_WEBHOOK_URL: slack.url },
      [],
      { dataDir },
    );
    running.push(second);
    await alertDelivered(second, 'delivered');
    expect(slack.received).toHaveLength(1);
    expect(teams.received).toHaveLength(1);
  });

  it('counts a receiver that times out as failed, the other destination delivered', async () => {
    const { h } = await hangingSlack('300');
    await alertDelivered(h, 'failed');
    const counted = await metrics(h);
    expect(counted).toMatch(/destination="teams",outcome="delivered"\} 1/);
    expect(counted).toMatch(/destination="slack",outcome="failed"\} 1/);
    const actor = await alertsActor(h);
    expect(actor.teams).toEqual({ queued: 0, last_error: null });
    expect(actor.slack.last_error).toMatch(/timeout|aborted/i);
    expect(actor.webhook).toBe('off');
  });
});

describe('Slack limits', () => {
  it('holds header, section, field and fields limits for the longest names, never splitting an escape', () => {
    const long = '<&>'.repeat(2_000);
    const alert: ApiAlert = {
      id: '7',
      rule: { id: '1', name: `R${'x'.repeat(500)}` },
      severity: 'high',
      fired_at: '2026-11-29T01:00:00.000Z',
      key: long,
      match_count: 12,
      window: '1h',
      event: {
        id: '42',
        timestamp: '2026-11-29T00:59:00.000Z',
        service: long,
        operation: long,
        result: 'failure',
        actor: long,
        target: long,
        tenant: 'contoso',
      },
      delivery: 'pending',
    };
    const message = slackMessage(alert, 'https://hub.example.org');
    expectValidSlack(message);
    const fields = message.blocks[1]!.fields!.map((f) => f.text);
    expect(fields).toContain('*Threshold*\n12 matching events within 1h');
    for (const text of [message.text, message.blocks[1]!.text!.text, ...fields]) {
      expect(text).not.toMatch(/[<>]/);
      // A cut ends with …, never inside `&amp;`, `&lt;` or `&gt;`.
      expect(text).not.toMatch(/&(a|am|l|g|lt|gt|amp)?…$/);
    }
  });
});

describe('a bad Teams or Slack URL at start-up', () => {
  it('`meshhub start` exits 1 with one plain line naming the setting, never the URL', () => {
    const dir = mkdtempSync(join(tmpdir(), 'meshhub-chat-'));
    scratch.push(dir);
    const result = startAuditCli(dir, {
      HTTP_HOST: '127.0.0.1',
      ALERTS_ENABLED: 'true',
      ALERT_SLACK_WEBHOOK_URL: `http://hooks.slack.example/services/T0001/B0001/${SLACK_TOKEN}`,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(
      'meshhub: ALERT_SLACK_WEBHOOK_URL: must use https (plain http only to a loopback host)\n',
    );
    expect(result.stdout + result.stderr).not.toContain(SLACK_TOKEN);
  });
});

describe('the Teams and Slack settings', () => {
  const teamsUrl = `https://contoso.webhook.office.com/webhookb2/${TEAMS_TOKEN}`;

  it('name the setting and what is wrong, never the URL', () => {
    const problems = auditConfigProblems({
      ALERT_ALLOWED_HOSTS: '*.webhook.office.com',
      ALERT_TEAMS_WEBHOOK_URL: teamsUrl,
      ALERT_SLACK_WEBHOOK_URL: `https://hooks.slack.com/services/T0001/B0001/${SLACK_TOKEN}`,
      ALERT_CONSOLE_URL: 'ftp://hub.example.org',
    });
    expect(problems).toEqual([
      'ALERT_SLACK_WEBHOOK_URL: host hooks.slack.com is not in the allowlist',
      'ALERT_CONSOLE_URL: expected the console’s http(s) address as people open it, e.g. https://hub.example.org (got "ftp://hub.example.org")',
    ]);
    expect(auditConfigProblems({ ALERT_TEAMS_WEBHOOK_URL: 'not a url' })).toEqual([
      'ALERT_TEAMS_WEBHOOK_URL: is not an absolute URL',
    ]);
  });

  it('keep the URLs out of the config as logged or shown', () => {
    const c = loadAuditConfig({
      ALERT_TEAMS_WEBHOOK_URL: teamsUrl,
      ALERT_SLACK_WEBHOOK_URL: `https://hooks.slack.com/services/T0001/B0001/${SLACK_TOKEN}`,
    });
    expect(c.alerts.teams?.reveal()).toBe(teamsUrl);
    const shown = `${inspect(c, { depth: 10 })}${JSON.stringify(c)}`;
    expect(shown).not.toContain(TEAMS_TOKEN);
    expect(shown).not.toContain(SLACK_TOKEN);
  });
});
