/**
 * Regenerates the README's screenshots (docs/dashboard.png, docs/offline-map.png, docs/node-page.png,
 * and the mesh insight pages: mesh-links, node-health, notifications, packets): a hub on the
 * simulator with a day of history, photographed in headless Chromium. `npm run screenshot`.
 * Then docs/audit-console.png: a second hub with PLUGINS=audit and a day of audit events shaped
 * like Microsoft's (Graph directory and Intune audits, Management API records), some tagged.
 * `npm run screenshot -- audit` makes only that one.
 *
 * The browser talks only to this hub: requests to other hosts are blocked, so the map shows
 * the offline background (its world layer and grid) unless MAP_TILES names a local .pmtiles/.mbtiles
 * file, whose tiles the hub serves. SCREENSHOT_ONLINE=1 lets online tiles through.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Browser, Page } from 'playwright-core';
import { createHub, type Hub } from '../hub/main.js';
import { loadConfig } from '../hub/settings.js';
import { normalizeRecord } from '../plugins/audit/normalize.js';
import type { SourceName } from '../plugins/audit/sources.js';
import { openAuditRepositories } from '../plugins/audit/store/audit-store.js';
import { HubUserService } from '../src/auth/user-service.js';
import { projectRoot } from '../src/version.js';
import { findChromium, launchHeadlessChromium } from './bench/lib/chromium.js';
import { auditHubEnv } from './bench/lib/hub-env.js';
import { startInProcessHub } from './bench/lib/in-process-hub.js';
import { prng } from './bench/lib/readings.js';

const CHROMIUM = findChromium();

const launch = () => launchHeadlessChromium(CHROMIUM);

async function main(): Promise<void> {
  if (!CHROMIUM) throw new Error('Chromium not found: apt-get install -y chromium (or set CHROMIUM_PATH)');
  const out = join(projectRoot(), 'docs');
  mkdirSync(out, { recursive: true });
  if (process.argv.slice(2).includes('audit')) {
    const browser = await launch();
    try {
      await auditConsole(browser, out);
    } finally {
      await browser.close();
    }
    return;
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-screenshot-'));
  const config = loadConfig({
    ...process.env,
    DATA_DIR: dataDir,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    MQTT_PORT: '0',
    RADIO: 'sim',
    SIM_PORT: '0',
    SIM_BACKFILL: '24h',
    // Fresh readings every 10 s, so a notification rule fires within the screenshot's wait.
    SIM_TELEMETRY_SECONDS: '10',
    LOG_LEVEL: 'silent',
  });
  const hub = await createHub(config, { log: pino({ level: 'silent' }), defaultMetrics: false });
  await hub.start();
  const base = `http://127.0.0.1:${hub.http.port}`;
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 760 }, deviceScaleFactor: 1 });
    if (process.env.SCREENSHOT_ONLINE !== '1') {
      await page.route(
        (url) => url.hostname !== '127.0.0.1',
        (route) => route.abort('internetdisconnected'),
      );
    }
    // Wait until the simulated nodes are known and their readings are in.
    for (let i = 0; i < 100; i++) {
      const { data } = (await (await fetch(`${base}/api/v1/weather/latest`)).json()) as { data: unknown[] };
      if (data.length >= 6) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await page.goto(`${base}/`);
    await page.locator('.node-marker').nth(5).waitFor();
    await page.waitForTimeout(800);
    // The node with the most kinds of readings that has a position: the richest tooltip.
    const nodes = (await (await fetch(`${base}/api/v1/nodes`)).json()) as {
      data: Array<{ node_id: string; latitude?: number }>;
    };
    const latest = (await (await fetch(`${base}/api/v1/weather/latest`)).json()) as {
      data: Array<Record<string, unknown>>;
    };
    const placed = new Set(nodes.data.filter((n) => n.latitude !== undefined).map((n) => n.node_id));
    const richest = latest.data
      .filter((r) => placed.has(r.node_id as string))
      .sort((a, b) => Object.keys(b).length - Object.keys(a).length)[0];
    const station = page.locator(`.node-marker[data-node-id="${richest?.node_id as string}"]`);
    await station.hover();
    await page.locator('.map-tooltip').waitFor();
    await page.screenshot({ path: join(out, 'dashboard.png') });
    if (process.env.SCREENSHOT_ONLINE !== '1') {
      // No internet: the map's built-in world layer (land, lakes, borders, towns), zoomed out.
      await page.mouse.move(5, 5);
      for (let i = 0; i < 6; i++) {
        await page.locator('.leaflet-control-zoom-out').click();
        await page.waitForTimeout(300);
      }
      await page.screenshot({ path: join(out, 'offline-map.png') });
    }

    const nodeId = await station.getAttribute('data-node-id');
    // The page scrolls inside <main>, not the document: a tall window shows every chart.
    await page.setViewportSize({ width: 1280, height: 1360 });
    await page.goto(`${base}/nodes/${nodeId}`);
    await page.locator('figure.chart canvas').first().waitFor();
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(out, 'node-page.png') });
    process.stdout.write(`wrote ${join(out, 'dashboard.png')} and ${join(out, 'node-page.png')}\n`);
    await meshInsight(hub, base, page, out);
    await auditConsole(browser, out);
  } finally {
    await browser.close();
    await hub.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The simulator's node that answers texts and traceroutes (SIM_SEED=1). */
