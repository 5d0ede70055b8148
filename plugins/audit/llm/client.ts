/**
 * The LLM client: OpenAI-compatible chat completions (issue 13; docs/architecture.md
 * "Decisions"), `POST {LLM_BASE_URL}/chat/completions` with undici. The same wire format is spoken by
 * OpenAI and most cloud gateways, and on the LAN by llama.cpp's `llama-server`, Ollama
 * (`http://host:11434/v1`) and vLLM — so LLM_BASE_URL ends with the API's version path (`/v1`).
 *
 * Request: `{ model, messages: [{role:"system"},{role:"user"}], max_tokens, temperature, stream:false }`
 * with `Authorization: Bearer LLM_API_KEY` when a key is set. Answer: `choices[0].message.content`.
 * Errors: `{ "error": { "message", "type", "code" } }` with a 4xx/5xx status.
 *
 * Retries: 429 (honouring `Retry-After` when it fits in the timeout), 500/502/503/504, network
 * errors and timeouts, up to LLM_MAX_RETRIES, with jittered backoff; other 4xx fail at once.
 * Each attempt has LLM_TIMEOUT_MS; bodies over 1 MiB are refused. The key never reaches a log
 * (it is a Secret, and errors carry only the status and the provider's error type).
 *
 * Connections go through the hub's guarded agent (src/http/guarded-fetch.ts): without
 * LLM_ALLOW_PRIVATE_NETWORK every connection re-checks where the name resolves (DNS rebinding),
 * loopback included.
 */
import { type Agent, request } from 'undici';
import { z } from 'zod';
import { guardedAgent, refusedAddressOf } from '../../../src/http/guarded-fetch.js';
import { equalJitter, exponentialDelay } from '../../../src/kernel/backoff.js';
import type { LlmSettings } from '../ask/settings.js';
import { parseRetryAfter } from '../microsoft/upstream.js';

export type LlmFailure =
  | 'not_configured'
  | 'timeout'
  | 'unreachable'
  | 'refused_address'
  | 'rate_limited'
  | 'http_error'
  | 'malformed_response'
  | 'response_too_large'
  | 'empty_answer';

export class LlmError extends Error {
  override readonly name = 'LlmError';
  constructor(
    readonly reason: LlmFailure,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface ChatMessage {
  role: 'system' | 'user';
  content: string;
}

export interface Completion {
  text: string;
  model: string;
}

export interface LanguageModel {
  readonly configured: boolean;
  /** Model name, for cache keys and query_info. */
  readonly model: string | undefined;
  complete(messages: ChatMessage[]): Promise<Completion>;
  close(): Promise<void>;
}

export const MAX_RESPONSE_BYTES = 1024 * 1024;

const responseSchema = z.object({
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullable().optional() }).passthrough(),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
});

const errorSchema = z.object({
  error: z.object({ type: z.string().optional(), code: z.unknown() }).passthrough(),
});

/** The model that is not there: every call fails with `not_configured`. */
export const NO_MODEL: LanguageModel = {
  configured: false,
  model: undefined,
  complete: () =>
    Promise.reject(new LlmError('not_configured', 'no language model is configured (LLM_BASE_URL)')),
  close: async () => {},
};

export class ChatCompletionsClient implements LanguageModel {
  readonly configured = true;
  private agent: Promise<Agent> | undefined;
  private readonly endpoint: URL;

  constructor(
    private readonly settings: LlmSettings,
    private readonly options: { random?: () => number; backoffBaseMs?: number } = {},
  ) {
    this.endpoint = new URL(`${settings.baseUrl.href.replace(/\/+$/, '')}/chat/completions`);
  }

  private dispatcher(): Promise<Agent> {
    // Without the opt-in, every connection re-checks where the name resolves (DNS rebinding).
    this.agent ??= guardedAgent(
      { allowPrivateNetwork: this.settings.allowPrivateNetwork, setting: 'LLM_ALLOW_PRIVATE_NETWORK' },
      { headersTimeout: this.settings.timeoutMs, bodyTimeout: this.settings.timeoutMs },
    );
    return this.agent;
  }

