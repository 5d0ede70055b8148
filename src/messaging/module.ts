/**
 * Messaging (spec "gateway", port 8003): subscribers text people in the field; the gateway
 * actor sends the queued texts through the radio and files the replies.
 */
import { defineModule } from '../module.js';
import { MessageGatewayActor } from './gateway-actor.js';
import { messagingRoutesFor } from './messaging-api.js';
import { watchMessageMetrics } from './metrics.js';
import { MESSAGES_TOPIC_ROOT, messageEventPayload, messageEventTopic } from './mqtt-events.js';
import { messagingSettings } from './settings.js';

export const messagingModule = defineModule({
  name: 'messaging',
  settings: messagingSettings,
  create(ctx) {
    const s = ctx.settings;
    ctx.mount(
      '/api/v1/messages',
      messagingRoutesFor({
        db: ctx.db,
        bus: ctx.bus,
        owner: ctx.owner,
        auth: ctx.auth,
        perSubscriber: s.MESSAGE_RATE_PER_SUBSCRIBER,
        perNode: s.MESSAGE_RATE_PER_NODE,
        maxHoldHours: s.MESSAGE_HOLD_HOURS,
      }),
      { component: 'gateway' },
    );
    // Issue 4: every message transition on `meshhub/messages/<subscriber>/<node_id>`, admins only.
    ctx.mqtt.topic(`${MESSAGES_TOPIC_ROOT}/#`, { readers: 'admin' });
    ctx.bus.on(ctx.owner, 'message.updated', (change) =>
      ctx.mqtt.publish(messageEventTopic(change), messageEventPayload(change)),
    );
    watchMessageMetrics({ bus: ctx.bus, metrics: ctx.metrics.core, db: ctx.db, owner: ctx.owner });
    const gateway = new MessageGatewayActor({
      bus: ctx.bus,
      db: ctx.db,
      log: ctx.log,
      delivery: {
        ackTimeoutMs: s.MESSAGE_ACK_TIMEOUT,
        maxRetries: s.MESSAGE_MAX_RETRIES,
        retryDelayMs: s.MESSAGE_RETRY_DELAY,
        holdRetryMaxMs: s.MESSAGE_HOLD_RETRY_MAX,
      },
      airtimePercent: s.MESSAGE_AIRTIME_PERCENT,
      defaultHoldMs: s.MESSAGE_HOLD_HOURS * 3_600_000,
    });
    return { actors: [gateway] };
  },
});
