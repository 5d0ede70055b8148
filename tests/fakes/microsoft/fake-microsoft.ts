/**
 * A loopback fake of the three Microsoft endpoints the audit plugin talks to, each on its own
 * port (so a token for one API is refused by the other, as in Entra ID):
 *
 * - identity platform: `POST /{tenant}/oauth2/v2.0/token`, client credentials, form-encoded;
 *   errors as `{ error, error_description: "AADSTS…", error_codes }`.
 * - Graph: `GET /v1.0/auditLogs/directoryAudits` and `/v1.0/deviceManagement/auditEvents` with
 *   `$filter=activityDateTime ge|le …`, newest first, paged by `@odata.nextLink` (`$skiptoken`).
 * - Management Activity API: `subscriptions/start|list`, `subscriptions/content` with
 *   startTime/endTime (≤ 24 h apart, ≤ 7 days back, else AF20030), pages announced in the
 *   `NextPageUri` header, content blobs at their `contentUri`.
 *
 * Faults are queued per route: 429 with or without Retry-After, 503, 403 AF429, bodies that are
 * not JSON, and per-blob failures. Every request is logged for assertions.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { applyFault, type Fault, send } from './wire.js';

export type { Fault };

export type Route = 'token' | 'directoryAudits' | 'auditEvents' | 'subscriptions' | 'content' | 'blob';

export interface LoggedRequest {
  api: 'login' | 'graph' | 'management';
  method: string;
  path: string;
  query: URLSearchParams;
  authorization?: string;
  at: number;
}

interface Blob {
  contentType: string;
  contentId: string;
  created: number;
  expiration: number;
  records: unknown[] | string;
}

const CONTENT_TYPES = [
  'Audit.AzureActiveDirectory',
  'Audit.Exchange',
  'Audit.SharePoint',
  'Audit.General',
  'DLP.All',
];
const HOUR = 3_600_000;

/** A Graph subscription as Graph returns it (the fields we send, plus id and applicationId). */
export interface GraphSubscription {
  id: string;
  resource: string;
  applicationId: string;
  changeType: string;
  clientState: string | null;
  notificationUrl: string;
  expirationDateTime: string;
}

/** Graph's maximum subscription length for directory resources: 4,230 minutes. */
const DIRECTORY_MAX_MINUTES = 4230;

export class FakeMicrosoft {
  readonly tenantId: string;
  readonly clientId: string;
  readonly clientSecret: string;
  pageSize = 50;
  contentPageSize = 20;
  tokenLifetimeSeconds = 3599;
  /** Where `@odata.nextLink` points (default: this Graph); a test sets another host. */
  graphLinkBase: string | undefined;

  readonly directoryAudits: Array<Record<string, unknown>> = [];
  readonly intuneEvents: Array<Record<string, unknown>> = [];
  readonly blobs: Blob[] = [];
  readonly subscriptions = new Map<string, 'enabled' | 'disabled'>();
  readonly requests: LoggedRequest[] = [];
  /** Graph change-notification subscriptions (`POST`/`PATCH /v1.0/subscriptions`), by id. */
  readonly subscriptionsById = new Map<string, GraphSubscription>();
  tokensIssued = 0;

  private readonly faults = new Map<Route, Fault[]>();
  private readonly blobFaults = new Map<string, Fault[]>();
  private readonly tokens = new Map<string, { audience: string; expires: number }>();
  private readonly servers: Record<'login' | 'graph' | 'management', Server>;
  private readonly ports = { login: 0, graph: 0, management: 0 };
  private blobSeq = 0;

  /** Another tenant's credentials (issue 29: two fakes behind FakeTenantRouter). */
  constructor(credentials: { tenantId?: string; clientId?: string; clientSecret?: string } = {}) {
    this.tenantId = credentials.tenantId ?? 'f28ab78a-d401-4060-8012-736e373933eb';
    this.clientId = credentials.clientId ?? '6731de76-14a6-49ae-97bc-6eba6914391e';
    this.clientSecret = credentials.clientSecret ?? 'fake-client-secret-value-0123456789';
    this.servers = {
      login: createServer((q, s) => void this.handle('login', q, s)),
      graph: createServer((q, s) => void this.handle('graph', q, s)),
      management: createServer((q, s) => void this.handle('management', q, s)),
    };
  }

