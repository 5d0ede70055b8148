/** The app's pages by path (the hub answers every one of them with index.html). */

export type Route =
  | { page: 'dashboard'; focus?: string }
  | { page: 'node'; nodeId: string }
  | { page: 'chat'; nodeId?: string }
  | { page: 'plans' }
  | { page: 'admin-billing' }
  | { page: 'not-found'; path: string };

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
    const focus = new URLSearchParams(search).get('node');
    return focus ? { page: 'dashboard', focus } : { page: 'dashboard' };
  }
  const node = /^\/nodes\/([^/]+)$/.exec(path);
  if (node) {
    const nodeId = decode(node[1]!);
    return nodeId ? { page: 'node', nodeId } : { page: 'not-found', path };
  }
  if (path === '/chat') return { page: 'chat' };
  if (path === '/plans') return { page: 'plans' };
  if (path === '/admin/billing') return { page: 'admin-billing' };
  const chat = /^\/chat\/([^/]+)$/.exec(path);
  if (chat) {
    const nodeId = decode(chat[1]!);
    return nodeId && NODE_ID.test(nodeId) ? { page: 'chat', nodeId } : { page: 'not-found', path };
  }
  return { page: 'not-found', path };
}

export const nodePath = (nodeId: string) => `/nodes/${encodeURIComponent(nodeId)}`;
export const chatPath = (nodeId?: string) => (nodeId ? `/chat/${encodeURIComponent(nodeId)}` : '/chat');
