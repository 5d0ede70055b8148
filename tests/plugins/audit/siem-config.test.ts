/**
 * SIEM settings as an administrator gets them wrong, and the outbound checks at send time: a host
 * resolving into the LAN is refused (held, nothing sent) unless SIEM_ALLOW_PRIVATE_NETWORK=true.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadAuditConfig } from '../../../plugins/audit/settings.js';
import { SiemSender } from '../../../plugins/audit/siem/sender.js';
import { auditConfigProblems } from './helpers.js';

const problems = auditConfigProblems;
/** Forwarding to Splunk's HTTP Event Collector. */
const HEC = {
  SIEM_ENABLED: 'true',
  SIEM_WEBHOOK_URL: 'https://splunk.example.com:8088/services/collector/event',
  SIEM_FORMAT: 'splunk-hec',
};

describe('SIEM settings', () => {
  it('are off by default and need a URL, a secret (or a HEC token) when on', () => {
    expect(loadAuditConfig({}).siem).toBeUndefined();
    expect(loadAuditConfig({ SIEM_WEBHOOK_URL: 'https://siem.example.com/in' }).siem).toBeUndefined();
    const missing = problems({ SIEM_ENABLED: 'true' }).join('\n');
    expect(missing).toMatch(/SIEM_WEBHOOK_URL.*required with SIEM_ENABLED=true/);
    expect(missing).toMatch(/SIEM_WEBHOOK_SECRET.*required/);
    const hec = problems(HEC);
    expect(hec.join('\n')).toMatch(/SIEM_HEC_TOKEN.*required with SIEM_FORMAT=splunk-hec/);
  });

  it('refuses plain http, credentials in the URL, hosts off the allowlist and unknown formats, all at once', () => {
    const all = problems({
      SIEM_ENABLED: 'true',
      SIEM_WEBHOOK_SECRET: 'x'.repeat(20),
      SIEM_WEBHOOK_URL: 'http://siem.example.com/in',
      SIEM_FORMAT: 'syslog',
      SIEM_BATCH_MAX_EVENTS: '0',
    }).join('\n');
    expect(all).toMatch(/SIEM_WEBHOOK_URL.*https/);
    expect(all).toMatch(/SIEM_FORMAT.*meshhub-json, splunk-hec/);
    expect(all).toMatch(/SIEM_BATCH_MAX_EVENTS/);
    expect(problems({ SIEM_WEBHOOK_URL: 'https://u:p@siem.example.com/' }).join()).toMatch(
      /user name or password/,
    );
    expect(
      problems({
        SIEM_WEBHOOK_URL: 'https://siem.evil.example/',
        SIEM_ALLOWED_HOSTS: '*.contoso.com',
      }).join(),
    ).toMatch(/not in the allowlist/);
  });

  it('keeps the token and the secret out of logs and JSON', () => {
    const c = loadAuditConfig({
      ...HEC,
      SIEM_HEC_TOKEN: 'hec-token-value-123',
      SIEM_WEBHOOK_SECRET: 'secret-value-0123456789',
    });
    const shown = `${inspect(c, { depth: 10 })}${JSON.stringify(c)}`;
    expect(shown).not.toContain('hec-token-value-123');
    expect(shown).not.toContain('secret-value-0123456789');
  });
});

describe('SIEM sender outbound checks', () => {
  const config = (allowPrivateNetwork: boolean) =>
    loadAuditConfig({
      SIEM_ENABLED: 'true',
      SIEM_WEBHOOK_URL: 'https://siem.contoso.example/in',
      SIEM_WEBHOOK_SECRET: 's'.repeat(20),
      SIEM_ALLOW_PRIVATE_NETWORK: String(allowPrivateNetwork),
    }).siem!;

  it('holds (sends nothing) when the host resolves to a private address at connect time, unless opted in', async () => {
    // The hub's guarded client, its lookup answering a private address: refused before connecting.
    const resolve = async () => ['10.1.2.3'];
    const refused = await new SiemSender({ config: config(false), userAgent: 't', resolve }).send(
      Buffer.from('{}'),
      new AbortController().signal,
    );
    expect(refused).toMatchObject({ ok: false, kind: 'hold' });
    expect((refused as { message: string }).message).toMatch(
      /non-public address.*SIEM_ALLOW_PRIVATE_NETWORK=true/,
    );
    // Opted in, the request goes out (to a fake: no traffic to the private address).
    const sent: string[] = [];
    const fetchImpl = (async (url: string | URL) => {
      sent.push(String(url));
      return new Response('{}', { status: 200 });
    }) as typeof fetch;
    const allowed = await new SiemSender({ config: config(true), userAgent: 't', fetchImpl, resolve }).send(
      Buffer.from('{}'),
      new AbortController().signal,
    );
    expect(allowed).toEqual({ ok: true, status: 200 });
    expect(sent).toEqual(['https://siem.contoso.example/in']);
  });
});
