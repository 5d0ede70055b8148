import type { Duplex } from 'node:stream';

/**
 * An upgrade to a path nothing serves gets an answer, not a reset: 404 with a problem body, and
 * the connection closed. (With no upgrade handler at all, Node serves such a request as any
 * other.) Used by the hub's HTTP server and the upstream's.
 */
export function refuseUpgrade(socket: Duplex, pathname: string): void {
  const body = JSON.stringify({
    type: 'about:blank',
    title: 'Not Found',
    status: 404,
    detail: `nothing here upgrades a connection at ${pathname}`,
  });
  socket.end(
    `HTTP/1.1 404 Not Found\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
