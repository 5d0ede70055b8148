/**
 * Where the hub may send questions and events (spec "Authentication" 7; issue 13 "LLM client"):
 * LLM_BASE_URL must be https, on the allowlist when one is set, carry no credentials, and not
 * resolve to a private address — checked at start-up (`checkLlmBaseUrlResolved`) and again at
 * connect time (the client's guarded agent, src/http/guarded-fetch.ts, so a name that re-resolves
 * into the LAN — DNS rebinding — is refused on the socket, not just on paper).
 *
 * LLM_ALLOW_PRIVATE_NETWORK=true is the operator's explicit opt-in for a model on the LAN or on
 * loopback (llama.cpp's server, Ollama, vLLM): any address, plain http too. It is how a site with
 * no internet at all still gets answers.
 */
import {
  checkOutboundUrl,
  checkOutboundUrlResolved,
  OutboundUrlError,
} from '../../../src/http/outbound-url.js';

export interface LlmUrlPolicy {
  allowedHosts: readonly string[];
  allowPrivateNetwork: boolean;
  /** DNS, injectable for tests. */
  resolve?: (host: string) => Promise<string[]>;
}

/** The checks that need no DNS. */
export function checkLlmBaseUrl(input: string, policy: LlmUrlPolicy): URL {
  if (!policy.allowPrivateNetwork) {
    // No loopback exception here: without the opt-in the model must be a public https service.
    return checkOutboundUrl(input, { allowedHosts: policy.allowedHosts, allowLoopback: false });
  }
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new OutboundUrlError('invalid', 'is not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new OutboundUrlError('scheme', 'must use https or http');
  }
  if (url.username || url.password) {
    throw new OutboundUrlError('credentials', 'must not carry a user name or password');
  }
  // The allowlist still applies; checked on the https twin (http to the LAN is what the opt-in allows).
  checkOutboundUrl(`https://${url.host}`, { allowedHosts: policy.allowedHosts, allowLoopback: true });
  return url;
}

/** Every check, including where the host resolves now (start-up). */
export async function checkLlmBaseUrlResolved(input: string, policy: LlmUrlPolicy): Promise<URL> {
  const url = checkLlmBaseUrl(input, policy);
  if (policy.allowPrivateNetwork) return url;
  return checkOutboundUrlResolved(url, {
    allowedHosts: policy.allowedHosts,
    allowLoopback: false,
    refusePrivateAddresses: true,
    ...(policy.resolve ? { resolve: policy.resolve } : {}),
  });
}
