/** What the UI reads from its own access token: when it expires and whose it is (never verified here; the hub does that). */

/** Claims of a JWT, unverified (the hub verifies; the page only reads name, roles, expiry, audience). */
export function jwtClaims(token: string): Record<string, unknown> | undefined {
  const part = token.split('.')[1];
  if (!part) return undefined;
  try {
    const base64 = part
      .replace(/-/g, '+')
      .replace(/_/g, '/')
      .padEnd(Math.ceil(part.length / 4) * 4, '=');
    const json = new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)));
    const parsed: unknown = JSON.parse(json);
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** `exp` in ms, when the token carries one. */
export function tokenExpiry(token: string): number | undefined {
  const exp = jwtClaims(token)?.exp;
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}

/** The `roles` claim of a hub token (`subscriber`, `admin`, …): what the UI offers, not what the hub allows. */
export function tokenRoles(token: string): string[] {
  const roles = jwtClaims(token)?.roles;
  return Array.isArray(roles) ? roles.filter((r): r is string => typeof r === 'string') : [];
}

export function tokenUsername(token: string): string | undefined {
  const claims = jwtClaims(token);
  const name = claims?.preferred_username ?? claims?.sub;
  return typeof name === 'string' ? name : undefined;
}
