/**
 * The hub's one HTTP client for outbound work (README "Security", "Outbound connections"): the
 * Microsoft endpoints, the SIEM, alert webhooks, BTCPay, the language model, an identity
 * provider's JWKS and the site's calls to its upstream all connect through it.
 *
 * Where a host name resolves is checked on the socket, at connect time: the lookup that finds the
 * address is the one the connection uses, so a name that answers with a public address to a
 * first check and a private one to the connect (DNS rebinding) is refused before any byte goes
 * out. Non-public addresses (private, loopback, link-local, carrier-grade NAT, multicast,
 * reserved: the classification of outbound-url.ts) are refused unless the client's policy
 * allows them: `allowLoopback` for tests and local fakes, `allowPrivateNetwork` for the
 * operator's opt-in (`…_ALLOW_PRIVATE_NETWORK=true`) to a service on the LAN. A literal IP in
 * the URL never reaches a lookup, so it is checked on its own before connecting.
 *
 * undici is loaded on the first request (it costs an idle hub that calls nobody ~20 MB RSS).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import type { ClientRequestArgs } from 'node:http';
import { createRequire } from 'node:module';
import type * as Net from 'node:net';
import { isIP } from 'node:net';
import type * as Tls from 'node:tls';
// Types only: the module itself is loaded on the first request.
import type { Agent, buildConnector } from 'undici';
import { isLoopbackAddress, isNonPublicAddress, OutboundUrlError } from './outbound-url.js';

/** Which addresses one outbound client may connect to. */
export interface AddressPolicy {
  /** Any address: the operator's opt-in to a service on the LAN. Default false. */
  allowPrivateNetwork?: boolean;
  /** Loopback addresses (tests, a local fake, a proxy on this machine). Default false. */
  allowLoopback?: boolean;
  /** The setting that opts in, named in the refusal (e.g. `BTCPAY_ALLOW_PRIVATE_NETWORK`). */
  setting?: string;
  /** DNS, injectable for tests: every address of a name. Default `dns.lookup` (all, verbatim). */
  resolve?: (host: string) => Promise<string[]>;
}

/** `code` of a refused connection (the error, or the `cause` of fetch's TypeError). */
export const REFUSED_ADDRESS = 'EREFUSEDADDRESS';

/** A connection refused before it was made: the host is, or resolves to, a non-public address. */
export class RefusedAddressError extends OutboundUrlError {
  readonly code = REFUSED_ADDRESS;
  constructor(
    readonly host: string,
    readonly address: string,
    setting: string | undefined,
  ) {
    super(
      'private_address',
      `${host === address ? `${host} is a non-public address` : `host ${host} resolves to a non-public address (${address})`}; refused${setting ? ` (${setting}=true allows it)` : ''}`,
    );
  }
}