const ANSWERING_NODE = '!c636b938';

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`screenshot: gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * docs/mesh-links.png (links by SNR and a traceroute's path), docs/node-health.png (device health,
 * traceroutes, neighbours), docs/packets.png and docs/notifications.png, signed in as an admin.
 */
async function meshInsight(hub: Hub, base: string, page: Page, out: string): Promise<void> {
  const password = 'screenshot-password';
  await new HubUserService(hub.store.db).add({ username: 'operator', password, roles: ['admin'] });
  const login = (await (
    await fetch(`${base}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'operator', password }),
    })
  ).json()) as { access_token: string; refresh_token: string };
  const auth = { authorization: `Bearer ${login.access_token}`, 'content-type': 'application/json' };
  await until('neighbour links', async () => {
    const { data } = (await (await fetch(`${base}/api/v1/links`)).json()) as { data: unknown[] };
    return data.length >= 6 ? true : undefined;
  });
  const sent = (await (
    await fetch(`${base}/api/v1/nodes/${ANSWERING_NODE}/traceroute`, {
      method: 'POST',
      headers: auth,
      body: '{}',
    })
  ).json()) as { id: string };
  const answer = await until('the traceroute answer', async () => {
    const trace = (await (await fetch(`${base}/api/v1/traceroutes/${sent.id}`)).json()) as { status: string };
    return trace.status === 'pending' ? undefined : trace;
  });
  if (answer.status !== 'answered')
    throw new Error(`screenshot: the traceroute was ${JSON.stringify(answer)}`);
  for (const rule of [
    {
      name: 'Too warm for the cellar',
      kind: 'reading_out_of_range',
      metric: 'temperature_c',
      min: -20,
      max: 0,
    },
    { name: 'Node silent', kind: 'node_offline', minutes: 30 },
    { name: 'Battery low', kind: 'battery_low', threshold: 20 },
  ]) {
    await fetch(`${base}/api/v1/notifications/rules`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify(rule),
    });
  }
  const session = {
    token: login.access_token,
    refreshToken: login.refresh_token,
    username: 'operator',
    expiresAt: Date.now() + 600_000,
  };
  await page.addInitScript((saved) => {
    (
      globalThis as unknown as { sessionStorage: { setItem(k: string, v: string): void } }
    ).sessionStorage.setItem('meshhub.session', saved);
  }, JSON.stringify(session));

  await page.setViewportSize({ width: 1280, height: 760 });
  // The whole mesh with its links, and the path (no node focused: its card would cover the path).
  await page.goto(`${base}/?traceroute=${sent.id}`);
  await page.locator('path.mesh-trace').first().waitFor();
  await page.waitForTimeout(800);
  await page.screenshot({ path: join(out, 'mesh-links.png') });

  await page.setViewportSize({ width: 1280, height: 2300 });
  await page.goto(`${base}/nodes/${encodeURIComponent(ANSWERING_NODE)}`);
  await page.locator('[data-testid="traceroute"]').first().waitFor();
  await page.locator('figure.chart canvas').last().waitFor();
  await page.waitForTimeout(800);
  await page.screenshot({ path: join(out, 'node-health.png') });

  await page.setViewportSize({ width: 1280, height: 1000 });
  await until('a notification firing', async () => {
    const { data } = (await (
      await fetch(`${base}/api/v1/notifications/firings`, { headers: auth })
    ).json()) as {
      data: unknown[];
    };
    return data.length > 0 ? true : undefined;
  });
  await page.goto(`${base}/notifications`);
  await page.locator('[data-testid="firings"] li').first().waitFor();
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(out, 'notifications.png') });

  await page.setViewportSize({ width: 1280, height: 760 });
  await page.goto(`${base}/packets`);
  await page.locator('[data-testid="packet-row"]').nth(10).waitFor();
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(out, 'packets.png') });
  process.stdout.write(
    `wrote mesh-links.png, node-health.png, notifications.png and packets.png in ${out}\n`,
  );
}

