/**
 * Settings of the AI features (issue 13; spec "Configuration settings": AI_FEATURES_ENABLED,
 * LLM_BASE_URL, LLM_MAX_EVENTS, CACHE_URL): a slice spread into the audit plugin's one settings
 * schema, so every problem is reported at start-up with the plugin's others.
 *
 * LLM_BASE_URL (spec "Authentication" 7): https, on the outbound allowlist (LLM_ALLOWED_HOSTS
 * when set), no credentials in the URL, and not resolving to a private address — unless the
 * operator opts in with LLM_ALLOW_PRIVATE_NETWORK=true, which allows a model on the LAN or on
 * loopback (llama.cpp's server, Ollama, vLLM), over plain http too.
 */
import { z } from 'zod';
import { flag, int, list, text } from '../../../src/config/fields.js';
import { Secret } from '../../../src/config/secret.js';
import { OutboundUrlError } from '../../../src/http/outbound-url.js';
import { checkLlmBaseUrl } from '../llm/base-url.js';

export const DEFAULT_LLM_MAX_EVENTS = 200;

export const aiSettingsShape = {
  LLM_BASE_URL: text.min(1).optional(),
  LLM_API_KEY: z.string().min(1).optional(),
  LLM_MODEL: text.min(1).max(200).optional(),
  LLM_TIMEOUT_MS: int(100, 600_000).default(30_000),
  LLM_MAX_TOKENS: int(16, 8_192).default(800),
  LLM_MAX_RETRIES: int(0, 5).default(2),
  LLM_MAX_EVENTS: int(1, 1_000).default(DEFAULT_LLM_MAX_EVENTS),
  LLM_ALLOWED_HOSTS: list.default([]),
  LLM_ALLOW_PRIVATE_NETWORK: flag.default(false),
  MCP_ROLES: list.default([]),
};

/** Checks spanning AI settings; `c` may hold anything (other settings may be invalid). */
export function refineAiSettings(c: Partial<Record<string, unknown>>, ctx: z.RefinementCtx): void {
  const base = c.LLM_BASE_URL;
  if (typeof base === 'string') {
    try {
      checkLlmBaseUrl(base, {
        allowedHosts: Array.isArray(c.LLM_ALLOWED_HOSTS) ? (c.LLM_ALLOWED_HOSTS as string[]) : [],
        allowPrivateNetwork: c.LLM_ALLOW_PRIVATE_NETWORK === true,
      });
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        path: ['LLM_BASE_URL'],
        message: error instanceof OutboundUrlError ? error.message : 'invalid URL',
      });
    }
    if (c.LLM_MODEL === undefined) {
      ctx.addIssue({ code: 'custom', path: ['LLM_MODEL'], message: 'required with LLM_BASE_URL' });
    }
  }
}

export interface LlmSettings {
  baseUrl: URL;
  apiKey?: Secret;
  model: string;
  timeoutMs: number;
  maxTokens: number;
  maxRetries: number;
  allowedHosts: string[];
  allowPrivateNetwork: boolean;
}

export interface AiConfig {
  /** Undefined: no model configured; asks and explanations answer without one. */
  llm?: LlmSettings;
  maxEvents: number;
  mcpRoles: string[];
}

const aiSettings = z.object(aiSettingsShape);
type AiSettings = z.output<typeof aiSettings>;

export function aiConfigFrom(c: AiSettings): AiConfig {
  let llm: LlmSettings | undefined;
  if (c.LLM_BASE_URL && c.LLM_MODEL) {
    const baseUrl = new URL(c.LLM_BASE_URL);
    baseUrl.pathname = baseUrl.pathname.replace(/\/+$/, '');
    llm = {
      baseUrl,
      ...(c.LLM_API_KEY ? { apiKey: new Secret(c.LLM_API_KEY) } : {}),
      model: c.LLM_MODEL,
      timeoutMs: c.LLM_TIMEOUT_MS,
      maxTokens: c.LLM_MAX_TOKENS,
      maxRetries: c.LLM_MAX_RETRIES,
      allowedHosts: c.LLM_ALLOWED_HOSTS,
      allowPrivateNetwork: c.LLM_ALLOW_PRIVATE_NETWORK,
    };
  }
  return { ...(llm ? { llm } : {}), maxEvents: c.LLM_MAX_EVENTS, mcpRoles: c.MCP_ROLES };
}