  get model(): string {
    return this.settings.model;
  }

  async complete(messages: ChatMessage[]): Promise<Completion> {
    let attempt = 0;
    for (;;) {
      try {
        return await this.once(messages);
      } catch (error) {
        const e = error as LlmError & { retryAfterMs?: number };
        const retryable =
          e.reason === 'timeout' ||
          e.reason === 'unreachable' ||
          e.reason === 'rate_limited' ||
          (e.reason === 'http_error' && [500, 502, 503, 504].includes(e.status ?? 0));
        if (!retryable || attempt >= this.settings.maxRetries) throw e;
        const wait =
          e.retryAfterMs ??
          equalJitter(
            exponentialDelay(attempt, this.options.backoffBaseMs ?? 500, 8_000),
            this.options.random,
          );
        // A wait longer than an attempt may take is not worth holding the question for.
        if (wait > this.settings.timeoutMs) throw e;
        attempt++;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  private async once(messages: ChatMessage[]): Promise<Completion> {
    const body = JSON.stringify({
      model: this.settings.model,
      messages,
      max_tokens: this.settings.maxTokens,
      temperature: 0.2,
      stream: false,
    });
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
    };
    if (this.settings.apiKey) headers.authorization = `Bearer ${this.settings.apiKey.reveal()}`;
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(this.endpoint, {
        method: 'POST',
        headers,
        body,
        dispatcher: await this.dispatcher(),
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
    } catch (error) {
      throw classifyNetworkError(error);
    }
    let text: string;
    try {
      text = await readCapped(res.body, MAX_RESPONSE_BYTES);
    } catch (error) {
      if (error instanceof LlmError) throw error;
      throw classifyNetworkError(error);
    }
    if (res.statusCode === 429) {
      const retryAfter = parseRetryAfter(headerOf(res.headers['retry-after']));
      throw Object.assign(new LlmError('rate_limited', 'the language model is rate limiting us', 429), {
        ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
      });
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const type = errorTypeOf(text);
      throw new LlmError(
        'http_error',
        `the language model answered ${res.statusCode}${type ? ` (${type})` : ''}`,
        res.statusCode,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new LlmError('malformed_response', 'the language model answered something that is not JSON');
    }
    const parsed = responseSchema.safeParse(json);
    if (!parsed.success) {
      throw new LlmError('malformed_response', 'the language model answered without choices[0].message');
    }
    const content = parsed.data.choices[0]!.message.content?.trim();
    if (!content) throw new LlmError('empty_answer', 'the language model answered with no text');
    return { text: content, model: parsed.data.model ?? this.settings.model };
  }

  async close(): Promise<void> {
    const agent = this.agent;
    this.agent = undefined;
    await (await agent)?.close();
  }
}

function headerOf(value: string | string[] | undefined): string | null {
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

function errorTypeOf(text: string): string | undefined {
  try {
    const e = errorSchema.safeParse(JSON.parse(text));
    if (!e.success) return undefined;
    const code = e.data.error.code;
    return (
      [e.data.error.type, typeof code === 'string' ? code : undefined].filter(Boolean).join('/') || undefined
    );
  } catch {
    return undefined;
  }
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) {
      body.destroy();
      throw new LlmError('response_too_large', `the language model's answer is over ${max} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function classifyNetworkError(error: unknown): LlmError {
  const e = error as { name?: string; code?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (refusedAddressOf(error)) {
    return new LlmError('refused_address', 'LLM_BASE_URL now resolves to a non-public address; refused');
  }
  if (
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_ABORTED'
  ) {
    return new LlmError('timeout', 'the language model did not answer in time');
  }
  return new LlmError('unreachable', 'the language model could not be reached');
}
