/**
 * RATE_LIMIT_MAX_CLIENTS bounded the in-memory rate-limit table of issue 6; since issue 13 the
 * tiers count in the cache store (SQLite or Redis), which has no such table, so the setting is
 * gone. An old value left in an environment file must not stop the hub: it is accepted,
 * whatever it says, and the start warns that it does nothing.
 */
import { describe, expect, it } from 'vitest';
import { loadAuditConfig } from '../../../plugins/audit/settings.js';
import { auditApp, capturingLogger } from './helpers.js';

describe('RATE_LIMIT_MAX_CLIENTS', () => {
  it.each(['10000', '5', 'lots'])('is accepted and ignored when set to %j', (value) => {
    const config = loadAuditConfig({ RATE_LIMIT_MAX_CLIENTS: value });
    expect(config.obsoleteSettings).toEqual(['RATE_LIMIT_MAX_CLIENTS']);
    expect(config).not.toHaveProperty('rateLimitMaxClients');
  });

  it('is not mentioned when unset', () => {
    expect(loadAuditConfig({}).obsoleteSettings).toEqual([]);
  });

  it('makes the plugin warn at start that it does nothing, and the hub still starts', async () => {
    const logs = capturingLogger();
    const t = await auditApp({ RATE_LIMIT_MAX_CLIENTS: '3' }, { log: logs.log });
    try {
      expect((await t.json('/api/events')).status).toBe(200);
      const warning = logs.lines
        .map((l) => JSON.parse(l))
        .find((l) => l.setting === 'RATE_LIMIT_MAX_CLIENTS');
      expect(warning).toMatchObject({ level: 40 });
      expect(warning.msg).toContain('RATE_LIMIT_MAX_CLIENTS no longer does anything');
    } finally {
      await t.close();
    }
  });
});