const PEOPLE = [
  'anna.meier',
  'ben.rossi',
  'chloe.dubois',
  'david.novak',
  'emma.jensen',
  'felix.garcia',
  'grace.silva',
];
const OPERATIONS: Record<SourceName, string[]> = {
  directory: [
    'Add member to group',
    'Update user',
    'Reset user password',
    'Add member to role',
    'Consent to application',
  ],
  device_management: ['Wipe ManagedDevice', 'Create DeviceConfiguration', 'Assign DeviceCompliancePolicy'],
  exchange: ['MailItemsAccessed', 'New-InboxRule', 'Set-Mailbox', 'Send', 'HardDelete'],
  sharepoint: ['FileAccessed', 'FileDownloaded', 'SharingSet', 'AnonymousLinkCreated', 'FileDeleted'],
  teams: ['MemberAdded', 'TeamCreated', 'ChannelAdded'],
};
const WORKLOADS: Partial<Record<SourceName, string>> = {
  exchange: 'Exchange',
  sharepoint: 'SharePoint',
  teams: 'MicrosoftTeams',
};

/** A day of audit events as Microsoft's APIs send them, through the real normaliser. */
function auditRecords(
  count: number,
  now: number,
  prefix = 'shot',
): Array<{ source: SourceName; record: unknown }> {
  const rand = prng(11);
  const sources = Object.keys(OPERATIONS) as SourceName[];
  return Array.from({ length: count }, (_, i) => {
    const source = sources[Math.floor(rand() ** 1.5 * sources.length)]!;
    const ops = OPERATIONS[source];
    const operation = ops[Math.floor(rand() * ops.length)]!;
    const user = `${PEOPLE[Math.floor(rand() * PEOPLE.length)]}@contoso.com`;
    const failed = i === 1 || i === 4 || rand() < 0.06;
    const at = new Date(now - i * 11 * 60_000 - Math.floor(rand() * 600_000)).toISOString();
    const id = `${prefix}-${i}`;
    if (source === 'directory')
      return {
        source,
        record: {
          id,
          activityDateTime: at,
          activityDisplayName: operation,
          category: 'UserManagement',
          result: failed ? 'failure' : 'success',
          initiatedBy: { user: { userPrincipalName: user, ipAddress: '198.51.100.7' } },
          targetResources: [{ displayName: i % 3 ? 'Finance team' : 'Global Administrator' }],
        },
      };
    if (source === 'device_management')
      return {
        source,
        record: {
          id,
          activityDateTime: at,
          activity: operation,
          activityResult: failed ? 'Failure' : 'Success',
          actor: { auditActorType: 'ItPro', userPrincipalName: user },
          resources: [{ displayName: `LAPTOP-${(1000 + i).toString(36).toUpperCase()}` }],
        },
      };
    return {
      source,
      record: {
        CreationTime: at.slice(0, 19),
        Id: id,
        Operation: operation,
        ResultStatus: failed ? 'Failed' : 'Succeeded',
        UserId: user,
        Workload: WORKLOADS[source],
        ObjectId:
          source === 'exchange'
            ? `${user}/Inbox`
            : source === 'teams'
              ? 'Finance team'
              : `https://contoso.sharepoint.com/sites/finance/Q${(i % 4) + 1}-report.xlsx`,
      },
    };
  });
}

