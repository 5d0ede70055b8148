/**
 * ALERT_WEBHOOK_URL's body: the alert as the API shows it (schemas.ts), as JSON. With
 * ALERT_WEBHOOK_SECRET it is signed: `X-Meshhub-Signature: sha256=<hex HMAC-SHA256 of the body>`.
 * The sending itself (queue, retries, the guarded client) is sender.ts's.
 */
import { signBody } from '../../../src/http/webhook-post.js';
import type { AlertDestination } from './sender.js';
import type { AlertWebhookConfig } from './settings.js';

export function webhookDestination(config: AlertWebhookConfig): AlertDestination {
  return {
    name: 'webhook',
    url: config.url,
    format(alert) {
      const body = JSON.stringify(alert);
      return {
        body,
        ...(config.secret
          ? { headers: { 'x-meshhub-signature': signBody(config.secret.reveal(), body) } }
          : {}),
      };
    },
  };
}
