/**
 * Helpers of the auth tests: an identity provider's published keys, an ES256 key pair whose
 * public half a loopback HTTP server serves as a JWKS.
 */
import { createServer } from 'node:http';
import { exportJWK, generateKeyPair, type JWK } from 'jose';

export type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

export interface JwksServer {
  privateKey: PrivateKey;
  /** The public key as published: key id `kid`, ES256, for signatures. */
  publicJwk: JWK;
  /** Where the JWKS is served. */
  url: string;
  close(): Promise<void>;
}

/** A fresh ES256 key pair and a loopback server answering every request with its JWKS. */
export async function startJwksServer(kid: string, path: string): Promise<JwksServer> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const publicJwk: JWK = { ...(await exportJWK(pair.publicKey)), kid, alg: 'ES256', use: 'sig' };
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [publicJwk] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    privateKey: pair.privateKey,
    publicJwk,
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}${path}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
