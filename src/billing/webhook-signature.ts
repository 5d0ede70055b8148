/**
 * BTCPay signs each webhook delivery: `BTCPay-Sig: sha256=<hex HMAC-SHA256(secret, raw body)>`
 * (Greenfield "Webhooks"). Checked on the raw bytes, in constant time, before the body is parsed.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type SignatureFailure = 'missing_signature' | 'bad_signature';

export { signBody } from '../http/webhook-post.js';

/** undefined when the signature is right, otherwise why not. */
export function checkSignature(
  secret: string,
  body: Uint8Array,
  header: string | undefined,
): SignatureFailure | undefined {
  if (header === undefined || header.trim() === '') return 'missing_signature';
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  const expected = createHmac('sha256', secret).update(body).digest();
  // Compare fixed-length buffers either way, so a malformed header costs the same as a wrong one.
  const given = m ? Buffer.from(m[1]!, 'hex') : Buffer.alloc(expected.length);
  const equal = timingSafeEqual(given, expected);
  return m && equal ? undefined : 'bad_signature';
}
