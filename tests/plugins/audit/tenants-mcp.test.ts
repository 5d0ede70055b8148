/**
 * Issue 29: the MCP tools over HTTP answer a caller limited to one tenant (AUDIT_ROLE_TENANTS)
 * with that tenant's events only — search, summary and a single event — as the HTTP API does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditStore } from '../../../plugins/audit/store/audit-store.js';
import { startTestHub, type TestHub } from '../../helpers/hub.js';
import { localUserToken, QUIET_ENV, seed } from './helpers.js';
import { idpAuthEnv, type LocalIdp, startLocalIdp } from './idp.js';

const now = Date.now();
let hub: TestHub;
let idp: LocalIdp;
let limited: string;
let fabrikamId: string;

/** One MCP tool call over HTTP (stateless JSON), its text parsed; `error` when the tool refused. */
async function tool(name: string, args: Record<string, unknown> = {}) {
  const res = await fetch(`${hub.baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${limited}`,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  });
  expect(res.status).toBe(200);
  const answer = (await res.json()) as { result: { isError?: boolean; content: Array<{ text: string }> } };
  const text = answer.result.content[0]!.text;
  return answer.result.isError ? { error: text } : JSON.parse(text);
}

beforeAll(async () => {
  idp = await startLocalIdp();
  // Two reader roles, one of them limited to Contoso; MCP over HTTP with the provider's tokens.
  const env = {
    AUDIT_READER_ROLES: 'auditor,contoso-auditors',
    AUDIT_ROLE_TENANTS: 'contoso-auditors:contoso',
  };
  hub = await startTestHub({
    ...env,
    ...idpAuthEnv(idp),
    ...QUIET_ENV,
    RADIO: 'none',
    PLUGINS: 'audit',
    MCP_HTTP_ENABLED: 'true',
  });
  seed(new AuditStore(() => hub.hub.store.db).repos(), [
    { tenant: 'contoso', source: 'directory', at: now - 3_600_000, actor: 'a@contoso.com' },
    { tenant: 'fabrikam', source: 'directory', at: now - 1_800_000, actor: 'b@fabrikam.com' },
  ]);
  fabrikamId = String(
    hub.hub.store.db
      .prepare(
        "SELECT seq FROM audit_events WHERE tenant_id = (SELECT id FROM audit_tenants WHERE name = 'fabrikam')",
      )
      .pluck()
      .get(),
  );
  limited = await localUserToken(hub.hub.store.db, hub.hub.identity.localIssuer, 'carol', [
    'contoso-auditors',
  ]);
});
afterAll(async () => {
  await hub?.stop();
  await idp?.stop();
});

describe('MCP tools for a caller limited to one tenant', () => {
  it('search, summarise and fetch only that tenant’s events', async () => {
    const search = await tool('search_events');
    expect(search.events.map((e: { tenant: string }) => e.tenant)).toEqual(['contoso']);
    expect((await tool('search_events', { tenants: ['fabrikam'] })).events).toEqual([]);
    const summary = await tool('get_summary');
    expect(summary.total).toBe(1);
    expect(JSON.stringify(summary)).not.toContain('fabrikam');
    const event = await tool('get_event', { id: fabrikamId });
    expect(event.error).toMatch(/no event with id/);
  });
});
