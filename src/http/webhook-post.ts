/**
 * One outbound POST of a webhook (audit alerts, notifications): through the hub's guarded client
 * (guarded-fetch.ts), redirects not followed (one could lead into the LAN), the answer's body
 * dropped; a 3xx or an error status is a WebhookError, a refused address an OutboundUrlError
 * (final: not worth retrying). `signBody` is the `X-Meshhub-Signature` value of a body.
 */
import { createHmac } from 'node:crypto';
import { refusedAddressOf } from './guarded-fetch.js';

/** The delivery failed (a redirect or an error status); worth retrying. */
export class WebhookError extends Error {
  constructor(
    message: string,
    /** The receiver's answer. */
    readonly status: number,
  ) {
    super(message);
  }
}

/** `sha256=<hex HMAC-SHA256(secret, body)>`. */
export function signBody(secret: string, body: Uint8Array | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export async function postWebhook(
  send: (input: URL, init: RequestInit) => Promise<Response>,
  url: URL,
  init: { headers: Record<string, string>; body: string | Uint8Array; signal: AbortSignal },
): Promise<Response> {
  let res: Response;
  try {
    res = await send(url, {
      method: 'POST',
      headers: init.headers,
      body: init.body,
      redirect: 'manual',
      signal: init.signal,
    });
  } catch (error) {
    throw refusedAddressOf(error) ?? error;
  }
  await res.body?.cancel().catch(() => {});
  if (res.status >= 300 && res.status < 400)
    throw new WebhookError(`redirect (${res.status}) not followed`, res.status);
  if (!res.ok) throw new WebhookError(`the receiver answered ${res.status}`, res.status);
  return res;
}
