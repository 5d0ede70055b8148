/**
 * The `Host` check of every listener (README "Security", "Host names the hub answers to"). A web
 * page a LAN user opens can point its own DNS name at the hub's address (DNS rebinding) and then
 * read the hub's API from the user's browser as if it were the page's own origin; the browser
 * still sends the page's name in `Host`. So the hub answers only to names that are its own:
 *
 * - IP literals (`192.168.1.20`, `[fe80::1]`, with or without a port): no rebinding goes
 *   through a literal;
 * - `localhost`, the machine's host name (`os.hostname()`) and `<hostname>.local` (mDNS);
 * - the names listed in HTTP_ALLOWED_HOSTS (`meshhub.example.org`, `*.example.org`).
 *
 * Anything else is 421 Misdirected Request (RFC 9110 §15.5.20) as a problem document naming the
 * setting. It runs on every request: a Map lookup of the header's raw value once a value has been
 * seen, else a few string operations, one Set lookup and, for literals, node:net's isIP.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { hostname as osHostname } from 'node:os';
import type { MiddlewareHandler } from 'hono';
import { problemResponse } from './error-handler.js';
import { ProblemError } from './problem.js';

/** The setting that adds names (README "Configuration"). */
export const ALLOWED_HOSTS_SETTING = 'HTTP_ALLOWED_HOSTS';

const PORT = /^\d{1,5}$/;
/** A DNS name (labels of letters, digits, hyphens; underscores tolerated), lower case, no trailing dot. */
const NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;
/** Header values longer than this are decided but not remembered. */
const MAX_REMEMBERED_LENGTH = 255;
const MAX_REMEMBERED = 256;

/** `Name.Example.` → `name.example`. */
function normaliseName(name: string): string {
  const lower = name.trim().toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/**
 * Parses HTTP_ALLOWED_HOSTS (`a.example.org, *.example.net`): the list, or a string saying what
 * is wrong with it (the start-up problem).
 */
export function parseAllowedHosts(value: string): string[] | string {
  const out: string[] = [];
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (!entry) continue;
    const wildcard = entry.startsWith('*.');
    const name = normaliseName(wildcard ? entry.slice(2) : entry);
    if (!NAME.test(name)) {
      return `${JSON.stringify(entry)} is not a host name: expected comma-separated names without scheme or port, e.g. meshhub.example.org or *.example.org`;
    }
    out.push(wildcard ? `*.${name}` : name);
  }
  return out;
}

/** The names the hub answers to, and the decision for one `Host` header value. */
export class HostAllowlist {
  private readonly exact = new Set<string>(['localhost']);
  /** `.example.org` for each `*.example.org`. */
  private readonly suffixes: string[] = [];
  private readonly remembered = new Map<string, boolean>();

  constructor(extra: readonly string[] = [], machineName: string = osHostname()) {
    const machine = normaliseName(machineName);
    if (machine) {
      const short = machine.split('.')[0]!;
      for (const name of [machine, short, `${short}.local`]) this.exact.add(name);
    }
    for (const entry of extra) {
      const name = normaliseName(entry);
      if (name.startsWith('*.')) this.suffixes.push(name.slice(1));
      else if (name) this.exact.add(name);
    }
  }

  /** The names and patterns allowed besides IP literals (for the log and the tests). */
  get names(): string[] {
    return [...this.exact, ...this.suffixes.map((s) => `*${s}`)];
  }

  /** True when the hub answers to this `Host` header value. */
  allows(header: string): boolean {
    const known = this.remembered.get(header);
    if (known !== undefined) return known;
    const decision = this.decide(header);
    if (header.length <= MAX_REMEMBERED_LENGTH) {
      if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
      this.remembered.set(header, decision);
    }
    return decision;
  }

  private decide(header: string): boolean {
    if (header.charCodeAt(0) === 91 /* [ */) {
      const end = header.indexOf(']');
      if (end < 0) return false;
      const rest = header.slice(end + 1);
      if (rest !== '' && !(rest.charCodeAt(0) === 58 /* : */ && PORT.test(rest.slice(1)))) return false;
      return isIPv6(header.slice(1, end));
    }
    const colon = header.indexOf(':');
    let name = header;
    if (colon >= 0) {
      if (!PORT.test(header.slice(colon + 1))) return false;
      name = header.slice(0, colon);
    }
    name = normaliseName(name);
    if (!name) return false;
    if (this.exact.has(name) || isIPv4(name)) return true;
    for (const suffix of this.suffixes) {
      if (name.length > suffix.length && name.endsWith(suffix)) return true;
    }
    return false;
  }
}

/** The 421 problem for a name the hub does not answer to. */
export function misdirected(host: string): ProblemError {
  const shown = host.length > 100 ? `${host.slice(0, 100)}…` : host;
  return new ProblemError(
    421,
    `this hub does not answer to the host name ${JSON.stringify(shown)}; if that is one of its names, add it to ${ALLOWED_HOSTS_SETTING} (comma-separated, e.g. meshhub.example.org or *.example.org)`,
  );
}

/** The request's `Host` without a socket (in-process `app.request`): the URL's authority. */
function authorityOf(url: string): string {
  const start = url.indexOf('//') + 2;
  let end = start;
  while (end < url.length) {
    const ch = url.charCodeAt(end);
    if (ch === 47 /* / */ || ch === 63 /* ? */ || ch === 35 /* # */) break;
    end++;
  }
  return url.slice(start, end);
}

/**
 * The middleware: 421 for a `Host` the hub does not answer to; 400 for an HTTP/1.1 request
 * without one (Node's server refuses those itself; this holds if that ever changes). An
 * HTTP/1.0 request without `Host` is served: browsers always send one.
 */
export function hostCheck(allowlist: HostAllowlist): MiddlewareHandler {
  return async function hostCheckMiddleware(c, next) {
    let host = c.req.raw.headers.get('host');
    if (host === null) {
      // A real socket's request has its HTTP version; one made in-process (`app.request`, with
      // or without a stand-in `incoming` for the client's address) has none: its URL names it.
      const version = (c.env as { incoming?: { httpVersion?: string } } | undefined)?.incoming?.httpVersion;
      if (version === '1.0') return next();
      if (version) return problemResponse(c, new ProblemError(400, 'the request has no Host header'));
      host = authorityOf(c.req.url);
    }
    if (!allowlist.allows(host)) return problemResponse(c, misdirected(host));
    return next();
  };
}