  async start(): Promise<void> {
    for (const api of ['login', 'graph', 'management'] as const) {
      await new Promise<void>((resolve) => this.servers[api].listen(0, '127.0.0.1', resolve));
      this.ports[api] = (this.servers[api].address() as { port: number }).port;
    }
  }

  async stop(): Promise<void> {
    for (const server of Object.values(this.servers)) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  get loginUrl(): string {
    return `http://127.0.0.1:${this.ports.login}`;
  }
  get graphUrl(): string {
    return `http://127.0.0.1:${this.ports.graph}`;
  }
  get managementUrl(): string {
    return `http://127.0.0.1:${this.ports.management}`;
  }

  /** The environment that points the plugin at this fake. */
  env(): Record<string, string> {
    return {
      AUDIT_TENANT_ID: this.tenantId,
      AUDIT_CLIENT_ID: this.clientId,
      AUDIT_CLIENT_SECRET: this.clientSecret,
      AUDIT_LOGIN_BASE_URL: this.loginUrl,
      AUDIT_GRAPH_BASE_URL: this.graphUrl,
      AUDIT_MANAGEMENT_BASE_URL: this.managementUrl,
    };
  }

  /** Whether this fake issued `accessToken` (FakeTenantRouter sends Graph calls by it). */
  issued(accessToken: string): boolean {
    return this.tokens.has(accessToken);
  }

  fail(route: Route, fault: Fault, times = 1): void {
    const list = this.faults.get(route) ?? [];
    for (let i = 0; i < times; i++) list.push(fault);
    this.faults.set(route, list);
  }

  failBlob(contentId: string, fault: Fault, times = 1): void {
    const list = this.blobFaults.get(contentId) ?? [];
    for (let i = 0; i < times; i++) list.push(fault);
    this.blobFaults.set(contentId, list);
  }

  /** Makes a content blob available now (or at `created`); returns its contentId. */
  publish(contentType: string, records: unknown[] | string, created = Date.now()): string {
    const contentId = `${++this.blobSeq}$${created}$${contentType.toLowerCase().replace('.', '_')}$${randomBytes(4).toString('hex')}`;
    this.blobs.push({ contentType, contentId, created, expiration: created + 7 * 24 * HOUR, records });
    return contentId;
  }

  requestsTo(api: LoggedRequest['api'], pathPart = ''): LoggedRequest[] {
    return this.requests.filter((r) => r.api === api && r.path.includes(pathPart));
  }

  private takeFault(route: Route): Fault | undefined {
    return this.faults.get(route)?.shift();
  }

  private async handle(api: LoggedRequest['api'], req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = await new Promise<string>((resolve) => {
      let data = '';
      req.on('data', (c: Buffer) => {
        data += c.toString('utf8');
      });
      req.on('end', () => resolve(data));
    });
    this.requests.push({
      api,
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      at: Date.now(),
    });
    try {
      if (api === 'login') return this.token(url, body, res);
      const audience = api === 'graph' ? this.graphUrl : this.managementUrl;
      const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const token = auth ? this.tokens.get(auth) : undefined;
      if (!token || token.expires < Date.now() || token.audience !== audience) {
        if (api === 'graph') {
          return send(res, 401, {
            error: {
              code: 'InvalidAuthenticationToken',
              message: 'Access token validation failure. Invalid audience.',
            },
          });
        }
        return send(res, 401, {
          error: {
            code: 'AF10001',
            message:
              'The permission set () sent in the request did not include the expected permission ActivityFeed.Read.',
          },
        });
      }
      if (api === 'graph' && url.pathname.startsWith('/v1.0/subscriptions')) {
        return await this.graphSubscriptions(req.method ?? 'GET', url, body, res);
      }
      if (api === 'graph') return this.graph(url, res);
      return this.management(req.method ?? 'GET', url, res);
    } catch (error) {
      send(res, 500, { error: { code: 'FakeError', message: String(error) } });
    }
  }

  private token(url: URL, body: string, res: ServerResponse) {
    if (applyFault(this.takeFault('token'), res, 'login')) return;
    const m = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
    const form = new URLSearchParams(body);
    const aad = (status: number, error: string, code: number, text: string) =>
      send(res, status, {
        error,
        error_description: `AADSTS${code}: ${text}\r\nTrace ID: 0000\r\nCorrelation ID: 0000\r\nTimestamp: ${new Date().toISOString()}`,
        error_codes: [code],
        timestamp: new Date().toISOString(),
        trace_id: '0000',
        correlation_id: '0000',
      });
    if (!m || decodeURIComponent(m[1]!) !== this.tenantId) {
      return aad(400, 'invalid_request', 90002, `Tenant '${m?.[1]}' not found.`);
    }
    if (form.get('grant_type') !== 'client_credentials') {
      return aad(400, 'unsupported_grant_type', 70003, 'The app requested an unsupported grant type.');
    }
    if (form.get('client_id') !== this.clientId) {
      return aad(400, 'unauthorized_client', 700016, 'Application was not found in the directory.');
    }
    if (form.get('client_secret') !== this.clientSecret) {
      return aad(401, 'invalid_client', 7000215, 'Invalid client secret provided.');
    }
    const scope = form.get('scope') ?? '';
    if (!scope.endsWith('/.default')) {
      return aad(
        400,
        'invalid_scope',
        1002012,
        'Client credential flows must have a scope value with /.default suffixed.',
      );
    }
    const access = randomBytes(24).toString('base64url');
    this.tokens.set(access, {
      audience: scope.slice(0, -'/.default'.length),
      expires: Date.now() + this.tokenLifetimeSeconds * 1000,
    });
    this.tokensIssued++;
    send(res, 200, {
      token_type: 'Bearer',
      expires_in: this.tokenLifetimeSeconds,
      ext_expires_in: this.tokenLifetimeSeconds,
      access_token: access,
    });
  }

  /**
   * Graph subscriptions: create (Graph first POSTs `?validationToken=…` to `notificationUrl` and
   * wants the token back as text/plain with 200), renew by PATCH of `expirationDateTime`, delete.
   */
  private async graphSubscriptions(method: string, url: URL, body: string, res: ServerResponse) {
    if (applyFault(this.takeFault('subscriptions'), res, 'graph')) return;
    const id = decodeURIComponent(url.pathname.slice('/v1.0/subscriptions/'.length));
    const bad = (message: string, code = 'ExtensionError') => send(res, 400, { error: { code, message } });
    let input: Record<string, unknown> = {};
    try {
      input = body ? (JSON.parse(body) as Record<string, unknown>) : {};
    } catch {
      return bad('Unable to read JSON request payload.', 'BadRequest');
    }
    const expiryProblem = (value: unknown) => {
      const at = typeof value === 'string' ? Date.parse(value) : Number.NaN;
      if (!Number.isFinite(at)) return 'expirationDateTime is required';
      if (at <= Date.now()) return 'Subscription expiration must be in the future.';
      if (at > Date.now() + DIRECTORY_MAX_MINUTES * 60_000) {
        return `Subscription expiration can only be ${DIRECTORY_MAX_MINUTES} minutes in the future.`;
      }
      return undefined;
    };
    if (method === 'POST' && url.pathname === '/v1.0/subscriptions') {
      for (const field of ['changeType', 'notificationUrl', 'resource']) {
        if (typeof input[field] !== 'string' || !input[field])
          return bad(`${field} is required`, 'InvalidRequest');
      }
      const problem = expiryProblem(input.expirationDateTime);
      if (problem) return bad(problem);
      const token = `Validation: Testing client application reachability for subscription Request-Id: ${randomBytes(8).toString('hex')}`;
      const check = new URL(String(input.notificationUrl));
      check.searchParams.set('validationToken', token);
      const echoed = await fetch(check, { method: 'POST', headers: { 'content-type': 'text/plain' } })
        .then(async (r) =>
          r.status === 200 && /^text\/plain/.test(r.headers.get('content-type') ?? '') ? r.text() : '',
        )
        .catch(() => '');
      if (echoed !== token) {
        return bad(
          'Subscription validation request failed. Notification endpoint must respond with 200 OK to validation request.',
          'InvalidRequest',
        );
      }
      const sub: GraphSubscription = {
        id: crypto.randomUUID(),
        resource: String(input.resource),
        applicationId: this.clientId,
        changeType: String(input.changeType),
        clientState: typeof input.clientState === 'string' ? input.clientState : null,
        notificationUrl: String(input.notificationUrl),
        expirationDateTime: new Date(Date.parse(String(input.expirationDateTime))).toISOString(),
      };
      this.subscriptionsById.set(sub.id, sub);
      return send(res, 201, {
        '@odata.context': 'https://graph.microsoft.com/v1.0/$metadata#subscriptions/$entity',
        ...sub,
      });
    }
    const sub = this.subscriptionsById.get(id);
    if (!sub) {
      return send(res, 404, { error: { code: 'ResourceNotFound', message: `The object was not found.` } });
    }
    if (method === 'PATCH') {
      const problem = expiryProblem(input.expirationDateTime);
      if (problem) return bad(problem);
      sub.expirationDateTime = new Date(Date.parse(String(input.expirationDateTime))).toISOString();
      return send(res, 200, {
        '@odata.context': 'https://graph.microsoft.com/v1.0/$metadata#subscriptions/$entity',
        ...sub,
      });
    }
    if (method === 'DELETE') {
      this.subscriptionsById.delete(id);
      res.writeHead(204).end();
      return;
    }
    return send(res, 200, sub);
  }

  private graph(url: URL, res: ServerResponse) {
    const collection =
      url.pathname === '/v1.0/auditLogs/directoryAudits'
        ? {
            route: 'directoryAudits' as const,
            items: this.directoryAudits,
            context: 'auditLogs/directoryAudits',
          }
        : url.pathname === '/v1.0/deviceManagement/auditEvents'
          ? {
              route: 'auditEvents' as const,
              items: this.intuneEvents,
              context: 'deviceManagement/auditEvents',
            }
          : undefined;
    if (!collection)
      return send(res, 404, {
        error: { code: 'BadRequest', message: 'Resource not found for the segment.' },
      });
    if (applyFault(this.takeFault(collection.route), res, 'graph')) return;
    const filter = url.searchParams.get('$filter');
    let items = [...collection.items];
    if (filter !== null) {
      const clauses = filter.split(/\s+and\s+/i);
      for (const clause of clauses) {
        const m = /^activityDateTime\s+(ge|gt|le|lt)\s+(\S+)$/i.exec(clause.trim());
        const at = m ? Date.parse(m[2]!) : Number.NaN;
        if (!m || !Number.isFinite(at)) {
          return send(res, 400, { error: { code: 'BadRequest', message: 'Invalid filter clause' } });
        }
        const op = m[1]!.toLowerCase();
        items = items.filter((r) => {
          const t = Date.parse(String(r.activityDateTime));
          return op === 'ge' ? t >= at : op === 'gt' ? t > at : op === 'le' ? t <= at : t < at;
        });
      }
    }
    items.sort((a, b) => Date.parse(String(b.activityDateTime)) - Date.parse(String(a.activityDateTime)));
    const skip = Number(Buffer.from(url.searchParams.get('$skiptoken') ?? 'MA', 'base64url').toString() || 0);
    const page = items.slice(skip, skip + this.pageSize);
    const out: Record<string, unknown> = {
      '@odata.context': `https://graph.microsoft.com/v1.0/$metadata#${collection.context}`,
      value: page,
    };
    if (skip + this.pageSize < items.length) {
      const next = new URL(url.pathname, this.graphLinkBase ?? this.graphUrl);
      if (filter !== null) next.searchParams.set('$filter', filter);
      next.searchParams.set('$skiptoken', Buffer.from(String(skip + this.pageSize)).toString('base64url'));
      out['@odata.nextLink'] = next.href;
    }
    send(res, 200, out);
  }

  private management(method: string, url: URL, res: ServerResponse) {
    const m = /^\/api\/v1(?:\.0)?\/([^/]+)\/activity\/feed\/(.+)$/.exec(url.pathname);
    if (!m)
      return send(res, 404, { error: { code: 'AF20050', message: 'The specified content does not exist.' } });
    if (decodeURIComponent(m[1]!) !== this.tenantId) {
      return send(res, 400, {
        error: {
          code: 'AF20010',
          message: 'The tenant ID passed in the URL does not match the tenant ID passed in the access token.',
        },
      });
    }
    const op = m[2]!;
    const contentType = url.searchParams.get('contentType') ?? '';
    if (op === 'subscriptions/start' && method === 'POST') {
      if (applyFault(this.takeFault('subscriptions'), res, 'management')) return;
      if (!CONTENT_TYPES.includes(contentType)) {
        return send(res, 400, {
          error: { code: 'AF20020', message: 'The specified content type is not valid.' },
        });
      }
      this.subscriptions.set(contentType, 'enabled');
      return send(res, 200, { contentType, status: 'enabled', webhook: null });
    }
    if (op === 'subscriptions/list') {
      if (applyFault(this.takeFault('subscriptions'), res, 'management')) return;
      return send(
        res,
        200,
        [...this.subscriptions].map(([contentType, status]) => ({ contentType, status, webhook: null })),
      );
    }
    if (op === 'subscriptions/content') return this.content(url, contentType, res);
    if (op.startsWith('audit/')) {
      const id = decodeURIComponent(op.slice('audit/'.length));
      const blob = this.blobs.find((b) => b.contentId === id);
      if (!blob)
        return send(res, 400, {
          error: { code: 'AF20050', message: `The specified content (${id}) does not exist.` },
        });
      if (applyFault(this.blobFaults.get(id)?.shift() ?? this.takeFault('blob'), res, 'management')) return;
      if (typeof blob.records === 'string') {
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        res.end(blob.records);
        return;
      }
      return send(res, 200, blob.records);
    }
    send(res, 404, { error: { code: 'AF20050', message: 'The specified content does not exist.' } });
  }

  private content(url: URL, contentType: string, res: ServerResponse) {
    if (applyFault(this.takeFault('content'), res, 'management')) return;
    if (!CONTENT_TYPES.includes(contentType)) {
      return send(res, 400, {
        error: { code: 'AF20020', message: 'The specified content type is not valid.' },
      });
    }
    if (this.subscriptions.get(contentType) !== 'enabled') {
      return send(res, 400, {
        error: { code: 'AF20022', message: 'No subscription found for the specified content type' },
      });
    }
    const startText = url.searchParams.get('startTime');
    const endText = url.searchParams.get('endTime');
    const parse = (t: string | null) =>
      t === null ? Number.NaN : Date.parse(/Z$|[+-]\d\d:\d\d$/.test(t) ? t : `${t}Z`);
    const now = Date.now();
    const start = startText === null ? now - 24 * HOUR : parse(startText);
    const end = endText === null ? now : parse(endText);
    if (
      (startText === null) !== (endText === null) ||
      !Number.isFinite(start) ||
      !Number.isFinite(end) ||
      end - start > 24 * HOUR ||
      end < start ||
      start < now - 7 * 24 * HOUR
    ) {
      return send(res, 400, {
        error: {
          code: 'AF20030',
          message:
            'Start time and end time must both be specified (or both omitted) and must be less than or equal to 24 hours apart, with the start time no more than 7 days in the past.',
        },
      });
    }
    const all = this.blobs
      .filter((b) => b.contentType === contentType && b.created >= start && b.created < end)
      .sort((a, b) => a.created - b.created);
    const from = Number(url.searchParams.get('nextPage') ?? 0);
    if (!Number.isInteger(from) || from < 0) {
      return send(res, 400, { error: { code: 'AF20031', message: 'Invalid nextPage Input' } });
    }
    const page = all.slice(from, from + this.contentPageSize).map((b) => ({
      contentType: b.contentType,
      contentId: b.contentId,
      contentUri: `${this.managementUrl}/api/v1.0/${this.tenantId}/activity/feed/audit/${encodeURIComponent(b.contentId)}`,
      contentCreated: new Date(b.created).toISOString(),
      contentExpiration: new Date(b.expiration).toISOString(),
    }));
    const headers: Record<string, string> = {};
    if (from + this.contentPageSize < all.length) {
      const next = new URL(
        `/api/v1/${this.tenantId}/activity/feed/subscriptions/content`,
        this.managementUrl,
      );
      next.searchParams.set('contentType', contentType);
      if (startText !== null) next.searchParams.set('startTime', startText);
      if (endText !== null) next.searchParams.set('endTime', endText);
      next.searchParams.set('nextPage', String(from + this.contentPageSize));
      headers.NextPageUri = next.href;
    }
    send(res, 200, page, headers);
  }
}
