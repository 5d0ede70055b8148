/** Serving a Hono app on a loopback port for the benchmarks. */
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
