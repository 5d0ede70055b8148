/** The app's pages by path (the hub answers every one of them with index.html). */

export type Route =
  | { page: 'dashboard'; focus?: string; site?: string }
  | { page: 'node'; nodeId: string }
  | { page: 'chat'; nodeId?: string }
  | { page: 'plans' }
  | { page: 'admin-billing' }
  | { page: 'sites' }
  | { page: 'packets' }
  | { page: 'notifications' }
  | { page: 'audit'; view: AuditView }
  | { page: 'not-found'; path: string };

/**
 * The audit console's views (`/audit`, `/audit/sources`, …); `callback` ends a sign-in;
 * `timeline` is one actor's (`/audit/timeline?actor=…`, issue 29).
 */
export const AUDIT_VIEWS = ['search', 'sources', 'ask', 'alerts', 'rules', 'callback', 'timeline'] as const;
export type AuditView = (typeof AUDIT_VIEWS)[number];

export const NODE_ID = /^![0-9a-f]{8}$/;

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

export function matchRoute(pathname: string, search = ''): Route {
  const path = pathname.replace(/\/+$/, '') || '/';
  if (path === '/') {
    const params = new URLSearchParams(search);
    const focus = params.get('node');
    const site = params.get('site');
    return { page: 'dashboard', ...(focus ? { focus } : {}), ...(site ? { site } : {}) };
  }
  const node = /^\/nodes\/([^/]+)$/.exec(path);
  if (node) {
    const nodeId = decode(node[1]!);
    return nodeId ? { page: 'node', nodeId } : { page: 'not-found', path };
  }
  if (path === '/chat') return { page: 'chat' };
  if (path === '/plans') return { page: 'plans' };
  if (path === '/admin/billing') return { page: 'admin-billing' };
  if (path === '/sites') return { page: 'sites' };
  if (path === '/packets') return { page: 'packets' };
  if (path === '/notifications') return { page: 'notifications' };
  if (path === '/audit') return { page: 'audit', view: 'search' };
  const audit = /^\/audit\/([a-z]+)$/.exec(path);
  if (audit && (AUDIT_VIEWS as readonly string[]).includes(audit[1]!) && audit[1] !== 'search')
    return { page: 'audit', view: audit[1] as AuditView };
  const chat = /^\/chat\/([^/]+)$/.exec(path);
  if (chat) {
    const nodeId = decode(chat[1]!);
    return nodeId && NODE_ID.test(nodeId) ? { page: 'chat', nodeId } : { page: 'not-found', path };
  }
  return { page: 'not-found', path };
}

/** A node's page; on the upstream, `site` narrows its history to what that site heard. */
export const nodePath = (nodeId: string, site?: string) =>
  `/nodes/${encodeURIComponent(nodeId)}${site ? `?site=${encodeURIComponent(site)}` : ''}`;
/** The map; on the upstream, `site` shows only the nodes that site heard. */
export const mapPath = (site?: string) => (site ? `/?site=${encodeURIComponent(site)}` : '/');
/** The `site` of a page's query string, if any. */
export const siteParam = (search: string): string | undefined =>
  new URLSearchParams(search).get('site') || undefined;
export const chatPath = (nodeId?: string) => (nodeId ? `/chat/${encodeURIComponent(nodeId)}` : '/chat');
/** Issue 29: an actor's timeline in the audit console. */
/** An actor's timeline; `until` (a UTC date) ends its window on that day instead of today. */
export const auditTimelinePath = (actor: string, until?: string) =>
  `/audit/timeline?actor=${encodeURIComponent(actor)}${until ? `&until=${until}` : ''}`;
/** Issue 29: the audit search for one exact pivot value (all time). */
export const auditPivotPath = (filter: string, value: string) =>
  `/audit?${new URLSearchParams({ [filter]: value, range: 'all' }).toString()}`;
