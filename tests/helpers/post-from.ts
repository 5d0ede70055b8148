/**
 * A JSON POST over real HTTP from a loopback address of the test's choosing: on Linux every
 * 127.x.y.z is this machine, so 127.0.0.2 and 127.0.0.3 are two clients to a server on
 * 127.0.0.1 (login throttling per client address).
 */
import { request } from 'node:http';

// biome-ignore lint/suspicious/noExplicitAny: tests read bodies of many shapes and assert on them
type Json = any;

export function postFrom(
  url: string,
  address: string,
  body: unknown,
): Promise<{ status: number; headers: Headers; body: Json }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        localAddress: address,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
          let parsed: Json = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON: the text itself
          }
          resolve({ status: res.statusCode ?? 0, headers, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