/** The refusal inside `error` (itself, or somewhere down its `cause` chain). */
export function refusedAddressOf(error: unknown): RefusedAddressError | undefined {
  let e: unknown = error;
  for (let depth = 0; e && depth < 5; depth++) {
    if (e instanceof RefusedAddressError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The refusal of `address` (which `host` named) under `policy`, or undefined when allowed. */
export function addressRefusal(
  host: string,
  address: string,
  policy: AddressPolicy,
): RefusedAddressError | undefined {
  if (policy.allowPrivateNetwork || !isNonPublicAddress(address)) return undefined;
  if (policy.allowLoopback && isLoopbackAddress(address)) return undefined;
  return new RefusedAddressError(host, address, policy.setting);
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

const systemResolve = (host: string, options: LookupOptions): Promise<LookupAddress[]> =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { ...options, all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    );
  });

/**
 * A `lookup` for sockets (net/tls `connect` options) that refuses a name when any of its
 * addresses is refused: the connect-time half of the address check.
 */
export function guardedLookup(policy: AddressPolicy): Net.LookupFunction {
  const lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const found = policy.resolve
      ? policy
          .resolve(hostname)
          .then((list) => list.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 })))
      : systemResolve(hostname, options);
    found.then(
      (all) => {
        const list = options.family ? all.filter((a) => a.family === options.family) : all;
        if (!list.length) {
          const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
            code: 'ENOTFOUND',
            hostname,
          });
          return callback(error, []);
        }
        for (const { address } of list) {
          const refused = addressRefusal(hostname, address, policy);
          if (refused) return callback(refused, []);
        }
        if (options.all) return callback(null, list);
        return callback(null, list[0]!.address, list[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
  return lookup as Net.LookupFunction;
}

/** The refusal of a literal IP host (`[::1]` or `::1`), or undefined for a name or an allowed address. */
function literalRefusal(host: string, policy: AddressPolicy): RefusedAddressError | undefined {
  const bare = host.charCodeAt(0) === 91 ? host.slice(1, -1) : host;
  return isIP(bare) ? addressRefusal(bare, bare, policy) : undefined;
}

type Undici = typeof import('undici');
let undici: Promise<Undici> | undefined;
const loadUndici = () => {
  undici ??= import('undici');
  return undici;
};

/** An undici Agent that connects only where `policy` allows, checked on every new connection. */
export async function guardedAgent(policy: AddressPolicy, options: Agent.Options = {}): Promise<Agent> {
  const { Agent: UndiciAgent, buildConnector } = await loadUndici();
  const connectOptions = typeof options.connect === 'object' ? options.connect : {};
  const base = buildConnector({
    ...connectOptions,
    lookup: guardedLookup(policy),
  } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (opts, callback) => {
    const refused = literalRefusal(opts.hostname, policy);
    if (refused) {
      queueMicrotask(() => callback(refused, null));
      return;
    }
    base(opts, callback);
  };
  return new UndiciAgent({ ...options, connect });
}

/** `fetch` through a guarded agent; `close()` ends its idle connections. */
export interface GuardedFetch {
  (input: string | URL, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/**
 * `fetch` (undici's, with the same Request/Response API as the global one) whose every connection
 * passes `policy`. A refusal rejects like any network failure (TypeError "fetch failed") with
 * the RefusedAddressError as its `cause` (refusedAddressOf finds it).
 */
export function guardedFetch(policy: AddressPolicy, agentOptions: Agent.Options = {}): GuardedFetch {
  let agent: Promise<Agent> | undefined;
  const call = async (input: string | URL, init?: RequestInit): Promise<Response> => {
    agent ??= guardedAgent(policy, agentOptions);
    const [{ fetch }, dispatcher] = await Promise.all([loadUndici(), agent]);
    const response = await fetch(input, { ...(init as object), dispatcher } as Parameters<typeof fetch>[1]);
    return response as unknown as Response;
  };
  return Object.assign(call, {
    async close() {
      const a = agent;
      agent = undefined;
      if (a) await (await a).close();
    },
  });
}

const requireBuiltin = createRequire(import.meta.url);

/**
 * `createConnection` for the `ws` client (and node:http requests): the same checks on a WebSocket
 * (the site's downlink). `secure` for wss:// (TLS with SNI, as `ws` connects by default).
 */
export function guardedSocketConnect(
  policy: AddressPolicy,
  secure: boolean,
): (options: ClientRequestArgs) => Net.Socket {
  const lookup = guardedLookup(policy);
  return (options) => {
    const host = String(options.host ?? options.hostname ?? 'localhost');
    const refused = literalRefusal(host, policy);
    if (refused) throw refused;
    const bare = host.charCodeAt(0) === 91 ? host.slice(1, -1) : host;
    if (secure) {
      const tls = requireBuiltin('node:tls') as typeof Tls;
      return tls.connect({
        ...(options as Tls.ConnectionOptions),
        // `path` is the request's path here, not a socket path.
        path: undefined,
        servername: (options as Tls.ConnectionOptions).servername || (isIP(bare) ? '' : bare),
        lookup,
      } as Tls.ConnectionOptions);
    }
    const net = requireBuiltin('node:net') as typeof Net;
    return net.connect({ ...(options as Net.NetConnectOpts), path: undefined, lookup } as Net.NetConnectOpts);
  };
}
