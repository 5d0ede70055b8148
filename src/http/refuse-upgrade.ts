import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { misdirected } from './host-check.js';

/**
 * Upgrades nobody takes. Once a server listens for 'upgrade', Node hands it every request that
 * carries `Connection: upgrade` — `curl --http2` (`Upgrade: h2c`) on any route, a WebSocket
 * request to a path that serves none — and that request has left the HTTP parser. Used by the
 * hub's HTTP server and the upstream's.
 */

/** Connection options that belong to the upgrade being ignored (RFC 9113 §3.2: h2c). */
const UPGRADE_ONLY = new Set(['upgrade', 'http2-settings']);

/**
 * Serves the request as the plain HTTP/1.1 request it also is (RFC 9110 §7.8: a server MAY ignore
 * Upgrade): its head is written back without the upgrade headers, ahead of any body bytes already
 * read (`head`), and the socket goes back to the server as a fresh connection, which parses it
 * and answers through the app like any other request (keep-alive included).
 */
export function serveWithoutUpgrade(
  server: Server,
  request: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  const lines = [`${request.method} ${request.url} HTTP/${request.httpVersion}`];
  const raw = request.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (lower === 'upgrade' || lower === 'http2-settings') continue;
    if (lower === 'connection') {
      const rest = value
        .split(',')
        .map((option) => option.trim())
        .filter((option) => option && !UPGRADE_ONLY.has(option.toLowerCase()));
      if (rest.length > 0) lines.push(`${name}: ${rest.join(', ')}`);
      continue;
    }
    lines.push(`${name}: ${value}`);
  }
  // latin1: Node decoded the header bytes as latin1, so this writes back the same bytes.
  socket.unshift(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head]));
  server.emit('connection', socket);
}

/**
 * An upgrade that is ours but cannot be served now gets an answer, not a reset: a problem body
 * with `status` (503 while the service behind the path is down), and the connection closed.
 */
export function refuseUpgrade(socket: Duplex, pathname: string, status: 404 | 503 = 404): void {
  writeProblem(
    socket,
    status,
    status === 404
      ? `nothing here upgrades a connection at ${pathname}`
      : `${pathname} cannot take a connection right now; try again shortly`,
  );
}

/** An upgrade sent to a name the hub does not answer to (host-check.ts): 421, and closed. */
export function refuseMisdirectedUpgrade(socket: Duplex, host: string): void {
  writeProblem(socket, 421, misdirected(host).detail);
}

const TITLES = { 404: 'Not Found', 421: 'Misdirected Request', 503: 'Service Unavailable' } as const;

function writeProblem(socket: Duplex, status: keyof typeof TITLES, detail: string): void {
  const title = TITLES[status];
  const body = JSON.stringify({ type: 'about:blank', title, status, detail });
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
