/**
 * Why a text was not delivered, in plain words, from Routing.error_reason (the Routing_Error
 * enum of mesh.proto) or our own acknowledgement timeout. Transient reasons keep the text queued
 * (held until MESSAGE_HOLD_HOURS ends, docs/held-texts.md); the rest fail at once, since sending
 * again cannot help.
 */

const DESCRIPTIONS: Record<string, string> = {
  NO_ROUTE: 'no route to the node is known',
  GOT_NAK: 'a node on the way refused to forward it',
  TIMEOUT: 'the mesh timed out forwarding it',
  NO_INTERFACE: 'the radio had no interface to send it on',
  MAX_RETRANSMIT: 'the radio repeated it but no node acknowledged it (the node may be out of range or off)',
  NO_CHANNEL: 'the radio has no such channel',
  TOO_LARGE: 'it is too large for one radio packet',
  NO_RESPONSE: "the node's radio received it; no app on the node replied",
  DUTY_CYCLE_LIMIT: 'the radio may not transmit now (duty-cycle limit)',
  BAD_REQUEST: 'the node considered the request invalid',
  NOT_AUTHORIZED: 'the node refused it as not authorized',
  PKI_FAILED: 'the radio could not encrypt it for the node',
  PKI_UNKNOWN_PUBKEY: 'the node has no public key to decrypt it',
  ADMIN_BAD_SESSION_KEY: 'the node rejected the admin session key',
  ADMIN_PUBLIC_KEY_UNAUTHORIZED: 'the node does not accept our admin key',
  RATE_LIMIT_EXCEEDED: 'the mesh rate-limited it (airtime fairness)',
  PKI_SEND_FAIL_PUBLIC_KEY: "the radio does not know the node's public key",
};

/**
 * The destination could not be reached (docs/held-texts.md): the firmware gave up retransmitting
 * (MAX_RETRANSMIT), knows no route, timed out, or a relay refused (GOT_NAK); or nothing
 * acknowledged it at all (ACK_TIMEOUT). The text waits for the node to be heard again.
 */
const UNREACHABLE = new Set(['NO_ROUTE', 'GOT_NAK', 'TIMEOUT', 'MAX_RETRANSMIT', 'ACK_TIMEOUT']);

/** Our own radio may not transmit now: worth another attempt later, whether or not the node is heard. */
const RADIO_BUSY = new Set(['NO_INTERFACE', 'DUTY_CYCLE_LIMIT', 'RATE_LIMIT_EXCEEDED']);

export const ACK_TIMEOUT_CODE = 'ACK_TIMEOUT';

/**
 * The destination's own radio received the text, but no application there answered the request
 * (mesh.proto Routing.Error NO_RESPONSE: "the request reached the destination node, but no
 * service on that node wants to send a response"). The text got there: it counts as delivered.
 */
export const NO_RESPONSE_CODE = 'NO_RESPONSE';

/** Code of a text that failed because its hold ended before it got through. */
export const HOLD_EXPIRED_CODE = 'HOLD_EXPIRED';

/** Worth another attempt (the mesh or the airtime may be different in a while); the rest fail at once. */
export function isTransientRoutingError(code: string): boolean {
  return UNREACHABLE.has(code) || RADIO_BUSY.has(code);
}

/** The destination could not be reached: the text waits for the node to be heard. */
export function isUnreachable(code: string): boolean {
  return UNREACHABLE.has(code);
}

/** `MAX_RETRANSMIT` → "the radio repeated it but no node acknowledged it (…) [MAX_RETRANSMIT]". */
export function describeRoutingError(code: string): string {
  return `${DESCRIPTIONS[code] ?? 'the mesh reported an error'} [${code}]`;
}

export function describeAckTimeout(timeoutMs: number, attempts: number): string {
  const seconds = Math.round(timeoutMs / 1000);
  return `no acknowledgement within ${seconds} s after ${attempts} attempt${attempts === 1 ? '' : 's'} [${ACK_TIMEOUT_CODE}]`;
}
