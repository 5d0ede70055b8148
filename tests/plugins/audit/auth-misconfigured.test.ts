/**
 * Issue 14, defect 4, through the hub's real start-up (loadConfig → createHub → start): with
 * AUTH_ENABLED=true and a half-configured identity provider, the hub runs, the audit routes
 * answer 503, `/api/config/auth` says `misconfigured` and names what is missing, and the mesh
 * side (weather, health) keeps serving.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHub, type Hub } from '../../../hub/main.js';
import { loadConfig } from '../../../hub/settings.js';
import { loopbackListeners } from '../../../scripts/bench/lib/hub-env.js';
import { capturingLogger, hubStartRefusal, QUIET_ENV } from './helpers.js';

const running: Array<{ hub: Hub; dir: string }> = [];
afterEach(async () => {
  for (const { hub, dir } of running.splice(0)) {
    await hub.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

async function startHub(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'meshhub-audit-auth-'));
  const all = { ...loopbackListeners(dir), RADIO: 'none', ...env };
  const { log, lines } = capturingLogger();
  const hub = await createHub(loadConfig(all), { log, defaultMetrics: false, env: all });
  running.push({ hub, dir });
  await hub.start();
  return { base: `http://127.0.0.1:${hub.http.port}`, lines };
}

describe('AUTH_ENABLED with a half-configured identity provider', () => {
  it('keeps the hub running: audit routes 503, /api/config/auth misconfigured, the rest serves', async () => {
    const { base, lines } = await startHub({
      PLUGINS: 'audit',
      ...QUIET_ENV,
      AUTH_ENABLED: 'true',
      AUTH_ISSUER: 'https://login.microsoftonline.com/contoso/v2.0',
    });
    const events = await fetch(`${base}/api/events`);
    expect(events.status).toBe(503);
    expect(events.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect((await fetch(`${base}/api/filter-options`)).status).toBe(503);

    const auth = await (await fetch(`${base}/api/config/auth`)).json();
    expect(auth).toMatchObject({
      enabled: true,
      status: 'misconfigured',
      missing: ['AUTH_JWKS_URL', 'AUTH_AUDIENCE'],
    });
    const features = (await (await fetch(`${base}/api/config/features`)).json()) as { auth: string };
    expect(features.auth).toBe('misconfigured');

    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect((await fetch(`${base}/api/v1/weather/latest`)).status).toBe(200);
    expect(lines.some((l) => l.includes('only partly configured') && l.includes('AUTH_AUDIENCE'))).toBe(true);
    expect(lines.some((l) => l.includes('authentication is misconfigured'))).toBe(true);
  });

  it('keeps a hub without the plugin running too', async () => {
    const { base } = await startHub({ AUTH_JWKS_URL: 'https://idp.example/keys' });
    expect((await fetch(`${base}/health`)).status).toBe(200);
    expect((await fetch(`${base}/api/v1/weather/latest`)).status).toBe(200);
  });

  it('still refuses to start on a provider setting that is wrong rather than missing', async () => {
    const provider = {
      AUTH_JWKS_URL: 'http://idp.example/keys',
      AUTH_ISSUER: 'https://idp.example',
      AUTH_AUDIENCE: 'meshhub',
    };
    const refusal = await hubStartRefusal(provider, capturingLogger().log);
    expect(refusal.message).toMatch(/AUTH_JWKS_URL: must be https/);
  });
});
