/**
 * Issue 14, defects 2 and 3: `/api/filter-options` gates tags and results as it gates
 * operations (a tag or result seen only on gated events is not shown to a caller without the
 * privacy role), and service names match as an administrator types them, with display names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditTestApp, idpAuditApp, jsonInit, NO_RATE_LIMITS, seed } from './helpers.js';
import { type LocalIdp, withBearer } from './idp.js';

const T0 = Date.UTC(2025, 4, 1);
let idp: LocalIdp;
let t: AuditTestApp;
let plain: string;
let privileged: string;

beforeAll(async () => {
  ({ idp, t } = await idpAuditApp({
    PRIVACY_SENSITIVE_OPERATIONS: 'MailItemsAccessed',
    PRIVACY_SERVICES: 'teams',
    PRIVACY_SERVICE_ROLES: 'Audit.Privacy',
    ...NO_RATE_LIMITS,
  }));
  seed(t.repos, [
    // Gated by operation, the only failure with a raw "Failed": result "failure" only here…
    { at: T0 + 1000, service: 'Exchange', operation: 'MailItemsAccessed', result: 'Failed' },
    // …and gated by service, the only "unknown" result.
    { at: T0 + 2000, service: 'MicrosoftTeams', operation: 'MemberAdded', result: 'Whatever' },
    { at: T0 + 3000, service: 'Exchange', operation: 'Send' },
    { at: T0 + 4000, service: 'SharePoint', operation: 'FileAccessed' },
    { at: T0 + 5000, service: 'Exchange', operation: 'Send' },
    { at: T0 + 6000, service: 'Exchange', operation: 'Send' },
    { at: T0 + 7000, service: 'Exchange', operation: 'Send' },
    { at: T0 + 8000, service: 'Exchange', operation: 'Send' },
    { at: T0 + 9000, service: 'Device Management', operation: 'Wipe device' },
  ]);
  privileged = await idp.token({ roles: ['admin', 'Audit.Privacy'] });
  plain = await idp.token({ roles: ['auditor'] });
  const tag = async (seq: number, tags: string[]) =>
    expect(
      (await t.json(`/api/events/${seq}/tags`, withBearer(privileged, jsonInit('PATCH', { tags })))).status,
    ).toBe(200);
  await tag(1, ['insider-case-17']); // only on a gated operation
  await tag(2, ['hr-review']); // only on a gated service
  await tag(3, ['reviewed']);
  await tag(1, ['insider-case-17', 'shared']);
  await tag(4, ['shared']);
});
afterAll(async () => {
  await t.close();
  await idp.stop();
});

describe('filter options for a caller without the privacy role', () => {
  it('leave out tags used only on gated events', async () => {
    const { body } = await t.json('/api/filter-options', withBearer(plain));
    expect(body.tags).toEqual(['reviewed', 'shared']);
  });

  it('leave out results seen only on gated events', async () => {
    const { body } = await t.json('/api/filter-options', withBearer(plain));
    expect(body.results).toEqual(['success']);
  });

  it('show every tag and result to the privileged caller', async () => {
    const { body } = await t.json('/api/filter-options', withBearer(privileged));
    expect(body.tags).toEqual(['hr-review', 'insider-case-17', 'reviewed', 'shared']);
    expect(body.results).toEqual(['failure', 'success', 'unknown']);
  });
});

describe('service names as an administrator types them', () => {
  it.each([
    ['exchange', 6],
    ['Exchange', 6],
    ['EXCHANGE', 6],
    ['SharePoint', 1],
    ['Device management', 1],
    ['device-management', 1],
    ['Intune', 1],
    ['Exchange,SharePoint', 7],
  ])('services=%s finds %i events', async (services, count) => {
    const res = await t.json(`/api/events?services=${encodeURIComponent(services)}`, withBearer(privileged));
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(count);
  });

  it('gates a service however it is typed', async () => {
    expect((await t.json('/api/events?services=Teams', withBearer(plain))).body.data).toEqual([]);
    expect(
      (await t.json('/api/events?services=Microsoft%20Teams', withBearer(privileged))).body.data,
    ).toHaveLength(1);
  });

  it('applies to export too', async () => {
    const csv = await (
      await t.request('/api/events/export?services=Exchange', withBearer(privileged))
    ).text();
    expect(csv.trim().split('\n')).toHaveLength(7);
  });

  it('shows display names in the filter options', async () => {
    const { body } = await t.json('/api/filter-options', withBearer(privileged));
    expect(body.services).toEqual(['device_management', 'exchange', 'sharepoint', 'teams']);
    expect(body.service_labels).toEqual({
      device_management: 'Device management (Intune)',
      exchange: 'Exchange',
      sharepoint: 'SharePoint',
      teams: 'Teams',
    });
  });

  it('still refuses what is not a service name, naming the field', async () => {
    const res = await t.json('/api/events?services=%3Bdrop', withBearer(privileged));
    expect(res.status).toBe(400);
    expect(res.body.errors[0].field).toMatch(/^services/);
  });
});
