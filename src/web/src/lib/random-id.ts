/**
 * A random id (128 bits, hex). Not crypto.randomUUID: browsers offer it only in secure
 * contexts, and the hub is usually opened over plain http on a LAN address.
 */
export function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
