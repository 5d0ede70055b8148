/**
 * Who sees and who changes a saved search (issue 29; README "Saved searches"). Secure by default:
 * - a private one (no role) is seen by its owner only — an audit admin included, it is a 404;
 * - a shared one by its owner, the holders of its role (an audit reader or admin role) and the
 *   audit admins (AUDIT_ADMIN_ROLES), who may change or delete it;
 * - otherwise only the owner changes or deletes it.
 * The owner is the verified caller: the token's issuer and subject (its name is shown). With
 * AUTH_ENABLED off everyone is the one anonymous caller and owns every saved search.
 */
import { mayAccess } from '../http/auth.js';
import type { Caller } from '../http/context.js';
import type { AuthSettings } from '../settings.js';
import type { SavedSearchRow } from './repository.js';

/** The owner key of the caller: issuer and subject of its token, or `anonymous`. */
export function ownerOf(caller: Caller): string {
  return caller.authenticated && caller.subject ? `${caller.issuer ?? ''}#${caller.subject}` : 'anonymous';
}

export const isAuditAdmin = (caller: Caller, auth: AuthSettings) => mayAccess(caller, auth, 'admin');

export function maySee(row: SavedSearchRow, caller: Caller, auth: AuthSettings): boolean {
  if (row.owner === ownerOf(caller)) return true;
  if (row.shared_role === null) return false;
  return caller.roles.includes(row.shared_role) || isAuditAdmin(caller, auth);
}

export function mayChange(row: SavedSearchRow, caller: Caller, auth: AuthSettings): boolean {
  if (row.owner === ownerOf(caller)) return true;
  return row.shared_role !== null && isAuditAdmin(caller, auth);
}
