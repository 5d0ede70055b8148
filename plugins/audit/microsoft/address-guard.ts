/**
 * Every request to Microsoft passes `src/http/outbound-url.ts` again where it goes out (issue 14:
 * the private-address check existed but was not applied to the Microsoft endpoints): the host
 * must not resolve to a private, link-local or otherwise non-public address — a base URL or a
 * DNS answer pointing into the LAN would make the hub send its bearer token and client secret
 * there. Loopback stays allowed (the tests' fakes); `AUDIT_ALLOW_PRIVATE_NETWORK=true` opts out
 * (a proxy on the LAN). Resolutions are remembered for a minute per host.
 */
import {
  checkOutboundUrlResolved,
  OutboundUrlError,
  type OutboundUrlPolicy,
} from '../../../src/http/outbound-url.js';
import { UpstreamError } from './upstream.js';

const REMEMBER_MS = 60_000;

export interface AddressGuardPolicy {
  allowedHosts: readonly string[];
  allowPrivateNetwork: boolean;
  resolve?: OutboundUrlPolicy['resolve'];
  now?: () => number;
}

/** `fetch`, refusing (with an UpstreamError) any URL whose host is not a public address. */
export function addressGuardedFetch(inner: typeof fetch, policy: AddressGuardPolicy): typeof fetch {
  const checked = new Map<string, number>();
  const now = policy.now ?? Date.now;
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const until = checked.get(url.host);
    if (until === undefined || until < now()) {
      try {
        await checkOutboundUrlResolved(url, {
          allowedHosts: policy.allowedHosts,
          refusePrivateAddresses: !policy.allowPrivateNetwork,
          ...(policy.resolve ? { resolve: policy.resolve } : {}),
        });
      } catch (error) {
        if (!(error instanceof OutboundUrlError)) throw error;
        if (error.reason === 'unresolvable') {
          throw new UpstreamError('network', `no answer from ${url.host} (${error.message})`);
        }
        throw new UpstreamError(
          'private_address',
          `refused to call ${url.host}: ${error.message} (AUDIT_ALLOW_PRIVATE_NETWORK=true allows it)`,
        );
      }
      if (checked.size > 100) checked.clear();
      checked.set(url.host, now() + REMEMBER_MS);
    }
    return inner(input, init);
  };
  return guarded as typeof fetch;
}
