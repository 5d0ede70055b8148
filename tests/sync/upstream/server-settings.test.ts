/**
 * The upstream's settings: defaults, every problem reported at once by name, and the database
 * URL (which holds a password) never echoed, not in an error and not in a log line.
 */
import { describe, expect, it } from 'vitest';
import { loadUpstreamDatabaseSettings, loadUpstreamSettings } from '../../../sync/upstream/settings.js';
import { configProblems } from '../../helpers/config.js';

const URL_WITH_PASSWORD = 'postgres://meshhub:hunter2-secret@db.example:5432/meshhub';

const problemsOf = (env: Record<string, string>) => configProblems(() => loadUpstreamSettings(env));

describe('upstream settings', () => {
  it('has the documented defaults', () => {
    const s = loadUpstreamSettings({ UPSTREAM_DATABASE_URL: URL_WITH_PASSWORD });
    expect(s.HTTP_HOST).toBe('127.0.0.1');
    expect(s.HTTP_PORT).toBe(8080);
    expect(s.DATA_DIR).toBe('./upstream-data');
    expect(s.UPSTREAM_DB_POOL_MAX).toBe(10);
    expect(s.AUTH_ROLES_CLAIM).toBe('roles');
    expect(s.AUTH_TOKEN_TTL).toBe(15 * 60_000);
    expect(s.AUTH_REFRESH_TTL).toBe(14 * 86_400_000);
    expect(s.HTTP_TRUST_PROXY).toBe(false);
    expect(s.WEB_ROOT).toBeUndefined();
    expect(s.MESSAGE_RATE_PER_SUBSCRIBER).toEqual({ count: 10, windowMs: 300_000 });
    expect(s.MESSAGE_RATE_PER_NODE).toEqual({ count: 6, windowMs: 300_000 });
    expect(s.LOG_LEVEL).toBe('info');
    // Reads need a token and /metrics is off until a token is set (README "The upstream's reads").
    expect(s.UPSTREAM_PUBLIC_READ).toBe(false);
    expect(s.UPSTREAM_METRICS_TOKEN).toBeUndefined();
  });

  it('keeps UPSTREAM_METRICS_TOKEN a secret of at least 32 characters, never echoed', () => {
    const token = 'a-metrics-token-of-forty-characters-0123';
    const s = loadUpstreamSettings({
      UPSTREAM_DATABASE_URL: URL_WITH_PASSWORD,
      UPSTREAM_METRICS_TOKEN: token,
    });
    expect(s.UPSTREAM_METRICS_TOKEN?.reveal()).toBe(token);
    expect(JSON.stringify(s)).not.toContain(token);
    const problems = problemsOf({
      UPSTREAM_DATABASE_URL: URL_WITH_PASSWORD,
      UPSTREAM_METRICS_TOKEN: 'short-secret',
    });
    expect(problems).toEqual([
      expect.stringMatching(/^UPSTREAM_METRICS_TOKEN: must be at least 32 characters/),
    ]);
    expect(problems.join('\n')).not.toContain('short-secret');
    expect(problemsOf({ UPSTREAM_DATABASE_URL: URL_WITH_PASSWORD, UPSTREAM_PUBLIC_READ: 'maybe' })).toEqual([
      expect.stringMatching(/^UPSTREAM_PUBLIC_READ: must be true or false/),
    ]);
  });

  it('keeps the database URL a secret that never prints', () => {
    const s = loadUpstreamSettings({ UPSTREAM_DATABASE_URL: URL_WITH_PASSWORD });
    expect(s.UPSTREAM_DATABASE_URL.reveal()).toBe(URL_WITH_PASSWORD);
    expect(JSON.stringify(s)).not.toContain('hunter2');
    expect(String(s.UPSTREAM_DATABASE_URL)).toBe('[redacted]');
  });

  it('reports every problem at once, by name, without echoing the database URL', () => {
    const problems = problemsOf({
      UPSTREAM_DATABASE_URL: 'mysql://root:hunter2-secret@db/x',
      HTTP_PORT: '70000',
      UPSTREAM_DB_POOL_MAX: '0',
      MESSAGE_RATE_PER_NODE: 'lots',
      AUTH_ISSUER: 'https://idp.example',
      LOG_LEVEL: 'loud',
    });
    expect(problems).toEqual([
      'UPSTREAM_DATABASE_URL: expected a PostgreSQL URL like postgres://user:password@host:5432/database',
      expect.stringMatching(/^UPSTREAM_DB_POOL_MAX: .* \(got "0"\)$/),
      expect.stringMatching(/^HTTP_PORT: .* \(got "70000"\)$/),
      expect.stringMatching(/^LOG_LEVEL: /),
      'MESSAGE_RATE_PER_NODE: must be a count per window like 10/5m or 100/1h (got "lots")',
      'AUTH_JWKS_URL: required when AUTH_ISSUER or AUTH_AUDIENCE is set',
      'AUTH_AUDIENCE: required when AUTH_JWKS_URL is set',
    ]);
    expect(problems.join('\n')).not.toContain('hunter2');
  });

  it('requires UPSTREAM_DATABASE_URL, for the server and for the database commands', () => {
    expect(problemsOf({})).toEqual(['UPSTREAM_DATABASE_URL: is required']);
    expect(() => loadUpstreamDatabaseSettings({ UPSTREAM_DATABASE_URL: '  ' })).toThrow(
      /UPSTREAM_DATABASE_URL: is required/,
    );
    // The database commands do not care about the server's settings.
    expect(
      loadUpstreamDatabaseSettings({ UPSTREAM_DATABASE_URL: URL_WITH_PASSWORD, HTTP_PORT: 'nope' })
        .UPSTREAM_DB_POOL_MAX,
    ).toBe(10);
  });
});
