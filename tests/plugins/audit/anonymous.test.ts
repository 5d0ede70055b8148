/**
 * Issue 23, finding 2: the audit plugin is not anonymous on the LAN by default. With AUTH_ENABLED
 * off and HTTP_HOST beyond loopback (the default 0.0.0.0) the hub refuses to start, in one plain
 * line naming the settings and what to do, never a stack trace; AUDIT_ALLOW_ANONYMOUS=true opts
 * in by name (a warning at every start). On loopback, auth off keeps the anonymous caller's full
 * access.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createHub } from '../../../hub/main.js';
import { loadConfig } from '../../../hub/settings.js';
import {
  AuditConfigError,
  anonymousAccessProblem,
  loadAuditConfig,
} from '../../../plugins/audit/settings.js';
import { ConfigError } from '../../../src/config/load.js';
import { auditApp, capturingLogger, jsonInit, QUIET_ENV, seed, startAuditCli } from './helpers.js';

const REFUSAL = (host: string) =>
  `AUTH_ENABLED: the audit plugin will not serve audit data without sign-in to the network (HTTP_HOST is ${host}); set AUTH_ENABLED=true with an identity provider, or HTTP_HOST=127.0.0.1 for this machine only, or AUDIT_ALLOW_ANONYMOUS=true to let anyone who reaches the hub read and change the audit data`;
const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-audit-anon-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('anonymousAccessProblem', () => {
  it('refuses auth off beyond loopback unless AUDIT_ALLOW_ANONYMOUS, and nothing else', () => {
    const off = loadAuditConfig({});
    expect(anonymousAccessProblem(off, '0.0.0.0')).toBe(REFUSAL('0.0.0.0'));
    expect(anonymousAccessProblem(off, '192.168.1.20')).toBe(REFUSAL('192.168.1.20'));
    expect(anonymousAccessProblem(off, '::')).toBe(REFUSAL('::'));
    for (const host of ['127.0.0.1', '127.0.1.1', 'localhost', '::1']) {
      expect(anonymousAccessProblem(off, host), host).toBeUndefined();
    }
    expect(
      anonymousAccessProblem(loadAuditConfig({ AUDIT_ALLOW_ANONYMOUS: 'true' }), '0.0.0.0'),
    ).toBeUndefined();
    // Auth on, or on but incomplete (which fails closed with 503): no anonymous access to refuse.
    expect(anonymousAccessProblem(loadAuditConfig({ AUTH_ENABLED: 'true' }), '0.0.0.0')).toBeUndefined();
  });
});

describe('the hub with PLUGINS=audit, auth off and HTTP_HOST=0.0.0.0', () => {
  it('is not built: one ConfigError line naming the settings, before anything listens', async () => {
    const dir = scratch();
    const env = {
      DATA_DIR: dir,
      HTTP_HOST: '0.0.0.0',
      HTTP_PORT: '0',
      MESH_API_PORT: '0',
      RADIO: 'none',
      MQTT_PORT: '0',
      PLUGINS: 'audit',
      ...QUIET_ENV,
    };
    const error = await createHub(loadConfig(env), { log: capturingLogger().log, env }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([REFUSAL('0.0.0.0')]);
  });

  it('`meshhub start` (the default HTTP_HOST) exits 1 with the plain line, no stack trace', () => {
    const result = startAuditCli(scratch(), {}, ['HTTP_HOST', 'AUTH_ENABLED', 'AUDIT_ALLOW_ANONYMOUS']);
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(`meshhub: ${REFUSAL('0.0.0.0')}\n`);
  });
});

describe('AUDIT_ALLOW_ANONYMOUS=true', () => {
  it('starts beyond loopback with a warning naming the setting, and the anonymous caller has full access', async () => {
    const { log, lines } = capturingLogger();
    const t = await auditApp({ AUDIT_ALLOW_ANONYMOUS: 'true' }, { log, listenHost: '0.0.0.0' });
    try {
      const warning = lines.map((l) => JSON.parse(l)).find((l) => /AUDIT_ALLOW_ANONYMOUS/.test(l.msg));
      expect(warning).toMatchObject({
        level: 40,
        http_host: '0.0.0.0',
        msg: 'AUDIT_ALLOW_ANONYMOUS is true and AUTH_ENABLED is false: anyone who reaches the hub can read and change the audit data',
      });
      seed(t.repos, [{ at: Date.UTC(2025, 4, 1) }]);
      expect((await t.json('/api/events')).status).toBe(200);
      expect((await t.json('/api/events/1/tags', jsonInit('PATCH', { tags: ['ok'] }))).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('is needed by name: without it the plugin refuses the same start', async () => {
    const error = await auditApp({}, { listenHost: '0.0.0.0' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AuditConfigError);
    expect((error as AuditConfigError).problems).toEqual([REFUSAL('0.0.0.0')]);
  });
});

describe('auth off on loopback', () => {
  it('keeps the anonymous caller’s full access, with no warning', async () => {
    const { log, lines } = capturingLogger();
    const t = await auditApp({}, { log });
    try {
      seed(t.repos, [{ at: Date.UTC(2025, 4, 1) }]);
      expect((await t.json('/api/events')).status).toBe(200);
      expect((await t.json('/api/events/1/tags', jsonInit('PATCH', { tags: ['ok'] }))).status).toBe(200);
      expect((await t.json('/api/source-health')).body.fetch_allowed).toBe(true);
      expect((await t.json('/api/audit-trail')).status).toBe(200);
      expect(lines.join('\n')).not.toContain('AUDIT_ALLOW_ANONYMOUS');
    } finally {
      await t.close();
    }
  });
});
