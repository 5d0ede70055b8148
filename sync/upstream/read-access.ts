/**
 * Who may read the upstream's data (`/api/v1/nodes`, `/sites`, `/weather/*`, `/live`), and how
 * precisely (README "The upstream's reads"). The upstream is on the internet and node positions
 * are those of people in the field, so:
 * - by default every read needs a bearer token the upstream's verifier accepts (its own users'
 *   tokens, or the identity provider's): any signed-in user, whatever the role, since the web UI
 *   shows every subscriber the map to pick a node from. No token: 401 problem details;
 * - `UPSTREAM_PUBLIC_READ=true` lets anonymous callers read too, with every node position
 *   coarsened (`coarsenNode`). A caller that sends a token is still checked (a bad one is a
 *   401, never a silent downgrade) and gets exact positions.
 *
 * EventSource cannot send an Authorization header, so the live stream also takes `?ticket=`:
 * `POST /api/v1/live/tickets` (with the token) answers a ticket good for 30 s, signed with the
 * upstream's own key (every process behind a load balancer shares it, so any of them accepts
 * it), for this one purpose (its audience is not a token's), and refused a second time by the
 * process that saw it.
 */
import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { HubIdentity } from '../../src/auth/hub-identity.js';
import { AuthError } from '../../src/auth/jwt-verifier.js';
import { authProblem, requireAuth } from '../../src/auth/require-auth.js';
import type { UpstreamNodeJson } from './weather/pg-reads.js';

/** `exact`: a verified caller; `coarse`: an anonymous one (UPSTREAM_PUBLIC_READ=true). */
export type ReadPrecision = 'exact' | 'coarse';
export type ReadEnv = { Variables: { readPrecision: ReadPrecision } };

/** Decimal places anonymous callers get: 0.01° is 1.1 km north–south, at most that east–west. */
export const COARSE_DECIMALS = 2;
const COARSE_FACTOR = 10 ** COARSE_DECIMALS;

/** A live-stream ticket's audience: no other route accepts it. */
const TICKET_AUDIENCE = 'urn:meshhub:upstream-live-ticket';
export const LIVE_TICKET_TTL_S = 30;
const TICKET_PATTERN = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Ticket ids this process has let in, until they expire; bounded like the hub's tickets. */
const MAX_SEEN_TICKETS = 10_000;

const coarse = (degrees: number) => Math.round(degrees * COARSE_FACTOR) / COARSE_FACTOR;

/**
 * A node as an anonymous caller sees it: latitude and longitude rounded to 0.01°, and no
 * altitude (with the rest it narrows a person down to a building's floor or a ridge).
 */
export function coarsenNode(node: UpstreamNodeJson): UpstreamNodeJson {
  const { altitude: _altitude, ...out } = node;
  if (out.latitude !== undefined) out.latitude = coarse(out.latitude);
  if (out.longitude !== undefined) out.longitude = coarse(out.longitude);
  return out;
}

/** The nodes at the precision this request may see. */
export function nodesFor(c: Context<ReadEnv>, nodes: UpstreamNodeJson[]): UpstreamNodeJson[] {
  return c.get('readPrecision') === 'exact' ? nodes : nodes.map(coarsenNode);
}

export interface ReadAccess {
  /** In front of every read route: sets `readPrecision`, or answers 401. */
  readonly middleware: MiddlewareHandler<ReadEnv>;
  /** As `middleware`, and a `?ticket=` from `issueTicket` counts as a token (the live stream). */
  readonly liveMiddleware: MiddlewareHandler<ReadEnv>;
  /** A ticket for the live stream, for a caller `requireAuth` verified. */
  issueTicket(subject: string): Promise<{ ticket: string; expiresIn: number }>;
  readonly publicRead: boolean;
}

export function readAccess(identity: HubIdentity, options: { publicRead: boolean }): ReadAccess {
  const verified = requireAuth(identity.verifier);
  const keys = createLocalJWKSet(identity.localIssuer.jwks());
  const seen = new Map<string, number>();

  const middleware: MiddlewareHandler<ReadEnv> = async (c, next) => {
    if (options.publicRead && c.req.header('authorization') === undefined) {
      c.set('readPrecision', 'coarse');
      return next();
    }
    // requireAuth answers the 401 (no token, or a bad one) with its challenge.
    return verified(c as unknown as Context, async () => {
      c.set('readPrecision', 'exact');
      await next();
    });
  };

  async function redeem(ticket: string): Promise<void> {
    const refused = () =>
      authProblem(new AuthError('malformed', 'the live ticket is unknown, used or expired'));
    if (!TICKET_PATTERN.test(ticket)) throw refused();
    let jti: unknown;
    let exp: unknown;
    try {
      ({
        payload: { jti, exp },
      } = await jwtVerify(ticket, keys, {
        issuer: identity.localIssuer.issuer,
        audience: TICKET_AUDIENCE,
        algorithms: ['EdDSA'],
      }));
    } catch {
      throw refused();
    }
    if (typeof jti !== 'string' || typeof exp !== 'number' || seen.has(jti)) throw refused();
    const now = Date.now() / 1000;
    if (seen.size >= MAX_SEEN_TICKETS) for (const [id, until] of seen) if (until <= now) seen.delete(id);
    // Still full of live tickets: refuse rather than forget one that could then be replayed.
    if (seen.size >= MAX_SEEN_TICKETS) throw refused();
    seen.set(jti, exp);
  }

  const liveMiddleware: MiddlewareHandler<ReadEnv> = async (c, next) => {
    const ticket = c.req.query('ticket');
    if (ticket === undefined) return middleware(c, next);
    await redeem(ticket);
    c.set('readPrecision', 'exact');
    await next();
  };

  return {
    middleware,
    liveMiddleware,
    publicRead: options.publicRead,
    async issueTicket(subject) {
      const now = Math.floor(Date.now() / 1000);
      const ticket = await identity.localIssuer.signClaims({
        iss: identity.localIssuer.issuer,
        sub: subject,
        aud: TICKET_AUDIENCE,
        iat: now,
        exp: now + LIVE_TICKET_TTL_S,
        jti: randomUUID(),
      });
      return { ticket, expiresIn: LIVE_TICKET_TTL_S };
    },
  };
}
