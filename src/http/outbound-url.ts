/**
 * The check every outbound URL passes before the hub sends anything to it (and, above all, a
 * credential): the audit plugin's Microsoft endpoints now; LLM and SIEM addresses later.
 *
 * - https is required; plain http only to a loopback host (tests, a local fake), and only
 *   when `allowLoopback` is on (the default).
 * - No credentials in the URL (they would end up in logs).
 * - An optional host allowlist: exact names, or `*.example.com` for subdomains.
 * - Optionally (`refusePrivateAddresses`), the host must not resolve to a private, loopback,
 *   link-local, carrier-grade NAT, multicast or reserved address: a URL pointing into the LAN
 *   would turn the hub into a proxy for the LAN. Literal IPs are checked without DNS.
 *
 * Resolution is checked when the URL is accepted (start-up); a host that later re-resolves to
 * a private address (DNS rebinding) needs a check at connect time by the caller's agent.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export type OutboundUrlFailure =
  | 'invalid'
  | 'scheme'
  | 'credentials'
  | 'host_not_allowed'
  | 'private_address'
  | 'unresolvable';

export class OutboundUrlError extends Error {
  override readonly name = 'OutboundUrlError';
  constructor(
    readonly reason: OutboundUrlFailure,
    message: string,
  ) {
    super(message);
  }
}

export interface OutboundUrlPolicy {
  /** Allowed hosts (case-insensitive); `*.example.com` allows every subdomain. Empty: any host. */
  allowedHosts?: readonly string[];
  /** Refuse hosts that resolve to non-public addresses (loopback excepted when `allowLoopback`). */
  refusePrivateAddresses?: boolean;
  /** Accept loopback hosts, over http too (tests, local fakes). Default true. */
  allowLoopback?: boolean;
  /** DNS resolution, injectable for tests. Default: every address of `dns.lookup`. */
  resolve?: (host: string) => Promise<string[]>;
}

const NON_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NON_PUBLIC.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['100::', 64],
] as const) {
  NON_PUBLIC.addSubnet(net, prefix, 'ipv6');
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** IPv4-mapped and NAT64 IPv6 addresses carry an IPv4 address that decides. */
function embeddedIpv4(ip: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m?.[1];
}

/**
 * Whether the address `bare` (no brackets) is in `list`, an IPv4 address embedded in IPv6 taken
 * as itself; `otherwise` for what is not an IP address.
 */
function inBlockList(list: BlockList, bare: string, otherwise: boolean): boolean {
  const address = embeddedIpv4(bare) ?? bare;
  const family = isIP(address);
  if (family === 4) return list.check(address, 'ipv4');
  if (family === 6) return list.check(address, 'ipv6');
  return otherwise;
}

/** True for any address that is not a public unicast address. */
export function isNonPublicAddress(ip: string): boolean {
  return inBlockList(NON_PUBLIC, ip.replace(/^\[|\]$/g, '').replace(/%.*$/, ''), true);
}

export function isLoopbackAddress(ip: string): boolean {
  return inBlockList(LOOPBACK, ip.replace(/^\[|\]$/g, ''), false);
}

/** `localhost` or a literal loopback address (no DNS). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || isLoopbackAddress(host);
}

function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const h = host.toLowerCase();
  return allowed.some((entry) => {
    const e = entry.trim().toLowerCase();
    if (e.startsWith('*.')) return h.endsWith(e.slice(1)) && h.length > e.length - 1;
    return h === e;
  });
}

/** The checks that need no DNS: syntax, scheme, credentials, allowlist. Returns the parsed URL. */
export function checkOutboundUrl(input: string | URL, policy: OutboundUrlPolicy = {}): URL {
  let url: URL;
  try {
    url = input instanceof URL ? new URL(input.href) : new URL(input);
  } catch {
    throw new OutboundUrlError('invalid', 'is not an absolute URL');
  }
  const allowLoopback = policy.allowLoopback ?? true;
  const loopback = isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback && allowLoopback)) {
    throw new OutboundUrlError('scheme', 'must use https (plain http only to a loopback host)');
  }
  if (url.username || url.password) {
    throw new OutboundUrlError('credentials', 'must not carry a user name or password');
  }
  if (loopback && !allowLoopback) {
    throw new OutboundUrlError('private_address', 'must not point at a loopback host');
  }
  const allowed = policy.allowedHosts?.filter((h) => h.trim()) ?? [];
  if (allowed.length && !hostAllowed(url.hostname.replace(/^\[|\]$/g, ''), allowed)) {
    throw new OutboundUrlError('host_not_allowed', `host ${url.hostname} is not in the allowlist`);
  }
  return url;
}

const defaultResolve = async (host: string): Promise<string[]> =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** Every check, including where the host resolves when `refusePrivateAddresses` is on. */
export async function checkOutboundUrlResolved(
  input: string | URL,
  policy: OutboundUrlPolicy = {},
): Promise<URL> {
  const url = checkOutboundUrl(input, policy);
  if (!policy.refusePrivateAddresses) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if ((policy.allowLoopback ?? true) && isLoopbackHost(host)) return url;
  let addresses: string[];
  if (isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await (policy.resolve ?? defaultResolve)(host);
    } catch {
      throw new OutboundUrlError('unresolvable', `host ${host} does not resolve`);
    }
    if (!addresses.length) throw new OutboundUrlError('unresolvable', `host ${host} does not resolve`);
  }
  const bad = addresses.find((a) => isNonPublicAddress(a));
  if (bad) {
    throw new OutboundUrlError('private_address', `host ${host} resolves to a non-public address`);
  }
  return url;
}
