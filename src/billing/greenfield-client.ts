/**
 * The two Greenfield API v1 calls the hub makes (BTCPay Server docs, "Invoices"):
 * `POST /api/v1/stores/{storeId}/invoices` and `GET /api/v1/stores/{storeId}/invoices/{invoiceId}`,
 * authorised with `Authorization: token <api key>`. Whatever goes wrong on the way (refused,
 * timed out, 4xx, 5xx, a body that is not the documented shape) is one typed error with a plain
 * reason: the routes turn it into 503 + Retry-After, the webhook into 503 so BTCPay redelivers.
 *
 * Requests go out through the hub's guarded client (src/http/guarded-fetch.ts): unless
 * BTCPAY_ALLOW_PRIVATE_NETWORK=true, a BTCPAY_URL whose name resolves to a private, loopback or
 * link-local address — now or later (DNS rebinding) — is refused on the socket, before the API
 * key is sent.
 */
import { z } from 'zod';
import { type AddressPolicy, guardedFetch, refusedAddressOf } from '../http/guarded-fetch.js';
import type { BillingConfig } from './settings.js';

/** Invoice statuses (Greenfield `InvoiceStatus`). */
export const GREENFIELD_STATUSES = ['New', 'Processing', 'Expired', 'Invalid', 'Settled'] as const;
export type GreenfieldStatus = (typeof GREENFIELD_STATUSES)[number];

const invoiceSchema = z.object({
  id: z.string().min(1),
  storeId: z.string().min(1),
  amount: z.union([z.string(), z.number()]).transform(String),
  currency: z.string().min(1),
  status: z.enum(GREENFIELD_STATUSES),
  additionalStatus: z.string().optional().nullable(),
  checkoutLink: z.string().optional().nullable(),
  metadata: z.record(z.string(), z.unknown()).optional().nullable(),
});

export type GreenfieldInvoice = z.output<typeof invoiceSchema>;

export interface CreateInvoice {
  amount: string;
  currency: string;
  metadata: Record<string, string>;
  redirectUrl?: string;
}

export class BtcpayUnavailableError extends Error {
  override readonly name = 'BtcpayUnavailableError';
  constructor(readonly reason: string) {
    super(reason);
  }
}

export class GreenfieldClient {
  private readonly fetch: (url: string, init: RequestInit) => Promise<Response>;

  constructor(
    private readonly config: Pick<
      BillingConfig,
      'baseUrl' | 'storeId' | 'apiKey' | 'timeoutMs' | 'allowPrivateNetwork'
    >,
    /** DNS (tests). */
    resolve?: AddressPolicy['resolve'],
  ) {
    this.fetch = guardedFetch({
      allowPrivateNetwork: config.allowPrivateNetwork ?? false,
      setting: 'BTCPAY_ALLOW_PRIVATE_NETWORK',
      ...(resolve ? { resolve } : {}),
    });
  }

  private storePath(suffix: string): string {
    const { baseUrl, storeId } = this.config;
    return `${baseUrl.href.replace(/\/$/, '')}/api/v1/stores/${encodeURIComponent(storeId)}/invoices${suffix}`;
  }

  async createInvoice(input: CreateInvoice): Promise<GreenfieldInvoice> {
    return this.call('POST', this.storePath(''), {
      amount: input.amount,
      currency: input.currency,
      metadata: input.metadata,
      ...(input.redirectUrl ? { checkout: { redirectURL: input.redirectUrl } } : {}),
    });
  }

  async getInvoice(invoiceId: string): Promise<GreenfieldInvoice> {
    return this.call('GET', this.storePath(`/${encodeURIComponent(invoiceId)}`));
  }

  private async call(method: string, url: string, body?: unknown): Promise<GreenfieldInvoice> {
    let res: Response;
    try {
      res = await this.fetch(url, {
        method,
        headers: {
          authorization: `token ${this.config.apiKey.reveal()}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        redirect: 'error',
        signal: AbortSignal.timeout(this.config.timeoutMs),
      });
    } catch (error) {
      const refused = refusedAddressOf(error);
      if (refused) {
        // The reason reaches subscribers (503 detail): the setting, not the address.
        throw new BtcpayUnavailableError(
          'the payment server is at a non-public address; set BTCPAY_ALLOW_PRIVATE_NETWORK=true for a BTCPay on the LAN',
        );
      }
      const timedOut =
        error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
      throw new BtcpayUnavailableError(
        timedOut ? 'the payment server did not answer in time' : 'the payment server cannot be reached',
      );
    }
    let text: string;
    try {
      text = await res.text();
    } catch {
      throw new BtcpayUnavailableError('the payment server did not answer in time');
    }
    if (!res.ok) {
      throw new BtcpayUnavailableError(
        res.status >= 500
          ? `the payment server answered an error (HTTP ${res.status})`
          : `the payment server refused the request (HTTP ${res.status}); check BTCPAY_STORE_ID and the API key's permissions`,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new BtcpayUnavailableError('the payment server answered something that is not JSON');
    }
    const parsed = invoiceSchema.safeParse(json);
    if (!parsed.success)
      throw new BtcpayUnavailableError('the payment server answered an unexpected invoice shape');
    return parsed.data;
  }
}

/** Equal decimal amounts, whatever their trailing zeros (`5`, `5.00`). */
export function sameAmount(a: string, b: string): boolean {
  const norm = (v: string) => {
    const m = /^(\d+)(?:\.(\d*))?$/.exec(v.trim());
    if (!m) return undefined;
    const int = m[1]!.replace(/^0+(?=\d)/, '');
    const frac = (m[2] ?? '').replace(/0+$/, '');
    return frac ? `${int}.${frac}` : int;
  };
  const x = norm(a);
  return x !== undefined && x === norm(b);
}
