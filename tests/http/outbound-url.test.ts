import { describe, expect, it } from 'vitest';
import {
  checkOutboundUrl,
  checkOutboundUrlResolved,
  isNonPublicAddress,
  OutboundUrlError,
} from '../../src/http/outbound-url.js';

const reason = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OutboundUrlError);
    return (error as OutboundUrlError).reason;
  }
  return 'accepted';
};

const reasonAsync = async (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (error: unknown) => (error as OutboundUrlError).reason,
  );

describe('checkOutboundUrl', () => {
  it.each([
    ['https://graph.microsoft.com', 'accepted'],
    ['http://127.0.0.1:8080/x', 'accepted'],
    ['http://localhost:9/x', 'accepted'],
    ['http://[::1]:9/x', 'accepted'],
    ['http://graph.microsoft.com', 'scheme'],
    ['http://10.0.0.5', 'scheme'],
    ['ftp://example.com', 'scheme'],
    ['https://user:pass@example.com', 'credentials'],
    ['not a url', 'invalid'],
    ['/relative', 'invalid'],
  ])('%s → %s', (url, expected) => {
    expect(reason(() => checkOutboundUrl(url))).toBe(expected);
  });

  it('applies the host allowlist, with *. for subdomains', () => {
    const policy = { allowedHosts: ['graph.microsoft.com', '*.office.com'] };
    expect(reason(() => checkOutboundUrl('https://graph.microsoft.com/v1.0', policy))).toBe('accepted');
    expect(reason(() => checkOutboundUrl('https://manage.office.com', policy))).toBe('accepted');
    expect(reason(() => checkOutboundUrl('https://office.com', policy))).toBe('host_not_allowed');
    expect(reason(() => checkOutboundUrl('https://evil-office.com', policy))).toBe('host_not_allowed');
    expect(reason(() => checkOutboundUrl('https://GRAPH.microsoft.com', policy))).toBe('accepted');
  });

  it('refuses loopback when allowLoopback is off', () => {
    expect(reason(() => checkOutboundUrl('https://127.0.0.1', { allowLoopback: false }))).toBe(
      'private_address',
    );
    expect(reason(() => checkOutboundUrl('http://127.0.0.1', { allowLoopback: false }))).toBe('scheme');
  });
});

describe('checkOutboundUrlResolved', () => {
  const resolvesTo = (addresses: string[]) => async () => addresses;

  it('refuses hosts that resolve to private, link-local or mapped private addresses', async () => {
    const policy = (a: string[]) => ({ refusePrivateAddresses: true, resolve: resolvesTo(a) });
    expect(
      await reasonAsync(checkOutboundUrlResolved('https://llm.example', policy(['93.184.216.34']))),
    ).toBe('accepted');
    for (const bad of [
      ['10.1.2.3'],
      ['93.184.216.34', '192.168.1.1'],
      ['169.254.169.254'],
      ['fd00::1'],
      ['fe80::1'],
      ['::ffff:10.0.0.1'],
      ['100.64.0.1'],
    ]) {
      expect(await reasonAsync(checkOutboundUrlResolved('https://llm.example', policy(bad)))).toBe(
        'private_address',
      );
    }
    expect(
      await reasonAsync(checkOutboundUrlResolved('https://192.168.0.10', { refusePrivateAddresses: true })),
    ).toBe('private_address');
    expect(await reasonAsync(checkOutboundUrlResolved('https://llm.example', policy([])))).toBe(
      'unresolvable',
    );
  });

  it('lets loopback through only while allowLoopback is on', async () => {
    expect(
      await reasonAsync(checkOutboundUrlResolved('http://127.0.0.1:9', { refusePrivateAddresses: true })),
    ).toBe('accepted');
    expect(
      await reasonAsync(
        checkOutboundUrlResolved('https://localhost', { refusePrivateAddresses: true, allowLoopback: false }),
      ),
    ).toBe('private_address');
  });

  it('classifies addresses', () => {
    expect(isNonPublicAddress('8.8.8.8')).toBe(false);
    expect(isNonPublicAddress('2606:4700:4700::1111')).toBe(false);
    expect(isNonPublicAddress('172.31.255.255')).toBe(true);
    expect(isNonPublicAddress('172.32.0.1')).toBe(false);
    expect(isNonPublicAddress('not-an-ip')).toBe(true);
  });
});
