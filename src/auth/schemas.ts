/**
 * The hub issuer's HTTP API in zod: `POST /api/v1/auth/token` (a password grant, as JSON or as
 * an OAuth form), `POST /api/v1/auth/refresh` (a refresh grant) and the public keys at
 * `/.well-known/jwks.json`. Plain zod: the web UI takes its types from here.
 */
import { z } from 'zod';

const requiredString = () =>
  z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') });

export const tokenRequestSchema = z
  .object({
    username: requiredString().min(1, 'must not be empty').max(64, 'must be at most 64 characters'),
    password: requiredString().min(1, 'must not be empty').max(1024, 'must be at most 1024 characters'),
    grant_type: z.literal('password', { error: 'must be "password"' }).optional(),
  })
  .strict();

export const refreshRequestSchema = z
  .object({
    refresh_token: requiredString()
      .min(1, 'must not be empty')
      .max(256, 'must be at most 256 characters')
      .meta({ description: 'The refresh token of the last token or refresh answer; each works once.' }),
    grant_type: z.literal('refresh_token', { error: 'must be "refresh_token"' }).optional(),
  })
  .strict();

export const tokenResponseSchema = z.object({
  access_token: z.string().meta({ description: 'A JWT; send it as `Authorization: Bearer <token>`.' }),
  token_type: z.literal('Bearer'),
  expires_in: z.int().meta({ description: 'Seconds.' }),
  refresh_token: z.string().optional().meta({
    description:
      'Opaque; trade it at POST /api/v1/auth/refresh for a new access token (and a new refresh token) before `expires_in` runs out. Absent when refresh is off (AUTH_REFRESH_TTL=0s).',
  }),
});

/** RFC 7517 JWK Set: the hub signs with Ed25519 (OKP). */
export const jwksSchema = z.object({
  keys: z.array(
    z.looseObject({
      kty: z.string(),
      kid: z.string().optional(),
      alg: z.string().optional(),
      use: z.string().optional(),
      crv: z.string().optional(),
      x: z.string().optional(),
    }),
  ),
});

export type TokenResponseJson = z.output<typeof tokenResponseSchema>;
