/**
 * Upstream records from Microsoft's documentation samples → stored events.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalKey,
  normalizeRecord,
  normalizeResult,
  parseUpstreamTime,
} from '../../../plugins/audit/normalize.js';
import { directoryAudit, intuneAuditEvent, managementRecord } from '../../fakes/microsoft/fixtures.js';

const NOW = Date.UTC(2026, 0, 1);

describe('normalizeRecord', () => {
  it('reads a directoryAudit (Graph sample)', () => {
    const at = Date.UTC(2025, 0, 9, 21, 20, 2, 721);
    const out = normalizeRecord('directory', directoryAudit(1, at), NOW);
    expect(out).toMatchObject({
      ok: true,
      event: {
        source: 'directory',
        timestamp: at,
        service: 'directory',
        operation: 'Add member to group',
        result: 'success',
        resultRaw: 'success',
        actor: 'bob@wingtiptoysonline.com',
        target: 'Example.com; bob@contoso.com',
      },
    });
  });

  it('names a directory app initiator by its display name', () => {
    const out = normalizeRecord(
      'directory',
      directoryAudit(2, NOW - 1000, { app: 'Contoso Provisioning' }),
      NOW,
    );
    expect(out.ok && out.event.actor).toBe('Contoso Provisioning');
  });

  it('reads an Intune auditEvent with an offset timestamp; an Application actor is the application', () => {
    const at = Date.UTC(2025, 11, 31, 23, 59, 51, 636);
    const app = normalizeRecord(
      'device_management',
      intuneAuditEvent(1, at, { actorType: 'Application', app: 'Contoso MDM Sync' }),
      NOW,
    );
    expect(app).toMatchObject({
      ok: true,
      event: {
        timestamp: at,
        actor: 'Contoso MDM Sync',
        result: 'success',
        resultRaw: 'Success',
        target: 'Windows 10 baseline',
      },
    });
    const person = normalizeRecord(
      'device_management',
      intuneAuditEvent(1, at, { user: 'it@contoso.com' }),
      NOW,
    );
    expect(person.ok && person.event.actor).toBe('it@contoso.com');
  });

  it('reads Management API records: CreationTime is UTC without a zone; Workload names the service', () => {
    const at = Date.UTC(2025, 5, 29, 20, 3, 19);
    const exchange = normalizeRecord('exchange', managementRecord('Audit.Exchange', 1, at), NOW);
    expect(exchange).toMatchObject({
      ok: true,
      event: {
        timestamp: at,
        service: 'exchange',
        operation: 'MailItemsAccessed',
        result: 'success',
        resultRaw: 'Succeeded',
        actor: 'admin@contoso.onmicrosoft.com',
      },
    });
    const teams = normalizeRecord('teams', managementRecord('Audit.General', 2, at), NOW);
    expect(teams.ok && teams.event.service).toBe('teams');
    const noResult = normalizeRecord(
      'sharepoint',
      managementRecord('Audit.SharePoint', 3, at, { result: null }),
      NOW,
    );
    expect(noResult).toMatchObject({ ok: true, event: { result: 'unknown', resultRaw: '' } });
    const onedrive = normalizeRecord(
      'sharepoint',
      { ...managementRecord('Audit.SharePoint', 4, at), Workload: 'OneDrive' },
      NOW,
    );
    expect(onedrive.ok && onedrive.event.service).toBe('onedrive');
  });

  it('keys a record by its id (GUIDs lower-cased) or, without one, by its content', () => {
    const record = managementRecord('Audit.Exchange', 1, NOW - 1000, {
      id: '80C76BD2-9D81-4C57-A97A-ACCFC3443DCA',
    });
    const out = normalizeRecord('exchange', record, NOW);
    expect(out.ok && out.event.sourceKey).toBe('80c76bd2-9d81-4c57-a97a-accfc3443dca');
    const { Id: _id, ...anonymous } = record;
    const a = normalizeRecord('exchange', anonymous, NOW);
    const b = normalizeRecord('exchange', Object.fromEntries(Object.entries(anonymous).reverse()), NOW);
    expect(a.ok && a.event.sourceKey).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(a.ok && b.ok && a.event.sourceKey === b.event.sourceKey).toBe(true);
    expect(canonicalKey(' Directory_X ', {})).toBe(' Directory_X ');
  });

  it.each([
    ['not an object', 42, 'record is not a JSON object'],
    ['a list', [1], 'record is not a JSON object'],
    ['no timestamp', { id: 'x', activityDisplayName: 'Add user' }, 'record has no valid timestamp'],
    [
      'an impossible date',
      { id: 'x', activityDateTime: '2025-02-30T00:00:00Z' },
      'record has no valid timestamp',
    ],
    [
      'a far-future date',
      { id: 'x', activityDateTime: '2099-01-01T00:00:00Z' },
      'record has no valid timestamp',
    ],
    ['a number for a date', { id: 'x', activityDateTime: 1_700_000_000 }, 'record has no valid timestamp'],
  ])('refuses %s with a reason', (_name, record, reason) => {
    expect(normalizeRecord('directory', record, NOW)).toEqual({ ok: false, reason });
  });

  it('never throws on arbitrary input, and keeps fields within their limits', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('directory', 'device_management', 'exchange', 'sharepoint', 'teams' as const),
        fc.anything(),
        (source, record) => {
          const out = normalizeRecord(source, record, NOW);
          if (out.ok) {
            expect(out.event.actor.length).toBeLessThanOrEqual(512);
            expect(out.event.target.length).toBeLessThanOrEqual(1024);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('normalizeResult and parseUpstreamTime', () => {
  it.each([
    ['success', 'success'],
    ['Succeeded', 'success'],
    ['True', 'success'],
    ['failure', 'failure'],
    ['Failed', 'failure'],
    ['timeout', 'failure'],
    ['PartiallySucceeded', 'failure'],
    ['unknownFutureValue', 'unknown'],
    ['', 'unknown'],
  ])('%s → %s', (raw, expected) => {
    expect(normalizeResult(raw)).toBe(expected);
  });

  it('reads 7 fractional digits and offsets', () => {
    expect(parseUpstreamTime('2018-01-09T21:20:02.7215374Z', NOW)).toBe(Date.UTC(2018, 0, 9, 21, 20, 2, 721));
    expect(parseUpstreamTime('2016-12-31T23:59:51.6363086-08:00', NOW)).toBe(
      Date.UTC(2017, 0, 1, 7, 59, 51, 636),
    );
    expect(parseUpstreamTime('2015-06-29T20:03:19', NOW)).toBe(Date.UTC(2015, 5, 29, 20, 3, 19));
    expect(parseUpstreamTime('2015-06-29', NOW)).toBeUndefined();
  });
});
