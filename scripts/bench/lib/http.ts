/** Serving a Hono app on a loopback port for the benchmarks. */
import { type Agent, get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';

export interface Served {
  url: string;
  close(): Promise<void>;
}

export function serveOnLoopback(app: Hono): Promise<Served> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info: AddressInfo) => {
      resolve({
        url: `http://127.0.0.1:${info.port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            if ('closeAllConnections' in server)
              (server as { closeAllConnections(): void }).closeAllConnections();
          }),
      });
    });
    server.once('error', reject);
  });
}

/** GET over a keep-alive connection; resolves with the status and the body's bytes. */
export function get(agent: Agent, url: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    httpGet(url, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** The query of `GET /api/v1/weather/history` for one node from `startMs` to `endMs` (up to 10 000 buckets). */
export function historyQuery(
  nodeId: string,
  startMs: number,
  endMs: number,
  interval: string,
): URLSearchParams {
  return new URLSearchParams({
    node_id: nodeId,
    start: new Date(startMs).toISOString(),
    end: new Date(endMs).toISOString(),
    interval,
    limit: '10000',
  });
}
