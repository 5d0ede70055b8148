/**
 * Issue 29: the pivot keys each upstream record shape carries, as normalization extracts them
 * (plugins/audit/normalize.ts pivotFields), and the forms an IP address arrives in.
 */
import { describe, expect, it } from 'vitest';
import { normalizeIp, normalizeRecord } from '../../../plugins/audit/normalize.js';
import { directoryAudit, managementRecord, type Pivoted, signIn } from './timeline-records.js';

const AT = Date.UTC(2025, 4, 1, 12);
const GUID = '5F3A1C2E-0B4D-4E6F-8A9B-0C1D2E3F4A5B';

function pivots({ source, record }: Pivoted) {
  const outcome = normalizeRecord(source, record, Number.MAX_SAFE_INTEGER);
  if (!outcome.ok) throw new Error(outcome.reason);
  const { clientIp, correlationId, sessionId } = outcome.event;
  return { clientIp, correlationId, sessionId };
}

describe('pivot keys at normalization', () => {
  it('reads a Graph directoryAudit’s initiator IP and correlation id (GUIDs lower-cased)', () => {
    expect(
      pivots(directoryAudit({ at: AT, actor: 'adele@contoso.com', ip: '198.51.100.7', correlationId: GUID })),
    ).toEqual({ clientIp: '198.51.100.7', correlationId: GUID.toLowerCase(), sessionId: undefined });
  });

  it('reads a Graph signIn’s top-level ipAddress and correlationId', () => {
    expect(
      pivots(signIn({ at: AT, actor: 'adele@contoso.com', ip: '2001:DB8::1', correlationId: 'corr-1' })),
    ).toEqual({ clientIp: '2001:db8::1', correlationId: 'corr-1', sessionId: undefined });
  });

  it('reads an Intune auditEvent’s actor IP and correlation id', () => {
    const record = {
      id: 'dm-1',
      activityDateTime: new Date(AT).toISOString(),
      activity: 'Wipe device',
      activityResult: 'Success',
      correlationId: 'corr-dm',
      actor: { userPrincipalName: 'adele@contoso.com', ipAddress: '192.0.2.4' },
    };
    expect(pivots({ source: 'device_management', record })).toEqual({
      clientIp: '192.0.2.4',
      correlationId: 'corr-dm',
      sessionId: undefined,
    });
  });

  it('reads a Management Activity record’s ClientIP, CorrelationId and SessionId', () => {
    const r = managementRecord({
      at: AT,
      actor: 'adele@contoso.com',
      extra: { ClientIP: '203.0.113.9', CorrelationId: 'corr-sp', SessionId: 'sess-1' },
    });
    expect(pivots(r)).toEqual({ clientIp: '203.0.113.9', correlationId: 'corr-sp', sessionId: 'sess-1' });
  });

  it('falls back to ClientIPAddress and AppAccessContext (object or collection)', () => {
    const object = managementRecord({
      at: AT,
      actor: 'adele@contoso.com',
      extra: {
        ClientIPAddress: '[2001:db8::2]:443',
        AppAccessContext: { CorrelationId: 'corr-ctx', AADSessionId: 'aad-sess' },
      },
    });
    expect(pivots(object)).toEqual({
      clientIp: '2001:db8::2',
      correlationId: 'corr-ctx',
      sessionId: 'aad-sess',
    });
    const list = managementRecord({
      at: AT,
      actor: 'adele@contoso.com',
      extra: { ActorIpAddress: '203.0.113.10:51234', AppAccessContext: [{ AADSessionId: 'aad-2' }] },
    });
    expect(pivots(list)).toEqual({ clientIp: '203.0.113.10', correlationId: undefined, sessionId: 'aad-2' });
  });

  it('leaves out what a record does not carry', () => {
    expect(
      pivots(managementRecord({ at: AT, actor: 'adele@contoso.com', extra: { ClientIP: null } })),
    ).toEqual({ clientIp: undefined, correlationId: undefined, sessionId: undefined });
  });

  it('compares IP addresses without ports, brackets or case', () => {
    expect(normalizeIp(' 203.0.113.9:51234 ')).toBe('203.0.113.9');
    expect(normalizeIp('[2001:DB8::1]:443')).toBe('2001:db8::1');
    expect(normalizeIp('2001:db8::1')).toBe('2001:db8::1');
    expect(normalizeIp('')).toBeUndefined();
  });
});
