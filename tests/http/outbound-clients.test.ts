/**
 * Every outbound client goes through the one guarded client (src/http/guarded-fetch.ts), so the
 * address check happens at connect time for each of them (README "Security", "Outbound
 * connections"): a source scan finds no other way out, and each client kind refuses a host in
 * the LAN with an error naming its setting. Nothing here connects anywhere but loopback: every
 * refusal happens before a connection is made.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { LlmError } from '../../plugins/audit/llm/client.js';
import { addressGuardedFetch } from '../../plugins/audit/microsoft/address-guard.js';
import { UpstreamError } from '../../plugins/audit/microsoft/upstream.js';
import { AuthError, createTokenVerifier } from '../../src/auth/jwt-verifier.js';
import { BtcpayUnavailableError, GreenfieldClient } from '../../src/billing/greenfield-client.js';
import { Secret } from '../../src/config/secret.js';
import { guardedFetch, refusedAddressOf } from '../../src/http/guarded-fetch.js';
import { upstreamAddressPolicy } from '../../sync/site/push-actor.js';
import type { SyncConfig } from '../../sync/site/settings.js';
import { llmFailureAt } from '../plugins/audit/llm-helpers.js';

const ROOT = join(import.meta.dirname, '..', '..');

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** Code without comments (a comment may mention fetch). */
function code(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('every outbound HTTP client uses the guarded client', () => {
  const files = ['src', 'hub', 'plugins', 'sync']
    .flatMap(sources)
    .map((p) => relative('.', p))
    .filter((p) => !p.startsWith('src/web/') && p !== 'src/http/guarded-fetch.ts');

  it('scans the hub’s, the plugins’ and the sync code', () => {
    expect(files).toContain('src/billing/greenfield-client.ts');
    expect(files).toContain('sync/site/downlink-client.ts');
    expect(files.length).toBeGreaterThan(100);
  });

  it('finds no global fetch, no agent of its own, no unguarded JWKS or WebSocket, no node:http(s) client', () => {
    const found: string[] = [];
    for (const file of files) {
      const text = code(file);
      const hit = (what: string) => {
        found.push(`${file}: ${what}`);
      };
      if (
        /(?<![\w.$/])(?<!(?:private|protected|public|async)\s+)fetch\s*\(/.test(text) ||
        /\?\?\s*fetch\b/.test(text)
      )
        hit('global fetch');
      if (/new\s+(?:undici\.)?(?:Agent|Pool|Client|ProxyAgent)\s*\(/.test(text)) hit('new Agent');
      if (/^import\s+(?!type\b)[^;]*from\s+'undici'/m.test(text) && !text.includes('guarded-fetch.js'))
        hit('undici without the guarded agent');
      if (/createRemoteJWKSet\s*\(/.test(text) && !text.includes('[customFetch]')) hit('createRemoteJWKSet');
      if (/new\s+WebSocket\s*\(/.test(text) && !text.includes('createConnection: guardedSocketConnect'))
        hit('WebSocket');
      if (/\bhttps?\.(?:request|get)\s*\(/.test(text) || /from\s+'node:https'/.test(text))
        hit('node:http(s) client');
    }
    expect(found).toEqual([]);
  });
});

const LAN = async () => ['10.0.0.1'];

describe('each client kind refuses a host in the LAN before connecting', () => {
  it('Microsoft (and the SIEM, through the same guard): a name resolving to 169.254.169.254', async () => {
    const guarded = addressGuardedFetch(undefined, {
      allowedHosts: [],
      allowPrivateNetwork: false,
      resolve: async () => ['169.254.169.254'],
    });
    const error = await guarded('https://graph.public.example/v1.0/auditLogs').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).kind).toBe('private_address');
    expect((error as Error).message).toBe(
      'refused to call graph.public.example: host graph.public.example resolves to a non-public address (169.254.169.254); refused (AUDIT_ALLOW_PRIVATE_NETWORK=true allows it)',
    );
  });

  it('BTCPay: without BTCPAY_ALLOW_PRIVATE_NETWORK, a name resolving into the LAN (loopback too)', async () => {
    for (const address of ['10.0.0.1', '127.0.0.1']) {
      const client = new GreenfieldClient(
        {
          baseUrl: new URL('https://btcpay.public.example'),
          storeId: 'S',
          apiKey: new Secret('key'),
          timeoutMs: 5_000,
          allowPrivateNetwork: false,
        },
        async () => [address],
      );
      const error = await client.getInvoice('inv1').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BtcpayUnavailableError);
      expect((error as Error).message).toMatch(/non-public address; set BTCPAY_ALLOW_PRIVATE_NETWORK=true/);
    }
  });

  it('the language model: a literal private LLM_BASE_URL is refused on the socket too', async () => {
    const error = await llmFailureAt('https://10.0.0.1/v1', { timeoutMs: 5_000, maxTokens: 10 });
    expect(error).toBeInstanceOf(LlmError);
    expect((error as LlmError).reason).toBe('refused_address');
  });

  it('the identity provider’s JWKS: a private address, unless AUTH_JWKS_ALLOW_PRIVATE_NETWORK', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer('https://idp.lan.example')
      .setSubject('u')
      .setAudience('meshhub')
      .setExpirationTime('5m')
      .sign(privateKey);
    const verifier = createTokenVerifier([
      { issuer: 'https://idp.lan.example', audience: 'meshhub', keys: new URL('https://10.0.0.1/jwks') },
    ]);
    const error = await verifier.verify(token).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect(error).toMatchObject({ reason: 'keys_unavailable' });
    expect((error as Error).message).toMatch(/AUTH_JWKS_ALLOW_PRIVATE_NETWORK=true allows it/);
  });

  it('the site’s upstream: a name resolving into the LAN, unless SYNC_ALLOW_PRIVATE_NETWORK (loopback allowed)', async () => {
    const config = (allowPrivateNetwork: boolean) => ({ allowPrivateNetwork }) as SyncConfig;
    const refused = upstreamAddressPolicy({ config: config(false), resolve: LAN });
    const f = guardedFetch(refused);
    try {
      const error = await f('https://upstream.public.example/api/sync/v1/ping').catch((e: unknown) => e);
      expect(refusedAddressOf(error)?.message).toMatch(/SYNC_ALLOW_PRIVATE_NETWORK=true allows it/);
    } finally {
      await f.close();
    }
    expect(refused).toMatchObject({ allowLoopback: true, allowPrivateNetwork: false });
    expect(upstreamAddressPolicy({ config: config(true) })).toMatchObject({ allowPrivateNetwork: true });
  });
});
