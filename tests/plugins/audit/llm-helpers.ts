/** The audit plugin's language-model client as the tests drive it against an address it must refuse. */
import { ChatCompletionsClient } from '../../../plugins/audit/llm/client.js';

/**
 * The error one request fails with, from a client built directly for `baseUrl` (as if the
 * start-up check had passed) that allows no private network and does not retry; the client is
 * closed after.
 */
export async function llmFailureAt(
  baseUrl: string,
  limits: { timeoutMs: number; maxTokens: number },
): Promise<unknown> {
  const client = new ChatCompletionsClient({
    baseUrl: new URL(baseUrl),
    model: 'm',
    ...limits,
    maxRetries: 0,
    allowedHosts: [],
    allowPrivateNetwork: false,
  });
  try {
    return await client.complete([{ role: 'user', content: 'hi' }]).catch((e: unknown) => e);
  } finally {
    await client.close();
  }
}
