/**
 * Which `Host` values the hub answers to (README "Security", "Host names the hub answers to"),
 * and HTTP_ALLOWED_HOSTS. The hub on a real socket: host-check-socket.test.ts.
 */
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../hub/settings.js';
import { HostAllowlist, parseAllowedHosts } from '../../src/http/host-check.js';

describe('HostAllowlist', () => {
  const list = new HostAllowlist(['meshhub.example.org', '*.lan.example', 'Upper.Example.'], 'pi-hub');

  it.each([
    '127.0.0.1',
    '127.0.0.1:8080',
    '192.168.1.20:8080',
    '[::1]',
    '[::1]:8080',
    '[fe80::1]:80',
    'localhost',
    'LOCALHOST:8080',
    'localhost.',
    'pi-hub',
    'PI-HUB:8080',
    'pi-hub.local',
    'pi-hub.local.:8080',
    'meshhub.example.org',
    'MeshHub.Example.Org.:443',
    'upper.example',
    'a.lan.example',
    'b.c.lan.example:8080',
  ])('answers to %s', (host) => {
    expect(list.allows(host)).toBe(true);
  });

  it.each([
    'evil.example',
    'evil.example:8080',
    'localhost.evil.example',
    'pi-hub.evil.example',
    'lan.example',
    'xlan.example',
    'meshhub.example.org.evil',
    '',
    ':8080',
    '127.0.0.1:',
    '127.0.0.1:80a',
    '127.0.0.1:8080:80',
    '::1',
    '[::1',
    '[::1]x',
    '[evil.example]',
    '[127.0.0.1]',
    '1.2.3',
    'evil example',
  ])('refuses %j', (host) => {
    expect(list.allows(host)).toBe(false);
  });

  it('answers to the machine’s own name and its .local, and a fully qualified machine name’s first label', () => {
    const fq = new HostAllowlist([], 'Node7.site.example');
    for (const host of ['node7.site.example', 'node7', 'node7.local']) expect(fq.allows(host)).toBe(true);
    expect(new HostAllowlist().allows(hostname())).toBe(true);
    expect(new HostAllowlist().allows(`${hostname().split('.')[0]}.local`)).toBe(true);
  });

  it('decides the same for a value it has already seen (remembered decisions)', () => {
    for (let i = 0; i < 1_000; i++) expect(list.allows(`x${i}.evil.example`)).toBe(false);
    expect(list.allows('meshhub.example.org')).toBe(true);
    expect(list.allows('evil.example')).toBe(false);
  });
});

describe('HTTP_ALLOWED_HOSTS', () => {
  it('takes comma-separated names and *.suffix patterns, in any case, trailing dot tolerated', () => {
    expect(parseAllowedHosts(' meshhub.example.org, *.Example.NET., hub ')).toEqual([
      'meshhub.example.org',
      '*.example.net',
      'hub',
    ]);
    expect(parseAllowedHosts('')).toEqual([]);
  });

  it.each(['http://hub.example', 'hub.example:8080', '*', '*.', 'a..b', 'a/b', 'hub example', '-a.example'])(
    'refuses %j at start-up, naming the setting',
    (value) => {
      expect(() => loadConfig({ HTTP_ALLOWED_HOSTS: value })).toThrow(/HTTP_ALLOWED_HOSTS/);
    },
  );
});
