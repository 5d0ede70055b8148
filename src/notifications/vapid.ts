/**
 * The hub's VAPID key pair (RFC 8292): made once, kept in DATA_DIR/vapid-keys.json (0600) so
 * browsers' subscriptions stay valid across restarts. A damaged file is a start-up failure that
 * names it, never silently replaced (that would orphan every subscription). web-push is loaded
 * only to make the pair, once; a hub that has its keys and sends no push never holds it (3 MB).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StartupFailure } from '../kernel/startup-failure.js';
import { PRIVATE_FILE_MODE } from '../store/data-dir.js';

export const VAPID_FILE = 'vapid-keys.json';

export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

export async function loadOrCreateVapidKeys(dataDir: string): Promise<VapidKeys> {
  const file = join(dataDir, VAPID_FILE);
  let text: string | undefined;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text === undefined) {
    const { default: webpush } = await import('web-push');
    const keys = webpush.generateVAPIDKeys();
    writeFileSync(file, `${JSON.stringify(keys)}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    return keys;
  }
  try {
    const parsed = JSON.parse(text) as Partial<VapidKeys>;
    if (
      typeof parsed.publicKey === 'string' &&
      typeof parsed.privateKey === 'string' &&
      B64URL.test(parsed.publicKey) &&
      B64URL.test(parsed.privateKey)
    )
      return { publicKey: parsed.publicKey, privateKey: parsed.privateKey };
  } catch {
    // reported below
  }
  throw new StartupFailure(
    `${file} is not a VAPID key file; move it away to make a new key pair (browsers then subscribe again)`,
  );
}
