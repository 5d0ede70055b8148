/**
 * The LLM settings and client (issue 13 "LLM client"; spec "Authentication" 7): LLM_BASE_URL is
 * https, on the allowlist and public — checked at start-up and again when connecting — unless
 * LLM_ALLOW_PRIVATE_NETWORK opts in to a model on the LAN.
 */
import { describe, expect, it } from 'vitest';
import { checkLlmBaseUrl, checkLlmBaseUrlResolved } from '../../../plugins/audit/llm/base-url.js';
import { LlmError } from '../../../plugins/audit/llm/client.js';
import { loadAuditConfig } from '../../../plugins/audit/settings.js';
import { llmFailureAt } from './llm-helpers.js';

const open = { allowedHosts: [], allowPrivateNetwork: false };

describe('LLM settings', () => {
  it('defaults: no model, 200 events, no MCP roles', () => {
    const c = loadAuditConfig({});
    expect(c.ai).toEqual({ maxEvents: 200, mcpRoles: [] });
  });

  it('parses a cloud model', () => {
    const cloud = {
      LLM_BASE_URL: 'https://api.openai.com/v1/',
      LLM_MODEL: 'gpt-4o-mini',
      LLM_API_KEY: 'sk-abc',
    };
    const c = loadAuditConfig({ ...cloud, LLM_MAX_EVENTS: '120' });
    expect(c.ai.llm).toMatchObject({
      model: 'gpt-4o-mini',
      timeoutMs: 30_000,
      maxTokens: 800,
      maxRetries: 2,
    });
    expect(c.ai.llm!.baseUrl.href).toBe('https://api.openai.com/v1');
    expect(String(c.ai.llm!.apiKey)).toBe('[redacted]');
    expect(JSON.stringify(c)).not.toContain('sk-abc');
  });

  it.each([
    [{ LLM_BASE_URL: 'https://api.openai.com/v1' }, 'LLM_MODEL: required with LLM_BASE_URL'],
    [{ LLM_BASE_URL: 'http://api.example.com/v1', LLM_MODEL: 'm' }, 'LLM_BASE_URL: must use https'],
    [{ LLM_BASE_URL: 'http://127.0.0.1:11434/v1', LLM_MODEL: 'm' }, 'LLM_BASE_URL: must use https'],
    [
      { LLM_BASE_URL: 'https://localhost/v1', LLM_MODEL: 'm' },
      'LLM_BASE_URL: must not point at a loopback host',
    ],
    [{ LLM_BASE_URL: 'https://u:p@api.example.com/v1', LLM_MODEL: 'm' }, 'LLM_BASE_URL: must not carry'],
    [
      { LLM_BASE_URL: 'https://api.example.com/v1', LLM_MODEL: 'm', LLM_ALLOWED_HOSTS: 'api.openai.com' },
      'LLM_BASE_URL: host api.example.com is not in the allowlist',
    ],
    [{ LLM_MAX_EVENTS: '0' }, 'LLM_MAX_EVENTS'],
    [{ LLM_TIMEOUT_MS: 'soon' }, 'LLM_TIMEOUT_MS'],
    [{ LLM_ALLOW_PRIVATE_NETWORK: 'maybe' }, 'LLM_ALLOW_PRIVATE_NETWORK'],
  ])('refuses %j', (env, message) => {
    expect(() => loadAuditConfig(env)).toThrow(message);
  });

  it('allows a model on the LAN or loopback, over http, only with the opt-in', () => {
    for (const url of ['http://192.168.1.20:8080/v1', 'http://127.0.0.1:11434/v1', 'https://gpu.lan/v1']) {
      const c = loadAuditConfig({
        LLM_BASE_URL: url,
        LLM_MODEL: 'llama3',
        LLM_ALLOW_PRIVATE_NETWORK: 'true',
      });
      expect(c.ai.llm?.allowPrivateNetwork).toBe(true);
    }
    expect(() =>
      checkLlmBaseUrl('ftp://192.168.1.20/v1', { allowedHosts: [], allowPrivateNetwork: true }),
    ).toThrow('must use https or http');
  });
});

describe('where LLM_BASE_URL resolves', () => {
  it('refuses a public name that resolves to a private address at start-up', async () => {
    await expect(
      checkLlmBaseUrlResolved('https://llm.example.com/v1', { ...open, resolve: async () => ['10.1.2.3'] }),
    ).rejects.toThrow('resolves to a non-public address');
    await expect(
      checkLlmBaseUrlResolved('https://llm.example.com/v1', {
        ...open,
        resolve: async () => ['203.0.114.7'],
      }),
    ).resolves.toBeInstanceOf(URL);
  });

  it('refuses at connect time a name that now resolves to a private address (DNS rebinding)', async () => {
    // Built directly, as if the start-up check had passed: `localhost` resolves to loopback now.
    const failure = await llmFailureAt('https://localhost:9/v1', { timeoutMs: 2_000, maxTokens: 100 });
    expect(failure).toBeInstanceOf(LlmError);
    expect((failure as LlmError).reason).toBe('refused_address');
  });
});
