/**
 * Issue 23, finding 3: PRIVACY_SERVICES takes the names the README promises — product names
 * (`Intune`, `Entra ID`) as well as the stored keys — through the plugin's one service-name
 * mapping. `PRIVACY_SERVICES="Intune,Entra ID"` hides device management and directory events from
 * a caller without a PRIVACY_SERVICE_ROLES role in search, a single event, export, filter
 * options, ask and explain (MCP: mcp.test.ts); an unknown name stops the start, listing the
 * known ones.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAuditConfig } from '../../../plugins/audit/settings.js';
import { type AuditTestApp, auditConfigProblems, idpAuditApp, NO_RATE_LIMITS, seed } from './helpers.js';
import { type LocalIdp, withBearer } from './idp.js';

const T0 = Date.now() - 3_600_000;
let idp: LocalIdp;
let t: AuditTestApp;
let auditor: string;
let officer: string;

const seqOf = (service: string) =>
  String(t.db.prepare('SELECT seq FROM audit_events WHERE service = ?').pluck().get(service));
const actors = (body: { data: Array<{ actor: string }> }) => body.data.map((e) => e.actor).sort();

beforeAll(async () => {
  ({ idp, t } = await idpAuditApp({
    PRIVACY_SERVICES: 'Intune,Entra ID',
    PRIVACY_SERVICE_ROLES: 'privacy-officer',
    AI_FEATURES_ENABLED: 'true',
    ...NO_RATE_LIMITS,
  }));
  seed(t.repos, [
    { source: 'directory', at: T0, operation: 'Add user', actor: 'dora@contoso.com' },
    { at: T0 + 1000, service: 'Device Management', operation: 'Wipe device', actor: 'ivan@contoso.com' },
    { at: T0 + 2000, service: 'Exchange', operation: 'Send', actor: 'eve@contoso.com' },
  ]);
  auditor = await idp.token({ roles: ['auditor'] });
  officer = await idp.token({ roles: ['auditor', 'privacy-officer'] });
});
afterAll(async () => {
  await t?.close();
  await idp?.stop();
});

describe('PRIVACY_SERVICES="Intune,Entra ID", a caller without the privacy role', () => {
  it('stores the names as the services’ keys', () => {
    expect(loadAuditConfig({ PRIVACY_SERVICES: 'Intune,Entra ID' }).privacy.services).toEqual([
      'device_management',
      'directory',
    ]);
  });

  it('does not find them in search, even by name', async () => {
    expect(actors((await t.json('/api/events', withBearer(auditor))).body)).toEqual(['eve@contoso.com']);
    for (const name of ['Intune', 'Entra ID', 'directory', 'device_management']) {
      expect(
        (await t.json(`/api/events?services=${encodeURIComponent(name)}`, withBearer(auditor))).body.data,
      ).toEqual([]);
    }
  });

  it('gets 403 for each of them by id, and for their explanation', async () => {
    for (const service of ['directory', 'device_management']) {
      const one = await t.json(`/api/events/${seqOf(service)}`, withBearer(auditor));
      expect(one.status).toBe(403);
      expect(one.body.detail).toMatch(/restricted/);
      expect(JSON.stringify(one.body)).not.toMatch(/dora|ivan/);
      const explain = await t.json(
        `/api/events/${seqOf(service)}/explain`,
        withBearer(auditor, { method: 'POST' }),
      );
      expect(explain.status).toBe(403);
    }
  });

  it('does not get them in CSV or JSON exports', async () => {
    const csv = await (await t.request('/api/events/export?format=csv', withBearer(auditor))).text();
    expect(csv).not.toMatch(/dora|ivan/);
    expect(csv.trim().split('\n')).toHaveLength(2);
    const json = await (await t.request('/api/events/export?format=json', withBearer(auditor))).json();
    expect(actors({ data: json as Array<{ actor: string }> })).toEqual(['eve@contoso.com']);
  });

  it('does not see them in the filter options', async () => {
    const { body } = await t.json('/api/filter-options', withBearer(auditor));
    expect(body.services).toEqual(['exchange']);
    expect(body.operations).toEqual(['Send']);
  });

  it('does not count or cite them in an ask, even one that names them', async () => {
    const ask = await t.json(
      '/api/ask',
      withBearer(auditor, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          question: 'what happened in the last day?',
          services: ['Intune', 'Entra ID', 'Exchange'],
        }),
      }),
    );
    expect(ask.status).toBe(200);
    expect(ask.body.total_matched).toBe(1);
    expect(JSON.stringify(ask.body)).not.toMatch(/dora|ivan|Wipe device|Add user/);
  });
});

describe('PRIVACY_SERVICES="Intune,Entra ID", a caller with the privacy role', () => {
  it('sees them everywhere', async () => {
    expect(actors((await t.json('/api/events', withBearer(officer))).body)).toEqual([
      'dora@contoso.com',
      'eve@contoso.com',
      'ivan@contoso.com',
    ]);
    expect((await t.json(`/api/events/${seqOf('device_management')}`, withBearer(officer))).status).toBe(200);
    expect((await t.json('/api/filter-options', withBearer(officer))).body.services).toEqual([
      'device_management',
      'directory',
      'exchange',
    ]);
  });
});

describe('PRIVACY_SERVICES names', () => {
  it('take product names and stored keys, in any case', () => {
    const services = (value: string) => loadAuditConfig({ PRIVACY_SERVICES: value }).privacy.services;
    expect(services('Exchange, SharePoint, OneDrive, Teams, Microsoft Teams')).toEqual([
      'exchange',
      'sharepoint',
      'onedrive',
      'teams',
    ]);
    expect(services('device_management,DIRECTORY,entra')).toEqual(['device_management', 'directory']);
  });

  it('refuse an unknown name, listing the known ones', () => {
    expect(auditConfigProblems({ PRIVACY_SERVICES: 'Intune,Yammer' })).toEqual([
      'PRIVACY_SERVICES: unknown service "Yammer"; known services: Entra ID (directory), Intune (device_management), Exchange, SharePoint, OneDrive, Teams (got "Intune,Yammer")',
    ]);
  });
});
