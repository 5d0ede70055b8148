/**
 * Notifications (issue 27): rules over the mesh's events, each firing stored, shown live, on
 * MQTT (`meshhub/alerts/<rule id>/<node_id>`, retained) and delivered to webhooks and Web Push;
 * subscribers hear of replies and failed texts on their own browsers. README "Notifications".
 */
import { Secret } from '../config/secret.js';
import { defineModule } from '../module.js';
import { Deliveries } from './delivery.js';
import { ALERTS_TOPIC_ROOT, NotifierActor } from './notifier-actor.js';
import { notificationRoutes } from './routes.js';
import { notificationSettings } from './settings.js';
import { NotificationStore } from './store.js';
import { loadOrCreateVapidKeys } from './vapid.js';

export const notificationsModule = defineModule({
  name: 'notifications',
  settings: notificationSettings,
  async create(ctx) {
    const s = ctx.settings;
    if (!s.NOTIFICATIONS) return {};
    const store = new NotificationStore(ctx.db, s.NOTIFY_HISTORY_MAX);
    const vapid = await loadOrCreateVapidKeys(ctx.hub.dataDir);
    const deliveries = new Deliveries({
      log: ctx.log,
      vapid,
      vapidSubject: s.VAPID_SUBJECT,
      allowedHosts: s.NOTIFY_ALLOWED_HOSTS,
      allowPrivateNetwork: s.NOTIFY_ALLOW_PRIVATE_NETWORK,
      timeoutMs: s.NOTIFY_WEBHOOK_TIMEOUT_MS,
      maxRetries: s.NOTIFY_WEBHOOK_MAX_RETRIES,
      onOutcome: (channel, outcome) => deliveriesTotal.inc({ channel, outcome }),
      onGone: (endpoint) => store.dropSubscription(endpoint),
    });
    ctx.mqtt.topic(`${ALERTS_TOPIC_ROOT}/#`, { readers: 'admin' });
    const notifier = new NotifierActor({
      bus: ctx.bus,
      db: ctx.db,
      log: ctx.log,
      store,
      deliveries,
      mqtt: ctx.mqtt,
      checkMs: s.NOTIFY_CHECK_SECONDS * 1_000,
      globalWebhook: s.NOTIFY_WEBHOOK_URL
        ? {
            url: s.NOTIFY_WEBHOOK_URL,
            format: s.NOTIFY_WEBHOOK_FORMAT,
            ...(s.NOTIFY_WEBHOOK_SECRET ? { secret: new Secret(s.NOTIFY_WEBHOOK_SECRET) } : {}),
          }
        : undefined,
      quietHours: s.NOTIFY_QUIET_HOURS,
      timeZone: s.NOTIFY_TIME_ZONE,
    });
    const firings = ctx.metrics.counter({
      name: 'notification_firings_total',
      help: 'Notification rule firings stored, by rule kind',
      labelNames: ['kind'],
    });
    const suppressed = ctx.metrics.counter({
      name: 'notification_suppressed_total',
      help: 'Firings held back by their rule’s repeat limit, by rule kind',
      labelNames: ['kind'],
    });
    const deliveriesTotal = ctx.metrics.counter({
      name: 'notification_deliveries_total',
      help: 'Notification deliveries by channel (webhook, push) and outcome (delivered, failed, dropped, gone)',
      labelNames: ['channel', 'outcome'],
    });
    const rules = ctx.metrics.gauge({ name: 'notification_rules', help: 'Notification rules stored' });
    const queued = ctx.metrics.gauge({
      name: 'notification_delivery_queue',
      help: 'Deliveries waiting to be sent',
    });
    ctx.metrics.onRender(() => {
      for (const [kind, n] of notifier.takeTally('firings')) firings.inc({ kind }, n);
      for (const [kind, n] of notifier.takeTally('suppressed')) suppressed.inc({ kind }, n);
      rules.set(notifier.ruleCount);
      queued.set(deliveries.queued);
    });
    ctx.mount(
      '/api/v1/notifications',
      notificationRoutes({
        store,
        auth: ctx.auth,
        publicKey: vapid.publicKey,
        allowedHosts: s.NOTIFY_ALLOWED_HOSTS,
        rulesChanged: () => notifier.reloadRules(),
      }),
      { component: 'hub' },
    );
    return { actors: [notifier] };
  },
});