/**
 * docs/audit-console.png: the console's search over a day of events, a few tagged, opened from a
 * saved search (the list unfolded); docs/audit-timeline.png: one actor's two weeks.
 */
async function auditConsole(browser: Browser, out: string): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshhub-screenshot-audit-'));
  const env = auditHubEnv(dataDir, {
    RADIO: 'sim',
    SIM_PORT: '0',
    SIM_BACKFILL: '1h',
    ALERTS_ENABLED: 'true',
  });
  const hub = await startInProcessHub(env);
  try {
    const now = Date.now();
    const days = Array.from({ length: 13 }, (_, d) =>
      auditRecords(12 + ((d * 17) % 31), now - (d + 2) * 86_400_000 - d * 3_600_000, `day${d + 2}`),
    );
    const events = [...auditRecords(140, now), ...days.flat()].map(({ source, record }) => {
      const outcome = normalizeRecord(source, record, now + 60_000);
      if (!outcome.ok) throw new Error(outcome.reason);
      return outcome.event;
    });
    openAuditRepositories(hub.store.db).writer.writeNow(events);
    const base = `http://127.0.0.1:${hub.http.port}`;
    const { data } = (await (await fetch(`${base}/api/events?limit=20`)).json()) as {
      data: Array<{ id: string; result: string }>;
    };
    const tag = (id: string, tags: string[]) =>
      fetch(`${base}/api/events/${id}/tags`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tags }),
      });
    for (const [i, e] of data.entries()) {
      if (e.result === 'failure') await tag(e.id, ['incident-7']);
      else if (i % 4 === 1) await tag(e.id, ['reviewed']);
    }
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 });
    await page.route(
      (url) => url.hostname !== '127.0.0.1',
      (route) => route.abort('internetdisconnected'),
    );
    const save = async (name: string, filters: Record<string, unknown>) => {
      const res = await fetch(`${base}/api/saved-searches`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name, filters }),
      });
      if (res.status !== 201) throw new Error(`saving "${name}" answered ${res.status}`);
      return ((await res.json()) as { id: number }).id;
    };
    const opened = await save('Last 24 hours, Entra ID and Exchange', {
      services: ['Entra ID', 'Exchange'],
      last: '24h',
    });
    await save('Failures this week', { result: 'failure', last: '7d' });
    await save('Finance site files', { services: ['SharePoint'], last: '7d' });
    await page.goto(`${base}/audit?saved=${opened}&limit=25`);
    await page.locator('[data-testid="audit-events"] tbody tr').nth(10).waitFor();
    await page.locator('[data-testid="saved-searches"] summary').click();
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(out, 'audit-console.png') });
    process.stdout.write(`wrote ${join(out, 'audit-console.png')}\n`);

    await page.goto(`${base}/audit/timeline?actor=${encodeURIComponent(`${PEOPLE[0]}@contoso.com`)}&days=14`);
    await page.locator('[data-testid="timeline-chart"]').waitFor();
    await page.locator('[data-testid="audit-events"] tbody tr').nth(5).waitFor();
    await page.waitForTimeout(300);
    await page.screenshot({ path: join(out, 'audit-timeline.png') });
    process.stdout.write(`wrote ${join(out, 'audit-timeline.png')}\n`);
  } finally {
    await hub.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`screenshot: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
