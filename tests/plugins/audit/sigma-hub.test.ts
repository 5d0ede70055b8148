/**
 * Sigma rules as a person meets them: the whole hub with SIGMA_RULES_DIR (HTTP and MQTT on
 * loopback, events collected from the loopback Microsoft fake by a real fetch). A Sigma rule is
 * an alert rule in `GET /api/rules` that says which file it came from and cannot be changed
 * there; it fires into `GET /api/alerts` and `meshhub/audit/alerts` like any rule; refused rules
 * are listed by `GET /api/rules/sigma`. A bad folder stops `meshhub start` with one line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { directoryAudit } from '../../fakes/microsoft/fixtures.js';
import { startInHome } from '../../helpers/cli.js';
import { connect, endClients, grantedQos } from '../../mqtt/helpers.js';
import { type AlertsHub, jsonBody, PASSWORD, startAlertsHub } from './alerts-hub.js';

const running: AlertsHub[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await endClients();
  for (const h of running.splice(0)) await h.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function rulesDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-sigma-hub-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const ROLE_GRANT = `title: Role granted by an admin
id: 5b1e7c1a-7d0a-4c55-9d1e-2f5a3b1c0d01
description: A directory role was given.
level: high
logsource:
  product: azure
  service: auditlogs
detection:
  selection:
    properties.message: Add member to role
    Result: success
  filter:
    InitiatedBy.user.userPrincipalName|endswith: '@trusted.example'
  condition: selection and not filter
`;

const SIGN_INS = `title: Sign-ins from anywhere
id: 5b1e7c1a-7d0a-4c55-9d1e-2f5a3b1c0d02
logsource:
  product: azure
  service: signinlogs
detection:
  selection:
    ResultType: 0
  condition: selection
`;

async function waitFor<T>(get: () => T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no ${what}`);
}

describe('Sigma rules in the hub', () => {
  it('fire into /api/alerts and MQTT, are read-only rules that name their file, and refusals are listed', async () => {
    const dir = rulesDir({ 'role.yml': ROLE_GRANT, 'signins.yml': SIGN_INS, 'broken.yml': 'title: [' });
    const h = await startAlertsHub({ SIGMA_RULES_DIR: dir }, [{ username: 'root', roles: ['admin'] }]);
    running.push(h);

    const rules = (await h.call('/api/rules')).body.data;
    expect(rules).toHaveLength(1);
    const rule = rules[0];
    expect(rule).toMatchObject({
      name: 'Sigma: Role granted by an admin',
      severity: 'high',
      enabled: true,
      sigma: { file: 'role.yml', id: '5b1e7c1a-7d0a-4c55-9d1e-2f5a3b1c0d01' },
    });
    const put = await h.call(`/api/rules/${rule.id}`, jsonBody('PUT', { name: 'mine now', condition: {} }));
    expect(put.status).toBe(409);
    expect(put.body.detail).toMatch(/comes from the Sigma file role\.yml: change or remove the file/);
    expect((await h.call(`/api/rules/${rule.id}`, { method: 'DELETE' })).status).toBe(409);
    expect((await h.call(`/api/rules/${rule.id}`)).body.name).toBe('Sigma: Role granted by an admin');

    const report = await h.call('/api/rules/sigma');
    expect(report.status).toBe(200);
    expect(report.body.configured).toBe(true);
    expect(report.body.loaded).toEqual([
      {
        rule_id: rule.id,
        file: 'role.yml',
        title: 'Role granted by an admin',
        id: '5b1e7c1a-7d0a-4c55-9d1e-2f5a3b1c0d01',
      },
    ]);
    expect(report.body.refused).toEqual([
      { file: 'broken.yml', title: null, id: null, reason: expect.stringMatching(/^not valid YAML/) },
      {
        file: 'signins.yml',
        title: 'Sign-ins from anywhere',
        id: '5b1e7c1a-7d0a-4c55-9d1e-2f5a3b1c0d02',
        reason: expect.stringMatching(/sign-in logs are not collected/),
      },
    ]);

    const metrics = await (await fetch(`${h.base}/metrics`)).text();
    expect(metrics).toMatch(/meshhub_audit_sigma_rules\{state="loaded"\} 1\n/);
    expect(metrics).toMatch(/meshhub_audit_sigma_rules\{state="refused"\} 2\n/);

    const admin = await connect(h.mqttUrl, { username: 'root', password: PASSWORD });
    const seen: string[] = [];
    admin.on('message', (topic, payload) => {
      if (topic === 'meshhub/audit/alerts') seen.push(payload.toString());
    });
    expect(await grantedQos(admin, ['meshhub/audit/alerts'])).toEqual([0]);

    const at = Date.now() - 20 * 60_000;
    h.fake.directoryAudits.push(
      directoryAudit(9001, at, { activity: 'Add member to role', user: 'mallory@contoso.com' }),
      directoryAudit(9002, at, { activity: 'Add member to role', user: 'ops@trusted.example' }),
      directoryAudit(9003, at, {
        activity: 'Add member to role',
        result: 'failure',
        user: 'eve@contoso.com',
      }),
      directoryAudit(9004, at, { activity: 'Add member to group', user: 'bob@contoso.com' }),
    );
    await h.fetchNow();
    const alerts = (await h.call('/api/alerts')).body.data;
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      rule: { id: rule.id, name: 'Sigma: Role granted by an admin' },
      severity: 'high',
      key: 'mallory@contoso.com',
      event: { operation: 'Add member to role', actor: 'mallory@contoso.com' },
    });
    const message = await waitFor(() => seen[0], 'alert on MQTT');
    expect(JSON.parse(message)).toEqual(alerts[0]);
  });

  it('without SIGMA_RULES_DIR: no Sigma rules, and the report says it is not configured', async () => {
    const h = await startAlertsHub();
    running.push(h);
    expect((await h.call('/api/rules/sigma')).body).toEqual({ configured: false, loaded: [], refused: [] });
    expect((await h.call('/api/rules')).body.data).toEqual([]);
  });
});

describe('a bad SIGMA_RULES_DIR', () => {
  it('stops `meshhub start` with exit 1 and one line naming the setting, no stack trace', async () => {
    const home = mkdtempSync(join(tmpdir(), 'meshhub-sigma-cli-'));
    dirs.push(home);
    const result = await startInHome(home, {
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      MESH_API_PORT: '0',
      MQTT_PORT: '0',
      PLUGINS: 'audit',
      AUDIT_FETCH_ON_START: 'false',
      SIGMA_RULES_DIR: join(home, 'no-such-folder'),
    });
    expect(result.code).toBe(1);
    expect(result.err).toContain(
      `SIGMA_RULES_DIR: ${join(home, 'no-such-folder')} does not exist; point it at a folder of Sigma rule files (.yml) or unset it`,
    );
    expect(result.err).not.toMatch(/\n\s+at /);
  });
});
