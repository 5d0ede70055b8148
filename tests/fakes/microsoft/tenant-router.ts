/**
 * Issue 29: several Microsoft 365 tenants behind one set of endpoints, as the real ones are (the
 * login, Graph and Management base URLs are shared settings). Each tenant is its own
 * FakeMicrosoft (its own credentials, data and faults); the router sends a request to the fake
 * whose tenant id is in the path (token, Management API) or which issued the bearer token
 * (Graph), and rewrites the fakes' own addresses in links and scopes. `hold` keeps one
 * tenant's requests unanswered until `release` (a tenant that hangs).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { FakeMicrosoft } from './fake-microsoft.js';

type Api = 'login' | 'graph' | 'management';

export class FakeTenantRouter {
  private readonly servers: Record<Api, Server>;
  private readonly ports: Record<Api, number> = { login: 0, graph: 0, management: 0 };
  private readonly held = new Map<string, { release: () => void; promise: Promise<void> }>();
  /** Requests each tenant's fake is being held on (by tenant id). */
  readonly waiting = new Map<string, number>();

  constructor(private readonly fakes: readonly FakeMicrosoft[]) {
    const make = (api: Api) => createServer((q, s) => void this.handle(api, q, s));
    this.servers = { login: make('login'), graph: make('graph'), management: make('management') };
  }

  async start(): Promise<void> {
    for (const api of ['login', 'graph', 'management'] as const) {
      await new Promise<void>((resolve) => this.servers[api].listen(0, '127.0.0.1', resolve));
      this.ports[api] = (this.servers[api].address() as { port: number }).port;
    }
  }

  async stop(): Promise<void> {
    for (const h of this.held.values()) h.release();
    for (const server of Object.values(this.servers)) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  url(api: Api): string {
    return `http://127.0.0.1:${this.ports[api]}`;
  }

  /** The shared base URLs (the per-tenant credentials come from each fake). */
  env(): Record<string, string> {
    return {
      AUDIT_LOGIN_BASE_URL: this.url('login'),
      AUDIT_GRAPH_BASE_URL: this.url('graph'),
      AUDIT_MANAGEMENT_BASE_URL: this.url('management'),
    };
  }

  /** Leaves every request to `fake` unanswered until `release(fake)`. */
  hold(fake: FakeMicrosoft): void {
    let release = () => {};
    const promise = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.held.set(fake.tenantId, { release, promise });
  }

  release(fake: FakeMicrosoft): void {
    this.held.get(fake.tenantId)?.release();
    this.held.delete(fake.tenantId);
  }

  private pick(api: Api, path: string, authorization: string | undefined): FakeMicrosoft | undefined {
    const inPath =
      api === 'login' ? /^\/([^/]+)\/oauth2\//.exec(path) : /^\/api\/v1\.0\/([^/]+)\//.exec(path);
    if (api !== 'graph') return this.fakes.find((f) => f.tenantId === decodeURIComponent(inPath?.[1] ?? ''));
    const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '';
    return this.fakes.find((f) => f.issued(token));
  }

  /** The router's addresses ↔ a fake's, in either direction. */
  private swap(text: string, fake: FakeMicrosoft, toFake: boolean): string {
    const pairs: Array<[string, string]> = [
      [this.url('graph'), fake.graphUrl],
      [this.url('management'), fake.managementUrl],
    ];
    let out = text;
    for (const [mine, theirs] of pairs)
      out = toFake ? out.replaceAll(mine, theirs) : out.replaceAll(theirs, mine);
    return out;
  }

  private async handle(api: Api, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    const fake = this.pick(api, new URL(path, 'http://router').pathname, req.headers.authorization);
    if (!fake) {
      res.writeHead(api === 'graph' ? 401 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'unknown tenant or token' }));
      return;
    }
    const held = this.held.get(fake.tenantId);
    if (held) {
      this.waiting.set(fake.tenantId, (this.waiting.get(fake.tenantId) ?? 0) + 1);
      await held.promise;
    }
    if (api === 'login') {
      const form = new URLSearchParams(body);
      const scope = form.get('scope');
      if (scope) form.set('scope', this.swap(scope, fake, true));
      body = form.toString();
    }
    const target = api === 'login' ? fake.loginUrl : api === 'graph' ? fake.graphUrl : fake.managementUrl;
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'content-type', 'accept']) {
      const v = req.headers[name];
      if (typeof v === 'string') headers[name] = v;
    }
    let answer: Response;
    try {
      answer = await fetch(`${target}${path}`, {
        method: req.method ?? 'GET',
        headers,
        ...(body && req.method !== 'GET' ? { body } : {}),
      });
    } catch {
      res.destroy();
      return;
    }
    const text = this.swap(await answer.text(), fake, false);
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date'].includes(name))
        out[name] = this.swap(value, fake, false);
    });
    res.writeHead(answer.status, out);
    res.end(text);
  }
}

export interface TwoTenants {
  contoso: FakeMicrosoft;
  fabrikam: FakeMicrosoft;
  router: FakeTenantRouter;
  /** AUDIT_TENANTS=contoso,fabrikam with each one's credentials, and the router's base URLs. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Two tenants, `contoso` and `fabrikam`, each a fake with its own credentials, behind one router. */
export async function startTwoTenants(): Promise<TwoTenants> {
  const contoso = new FakeMicrosoft({
    tenantId: '11111111-1111-4111-8111-111111111111',
    clientId: 'c0c0c0c0-0000-4000-8000-000000000001',
    clientSecret: 'contoso-secret-value-0123456789',
  });
  const fabrikam = new FakeMicrosoft({
    tenantId: '22222222-2222-4222-8222-222222222222',
    clientId: 'fabfabfa-0000-4000-8000-000000000002',
    clientSecret: 'fabrikam-secret-value-0123456789',
  });
  await contoso.start();
  await fabrikam.start();
  const router = new FakeTenantRouter([contoso, fabrikam]);
  await router.start();
  const credentials = (name: string, fake: FakeMicrosoft) => ({
    [`AUDIT_${name}_TENANT_ID`]: fake.tenantId,
    [`AUDIT_${name}_CLIENT_ID`]: fake.clientId,
    [`AUDIT_${name}_CLIENT_SECRET`]: fake.clientSecret,
  });
  return {
    contoso,
    fabrikam,
    router,
    env: {
      ...router.env(),
      AUDIT_TENANTS: 'contoso,fabrikam',
      ...credentials('CONTOSO', contoso),
      ...credentials('FABRIKAM', fabrikam),
    },
    async stop() {
      await router.stop();
      await contoso.stop();
      await fabrikam.stop();
    },
  };
}
