/**
 * Web Push in this browser: the service worker (/sw.js, public/), the hub's VAPID key, and the
 * subscription posted to the hub for the signed-in user. Each step says in words what failed.
 */
import { request } from '../api/client.js';
import { t } from '../i18n/index.js';

export type PushSupport = 'supported' | 'unsupported' | 'insecure';

export function pushSupport(): PushSupport {
  if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window))
    return 'unsupported';
  return window.isSecureContext ? 'supported' : 'insecure';
}

/** Registers the service worker (also what makes the app installable). */
export function registerServiceWorker(): Promise<ServiceWorkerRegistration> | undefined {
  if (!('serviceWorker' in navigator)) return undefined;
  return navigator.serviceWorker.register('/sw.js', { scope: '/' });
}

function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const b64 = base64url.replace(/-/g, '+').replace(/_/g, '/');
  const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  const out = new Uint8Array(new ArrayBuffer(raw.length));
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

/** The current subscription of this browser, if any. */
export async function currentSubscription(): Promise<PushSubscription | null> {
  const registration = await navigator.serviceWorker.getRegistration('/');
  return registration ? registration.pushManager.getSubscription() : null;
}

export async function enablePush(token: string): Promise<void> {
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') throw new Error(t('mesh.alerts.blocked'));
  const registration = await registerServiceWorker()!;
  await navigator.serviceWorker.ready;
  const { body } = await request<{ public_key: string }>('/api/v1/notifications/push/key');
  let subscription: PushSubscription;
  try {
    subscription = await registration.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: keyBytes(body.public_key),
    });
  } catch {
    throw new Error(t('mesh.alerts.noPushService'));
  }
  await request('/api/v1/notifications/push/subscriptions', {
    method: 'POST',
    token,
    body: subscription.toJSON(),
  });
}

export async function disablePush(token: string): Promise<void> {
  const subscription = await currentSubscription();
  if (!subscription) return;
  await request('/api/v1/notifications/push/subscriptions', {
    method: 'DELETE',
    token,
    body: { endpoint: subscription.endpoint },
  }).catch(() => undefined);
  await subscription.unsubscribe();
}
