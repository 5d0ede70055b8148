/**
 * A loopback fake of an OpenAI-compatible chat completions server (`POST /v1/chat/completions`),
 * as OpenAI documents it and llama.cpp's server, Ollama and vLLM speak it: the request
 * `{ model, messages, max_tokens, ... }`, the answer `{ id, object: "chat.completion", created,
 * model, choices: [{ index, message: { role: "assistant", content }, finish_reason }], usage }`,
 * errors as `{ "error": { "message", "type", "param", "code" } }` and 429 with `Retry-After`.
 *
 * It records every request (headers and body) and answers from a script: each call takes the
 * next scripted behaviour, then the default (an answer built by `answer`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  // biome-ignore lint/suspicious/noExplicitAny: the request body as the client sent it
  body: any;
}

export type Behaviour =
  | { kind: 'answer'; content: string }
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'garbage'; text: string }
  | { kind: 'no_choices' }
  | { kind: 'hang' }
  | { kind: 'huge'; bytes: number }
  | { kind: 'drop' };

export interface FakeChatCompletions {
  baseUrl: string;
  requests: RecordedRequest[];
  /** Queues behaviours for the next calls, in order. */
  script(...behaviours: Behaviour[]): void;
  /** The default answer's content, from the request (default: a fixed sentence citing no event). */
  answer: (request: RecordedRequest) => string;
  reset(): void;
  stop(): Promise<void>;
}

const openAiError = (message: string, type: string, code: string | null = null) => ({
  error: { message, type, param: null, code },
});

export async function startFakeChatCompletions(): Promise<FakeChatCompletions> {
  const queue: Behaviour[] = [];
  const requests: RecordedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const fake: FakeChatCompletions = {
    baseUrl: '',
    requests,
    script: (...b) => queue.push(...b),
    answer: () => 'Nothing unusual stands out in these events.',
    reset() {
      queue.length = 0;
      requests.length = 0;
      fake.answer = () => 'Nothing unusual stands out in these events.';
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
      };
      requests.push(recorded);
      const json = (status: number, value: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(value));
      };
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        return json(
          404,
          openAiError(
            `Unknown request URL: ${req.method} ${req.url}`,
            'invalid_request_error',
            'unknown_url',
          ),
        );
      }
      if (!body || typeof body !== 'object' || !('model' in body) || !('messages' in body)) {
        return json(400, openAiError("'messages' is a required property", 'invalid_request_error'));
      }
      const behaviour: Behaviour = queue.shift() ?? { kind: 'answer', content: fake.answer(recorded) };
      switch (behaviour.kind) {
        case 'answer':
          return json(200, {
            id: `chatcmpl-${requests.length}`,
            object: 'chat.completion',
            created: Math.floor(Date.now() / 1000),
            model: (body as { model: string }).model,
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: behaviour.content },
                logprobs: null,
                finish_reason: 'stop',
              },
            ],
            usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
          });
        case 'status':
          return json(
            behaviour.status,
            behaviour.body ??
              openAiError('Rate limit reached for requests', 'requests', 'rate_limit_exceeded'),
            behaviour.headers,
          );
        case 'garbage':
          res.writeHead(200, { 'content-type': 'text/html' });
          return res.end(behaviour.text);
        case 'no_choices':
          return json(200, { id: 'x', object: 'chat.completion', choices: [] });
        case 'hang':
          hanging.add(res);
          return;
        case 'huge': {
          res.writeHead(200, { 'content-type': 'application/json' });
          const piece = Buffer.alloc(64 * 1024, 'a');
          let sent = 0;
          const write = () => {
            while (sent < behaviour.bytes) {
              sent += piece.length;
              if (!res.write(piece)) return res.once('drain', write);
            }
            res.end();
          };
          write();
          return;
        }
        case 'drop':
          req.socket.destroy();
          return;
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  fake.baseUrl = `http://127.0.0.1:${port}/v1`;
  return fake;
}
