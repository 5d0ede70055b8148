/**
 * A push service on loopback, for Web Push tests without web-push on the receiving side: it checks
 * each request's VAPID authorization (RFC 8292: `Authorization: vapid t=<ES256 JWT>, k=<public
 * key>`, the JWT's signature, `aud` = the endpoint's origin, `exp` ahead, a `sub`) and decrypts the
 * aes128gcm body (RFC 8188) with the subscription's own keys (RFC 8291), using node:crypto alone.
 */
import { createDecipheriv, createECDH, createPublicKey, hkdfSync, randomBytes, verify } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A browser's side of one subscription: its P-256 key pair and auth secret. */
export interface TestSubscription {
  endpoint: string;
  /** PushSubscription.toJSON(), as a browser posts it. */
  json: { endpoint: string; expirationTime: null; keys: { p256dh: string; auth: string } };
  decrypt(body: Buffer): Buffer;
}

export interface ReceivedPush {
  path: string;
  /** The VAPID public key the JWT was checked with (base64url). */
  vapidKey: string;
  claims: { aud: string; exp: number; sub: string };
  ttl: string | undefined;
  payload: unknown;
}

export interface PushReceiver {
  origin: string;
  received: ReceivedPush[];
  /** Requests refused, with why (a bad signature, a payload that does not decrypt). */
  refused: string[];
  /** A new subscription at `/push/<name>`. */
  subscribe(name: string): TestSubscription;
  /** Answers `status` to pushes on this subscription from now on (410: gone). */
  answer(name: string, status: number): void;
  close(): Promise<void>;
}

const b64url = (b: Buffer) => b.toString('base64url');

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Checks `vapid t=…, k=…` and answers the JWT's claims, or throws why not. */
export function checkVapid(
  header: string | undefined,
  origin: string,
): { key: string; claims: ReceivedPush['claims'] } {
  const m = /^vapid t=([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+),\s*k=([A-Za-z0-9_-]+)$/.exec(
    header ?? '',
  );
  if (!m) throw new Error(`no vapid authorization: ${header}`);
  const [jwt, key] = [m[1]!, m[2]!];
  const [h, p, s] = jwt.split('.') as [string, string, string];
  const raw = Buffer.from(key, 'base64url');
  if (raw.length !== 65 || raw[0] !== 4) throw new Error('k is not an uncompressed P-256 point');
  const publicKey = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: b64url(raw.subarray(1, 33)), y: b64url(raw.subarray(33)) },
    format: 'jwk',
  });
  const header_ = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: string };
  if (header_.alg !== 'ES256') throw new Error(`alg ${header_.alg}`);
  const ok = verify(
    'sha256',
    Buffer.from(`${h}.${p}`),
    { key: publicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(s, 'base64url'),
  );
  if (!ok) throw new Error('bad VAPID signature');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as ReceivedPush['claims'];
  if (claims.aud !== origin) throw new Error(`aud ${claims.aud} is not ${origin}`);
  if (!(claims.exp * 1000 > Date.now())) throw new Error('expired');
  if (!claims.sub) throw new Error('no sub');
  return { key, claims };
}

/** RFC 8291 §3.4 and RFC 8188: one aes128gcm record with the user agent's keys. */
export function decryptAes128gcm(
  body: Buffer,
  uaPrivate: ReturnType<typeof createECDH>,
  authSecret: Buffer,
): Buffer {
  const salt = body.subarray(0, 16);
  const idlen = body[20]!;
  const asPublic = body.subarray(21, 21 + idlen);
  const ciphertext = body.subarray(21 + idlen);
  const uaPublic = uaPrivate.getPublicKey();
  const ecdhSecret = uaPrivate.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', ecdhSecret, authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const padded = Buffer.concat([
    decipher.update(ciphertext.subarray(0, ciphertext.length - 16)),
    decipher.final(),
  ]);
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error('no last-record delimiter');
  return padded.subarray(0, end);
}

export async function startPushReceiver(): Promise<PushReceiver> {
  const subscriptions = new Map<string, TestSubscription>();
  const answers = new Map<string, number>();
  const received: ReceivedPush[] = [];
  const refused: string[] = [];
  let origin = '';
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    const name = /^\/push\/([^/]+)$/.exec(req.url ?? '')?.[1];
    const sub = name ? subscriptions.get(name) : undefined;
    if (!name || !sub || req.method !== 'POST') {
      res.writeHead(404).end();
      return;
    }
    const status = answers.get(name);
    if (status) {
      res.writeHead(status).end();
      return;
    }
    try {
      if (req.headers['content-encoding'] !== 'aes128gcm')
        throw new Error(`content-encoding ${req.headers['content-encoding']}`);
      const { key, claims } = checkVapid(req.headers.authorization, origin);
      const payload = JSON.parse(sub.decrypt(body).toString('utf8')) as unknown;
      received.push({
        path: req.url!,
        vapidKey: key,
        claims,
        ttl: req.headers.ttl as string | undefined,
        payload,
      });
      res.writeHead(201).end();
    } catch (error) {
      refused.push((error as Error).message);
      res.writeHead(400).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    received,
    refused,
    subscribe(name) {
      const ecdh = createECDH('prime256v1');
      ecdh.generateKeys();
      const auth = randomBytes(16);
      const endpoint = `${origin}/push/${name}`;
      const sub: TestSubscription = {
        endpoint,
        json: {
          endpoint,
          expirationTime: null,
          keys: { p256dh: b64url(ecdh.getPublicKey()), auth: b64url(auth) },
        },
        decrypt: (b) => decryptAes128gcm(b, ecdh, auth),
      };
      subscriptions.set(name, sub);
      return sub;
    },
    answer(name, status) {
      answers.set(name, status);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A loopback webhook receiver: every request's headers and raw body, answered `status`. */
export interface WebhookReceiver {
  url: string;
  requests: Array<{ path: string; headers: IncomingMessage['headers']; body: Buffer }>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const requests: WebhookReceiver['requests'] = [];
  const server = createServer(async (req, res) => {
    requests.push({ path: req.url ?? '', headers: req.headers, body: await readBody(req) });
    res.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
