/**
 * A loopback BTCPay Server speaking the Greenfield API v1 shapes the hub uses (BTCPay docs,
 * "Invoices" and "Webhooks"): create an invoice (`POST /api/v1/stores/{storeId}/invoices`,
 * `Authorization: token <key>`) answering `id`, `storeId`, `checkoutLink`, `status: "New"`,
 * `amount`, `currency`, `metadata`; get one; and webhook deliveries signed as BTCPay signs them
 * (`BTCPay-Sig: sha256=<hex HMAC-SHA256(secret, body)>`), redelivered with a new `deliveryId`
 * and the first one's as `originalDeliveryId`. A test can make it unreachable, answer 5xx,
 * 4xx, garbage, or too slowly.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeInvoiceStatus = 'New' | 'Processing' | 'Expired' | 'Invalid' | 'Settled';
export type FakeMode = 'ok' | 'unreachable' | 'error500' | 'forbidden' | 'garbage' | 'slow';

export interface FakeInvoice {
  id: string;
  storeId: string;
  amount: string;
  currency: string;
  status: FakeInvoiceStatus;
  additionalStatus: 'None' | 'PaidLate' | 'PaidPartial' | 'Marked' | 'Invalid' | 'PaidOver';
  checkoutLink: string;
  metadata: Record<string, unknown>;
  createdTime: number;
  expirationTime: number;
}

export interface Delivery {
  deliveryId: string;
  status: number;
  body: unknown;
}

export class FakeBtcpay {
  readonly invoices = new Map<string, FakeInvoice>();
  /** Every request the hub made: method and path. */
  readonly requests: Array<{ method: string; path: string; body?: unknown }> = [];
  mode: FakeMode = 'ok';
  /** Where deliveries go: the hub's `/api/v1/billing/webhooks/btcpay`. */
  webhookUrl = '';
  private server: Server | undefined;
  private readonly slow = new Set<ServerResponse>();

  constructor(
    readonly options: { storeId: string; apiKey: string; webhookSecret: string; webhookId?: string },
  ) {}

  get url(): string {
    const { port } = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
  }

  async stop(): Promise<void> {
    for (const res of this.slow) res.destroy();
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    this.requests.push({ method: req.method ?? '', path, ...(text ? { body: JSON.parse(text) } : {}) });
    if (this.mode === 'unreachable') {
      req.socket.destroy();
      return;
    }
    if (this.mode === 'slow') {
      this.slow.add(res);
      return; // never answers; the hub's timeout gives up
    }
    if (this.mode === 'error500') return this.send(res, 500, { code: 'generic-error', message: 'boom' });
    if (this.mode === 'garbage') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('<html>not json');
      return;
    }
    if (this.mode === 'forbidden' || req.headers.authorization !== `token ${this.options.apiKey}`) {
      return this.send(res, 403, { code: 'missing-permission', message: 'forbidden' });
    }
    const m = /^\/api\/v1\/stores\/([^/]+)\/invoices(?:\/([^/]+))?$/.exec(path);
    if (!m || decodeURIComponent(m[1]!) !== this.options.storeId) {
      return this.send(res, 404, { code: 'store-not-found', message: 'not found' });
    }
    if (req.method === 'POST' && !m[2]) {
      const input = JSON.parse(text) as {
        amount: string;
        currency: string;
        metadata?: Record<string, unknown>;
      };
      const id = randomBytes(11).toString('base64url').replace(/[-_]/g, 'x');
      const now = Math.floor(Date.now() / 1000);
      const invoice: FakeInvoice = {
        id,
        storeId: this.options.storeId,
        amount: input.amount,
        currency: input.currency,
        status: 'New',
        additionalStatus: 'None',
        checkoutLink: `${this.url}/i/${id}`,
        metadata: input.metadata ?? {},
        createdTime: now,
        expirationTime: now + 900,
      };
      this.invoices.set(id, invoice);
      return this.send(res, 200, invoice);
    }
    if (req.method === 'GET' && m[2]) {
      const invoice = this.invoices.get(decodeURIComponent(m[2]));
      if (!invoice) return this.send(res, 404, { code: 'invoice-not-found', message: 'not found' });
      return this.send(res, 200, invoice);
    }
    this.send(res, 405, { code: 'method-not-allowed', message: 'no' });
  }

  private send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  invoice(id: string): FakeInvoice {
    const invoice = this.invoices.get(id);
    if (!invoice) throw new Error(`no invoice ${id} at the fake`);
    return invoice;
  }

  setStatus(
    id: string,
    status: FakeInvoiceStatus,
    additionalStatus: FakeInvoice['additionalStatus'] = 'None',
  ): void {
    Object.assign(this.invoice(id), { status, additionalStatus });
  }

  /** The webhook body BTCPay would send for `type` about the invoice. */
  payload(
    invoiceId: string,
    type: string,
    options: { deliveryId?: string; originalDeliveryId?: string; storeId?: string } = {},
  ): Record<string, unknown> {
    const invoice = this.invoices.get(invoiceId);
    const deliveryId = options.deliveryId ?? randomBytes(11).toString('base64url');
    const originalDeliveryId = options.originalDeliveryId ?? deliveryId;
    return {
      deliveryId,
      webhookId: this.options.webhookId ?? 'Wh1',
      originalDeliveryId,
      isRedelivery: originalDeliveryId !== deliveryId,
      type,
      timestamp: Math.floor(Date.now() / 1000),
      storeId: options.storeId ?? this.options.storeId,
      invoiceId,
      metadata: invoice?.metadata ?? {},
      ...(type === 'InvoiceSettled' || type === 'InvoiceProcessing' ? { manuallyMarked: false } : {}),
      ...(type === 'InvoiceReceivedPayment' ? { afterExpiration: false, paymentMethod: 'BTC-CHAIN' } : {}),
    };
  }

  /** Signs and POSTs a raw body to the hub as BTCPay does; `secret` re-signs with another one. */
  async post(
    body: string,
    options: { secret?: string; signature?: string | null } = {},
  ): Promise<Delivery & { deliveryId: string }> {
    const sig =
      options.signature === undefined
        ? `sha256=${createHmac('sha256', options.secret ?? this.options.webhookSecret)
            .update(body)
            .digest('hex')}`
        : options.signature;
    const res = await fetch(this.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(sig === null ? {} : { 'BTCPay-Sig': sig }) },
      body,
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { deliveryId: '', status: res.status, body: parsed };
  }

  /** One delivery of event `type` about the invoice; the delivery id is remembered for `redeliver`. */
  async deliver(invoiceId: string, type: string, options: { storeId?: string } = {}): Promise<Delivery> {
    const payload = this.payload(invoiceId, type, options);
    const res = await this.post(JSON.stringify(payload));
    return { ...res, deliveryId: payload.deliveryId as string };
  }

  /** BTCPay's redelivery of an earlier delivery: a new delivery id, the first one as `originalDeliveryId`. */
  async redeliver(invoiceId: string, type: string, original: string): Promise<Delivery> {
    const payload = this.payload(invoiceId, type, { originalDeliveryId: original });
    const res = await this.post(JSON.stringify(payload));
    return { ...res, deliveryId: payload.deliveryId as string };
  }

  /** The customer pays and the payment confirms: Processing, then Settled, each announced. */
  async pay(invoiceId: string): Promise<Delivery> {
    this.setStatus(invoiceId, 'Processing');
    await this.deliver(invoiceId, 'InvoiceReceivedPayment');
    await this.deliver(invoiceId, 'InvoiceProcessing');
    this.setStatus(invoiceId, 'Settled');
    return this.deliver(invoiceId, 'InvoiceSettled');
  }
}
