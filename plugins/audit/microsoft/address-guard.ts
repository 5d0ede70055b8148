/**
 * Every request to Microsoft (and to the SIEM) goes out through the hub's guarded client
 * (src/http/guarded-fetch.ts): the allowlist and the scheme are checked on the URL, and where the
 * host resolves is checked on the socket, by the lookup the connection itself uses — a base URL
 * or a DNS answer pointing into the LAN (DNS rebinding included) would otherwise make the hub
 * send its bearer token and client secret there. Loopback stays allowed (the tests' fakes);
 * `AUDIT_ALLOW_PRIVATE_NETWORK=true` opts out (a proxy on the LAN).
 */
import { guardedFetch, refusedAddressOf } from '../../../src/http/guarded-fetch.js';
import {
  checkOutboundUrl,
  OutboundUrlError,
  type OutboundUrlPolicy,
} from '../../../src/http/outbound-url.js';
import { UpstreamError } from './upstream.js';

export interface AddressGuardPolicy {
  allowedHosts: readonly string[];
  allowPrivateNetwork: boolean;
  resolve?: OutboundUrlPolicy['resolve'];
  /** The setting named in refusals. Default AUDIT_ALLOW_PRIVATE_NETWORK. */
  setting?: string;
}

/**
 * `fetch`, refusing (with an UpstreamError `private_address`) any URL off the allowlist or whose
 * host is not a public address. `inner` replaces the network (tests' fakes): then only the URL
 * checks apply.
 */
export function addressGuardedFetch(
  inner: typeof fetch | undefined,
  policy: AddressGuardPolicy,
): typeof fetch {
  const setting = policy.setting ?? 'AUDIT_ALLOW_PRIVATE_NETWORK';
  const network: (input: URL, init?: RequestInit) => Promise<Response> =
    inner ??
    guardedFetch({
      allowLoopback: true,
      allowPrivateNetwork: policy.allowPrivateNetwork,
      setting,
      ...(policy.resolve ? { resolve: policy.resolve } : {}),
    });
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    try {
      checkOutboundUrl(url, { allowedHosts: policy.allowedHosts });
    } catch (error) {
      if (!(error instanceof OutboundUrlError)) throw error;
      throw new UpstreamError(
        'private_address',
        `refused to call ${url.host}: ${error.message} (${setting}=true allows it)`,
      );
    }
    try {
      return await network(url, init);
    } catch (error) {
      const refused = refusedAddressOf(error);
      if (refused)
        throw new UpstreamError('private_address', `refused to call ${url.host}: ${refused.message}`);
      throw error;
    }
  };
  return guarded as typeof fetch;
}
