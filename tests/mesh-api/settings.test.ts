/** The mesh API's settings: defaults, every bad value named at start-up, and the address allowlist. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import { parseClientAllowlist } from '../../src/mesh-api/settings.js';
import { configProblems } from '../helpers/config.js';

const problemsOf = (env: NodeJS.ProcessEnv) => configProblems(() => loadConfig(env));

describe('mesh API settings', () => {
  it('defaults to loopback port 4403, admin writes refused', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      MESH_API: true,
      MESH_API_HOST: '127.0.0.1',
      MESH_API_PORT: 4403,
      MESH_API_ADMIN: false,
      MESH_API_SHOW_HUB_TEXTS: false,
    });
    expect(loadConfig({ MESH_API_SHOW_HUB_TEXTS: 'true' }).MESH_API_SHOW_HUB_TEXTS).toBe(true);
    expect(problemsOf({ MESH_API_SHOW_HUB_TEXTS: 'perhaps' })).toEqual([
      expect.stringMatching(/^MESH_API_SHOW_HUB_TEXTS: must be true or false/),
    ]);
    expect(c.MESH_API_ALLOW.entries).toEqual([]);
    expect(loadConfig({ MESH_API: 'false' }).MESH_API).toBe(false);
  });

  it('names every bad value at once', () => {
    const problems = problemsOf({
      MESH_API: 'maybe',
      MESH_API_PORT: '70000',
      MESH_API_ADMIN: 'sure',
      MESH_API_ALLOW: '192.168.1.0/24, not-an-ip',
      MESH_API_IDLE_TIMEOUT: '15 minutes',
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^MESH_API: must be true or false/),
        expect.stringMatching(/^MESH_API_PORT: /),
        expect.stringMatching(/^MESH_API_ADMIN: must be true or false/),
        expect.stringMatching(/^MESH_API_ALLOW: "not-an-ip" is not an IP address or CIDR range/),
        expect.stringMatching(/^MESH_API_IDLE_TIMEOUT: must be a duration/),
      ]),
    );
  });

  it('allows listed addresses and ranges only, IPv4-mapped IPv6 included', () => {
    const list = parseClientAllowlist('127.0.0.1, 192.168.1.0/24, fd00::/8');
    if (typeof list === 'string') throw new Error(list);
    expect(list.allows('127.0.0.1')).toBe(true);
    expect(list.allows('::ffff:192.168.1.77')).toBe(true);
    expect(list.allows('fd12::1')).toBe(true);
    expect(list.allows('192.168.2.1')).toBe(false);
    expect(list.allows('10.0.0.1')).toBe(false);
    expect(parseClientAllowlist('10.0.0.0/33')).toMatch(/not an IP address or CIDR range/);
    const open = parseClientAllowlist('');
    expect(typeof open !== 'string' && open.allows('203.0.113.9')).toBe(true);
  });
});
