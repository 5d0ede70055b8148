/**
 * The audit tools over MCP over HTTP (src/mcp/http.ts; README "MCP over HTTP"), offered by the
 * running plugin (index.ts) with its own store, privacy policy, ask service and rate limiter: no
 * second connection. Who gets what is the audit HTTP API's rule, not a second copy of it:
 * - the caller is the one the API's bearer check makes of the same token (http/auth.ts
 *   callerFrom); with AUTH_ENABLED off the API serves everyone as the anonymous caller, and so
 *   do these tools (the hub still requires its own token for /mcp);
 * - a caller without read access to the audit data (mayAccess, AUDIT_READER_ROLES) gets no audit
 *   tool at all; with AUTH_ENABLED but incomplete settings, no caller does (the API answers 503);
 * - the privacy view is PrivacyPolicy.scopeFor(caller), as for every read path;
 * - each call of an audit tool counts against the API's rate limits, per client address: the
 *   ask tool in `ask`, the others in `default` (a read); 429 / 503 problems, as the API answers.
 *   Listing the tools and the protocol's handshake read no audit data and are not counted.
 */
import type { McpHttpContribution } from '../../../src/mcp/events.js';
import type { AskService } from '../ask/ask-service.js';
import { callerFrom, mayAccess } from '../http/auth.js';
import { ANONYMOUS } from '../http/context.js';
import type { PrivacyPolicy } from '../http/privacy.js';
import { admit, type RateLimiter } from '../http/rate-limit.js';
import type { AuthSettings, RateLimitTier } from '../settings.js';
import type { AuditStore } from '../store/audit-store.js';
import { AUDIT_TOOL_NAMES, auditTools } from './tools.js';

export function auditMcpHttpTools(deps: {
  auth: AuthSettings;
  store: AuditStore;
  privacy: PrivacyPolicy;
  ask?: AskService;
  limiter: RateLimiter;
  onLimited?: (tier: RateLimitTier) => void;
}): McpHttpContribution {
  return async ({ identity, client, toolCalls }) => {
    if (deps.auth.state === 'misconfigured') return undefined;
    const caller = deps.auth.state === 'on' ? callerFrom(identity, deps.auth) : ANONYMOUS;
    if (!mayAccess(caller, deps.auth, 'read')) return undefined;
    for (const name of toolCalls.filter((n) => AUDIT_TOOL_NAMES.has(n))) {
      await admit(deps.limiter, name === 'ask' ? 'ask' : 'default', client, deps.onLimited);
    }
    return auditTools({
      store: deps.store,
      privacy: deps.privacy,
      ...(deps.ask ? { ask: deps.ask } : {}),
      caller,
      restricted: 'the roles of your token do not allow it',
    });
  };
}
