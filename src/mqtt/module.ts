/**
 * The embedded MQTT broker (README "MQTT"): ingestion (Meshtastic gateways' uplink, our JSON
 * readings), the hub's events out, and, with MQTT_WEBSOCKET, MQTT over WebSocket at /mqtt on
 * the HTTP port. Logins use the hub's users and its one identity.
 */
import { HubUserService } from '../auth/user-service.js';
import { busReadingSink } from '../ingest/reading-sink.js';
import { defineModule } from '../module.js';
import { WEBSOCKET_PATH } from './broker.js';
import { MqttBrokerActor } from './broker-actor.js';
import { mqttSettings } from './settings.js';

export const mqttModule = defineModule({
  name: 'mqtt',
  settings: mqttSettings,
  create(ctx) {
    const s = ctx.settings;
    const users = new HubUserService(ctx.db);
    const broker = new MqttBrokerActor({
      bus: ctx.bus,
      log: ctx.log,
      metrics: ctx.metrics.core,
      db: ctx.db,
      fanOut: ctx.mesh,
      sink: busReadingSink({ bus: ctx.bus }),
      settings: {
        host: s.MQTT_HOST ?? ctx.hub.listenHost,
        port: s.MQTT_PORT,
        websocket: s.MQTT_WEBSOCKET,
        allowAnonymous: s.MQTT_ALLOW_ANONYMOUS,
        maxConnections: s.MQTT_MAX_CONNECTIONS,
        maxPacketBytes: s.MQTT_MAX_PACKET_BYTES,
        drainTimeoutMs: s.MQTT_DRAIN_TIMEOUT_SECONDS * 1000,
        channelKeys: s.MESH_CHANNEL_KEYS,
        trustedGateways: s.MESH_TRUSTED_GATEWAYS,
        retained: { maxMessages: s.MQTT_RETAINED_MAX_MESSAGES, maxBytes: s.MQTT_RETAINED_MAX_BYTES },
        haDiscovery: s.HA_DISCOVERY,
        offlineAfterMs: s.NODE_OFFLINE_AFTER,
      },
      checkPassword: (username, password) => users.checkPassword(username, password),
      tokenVerifier: ctx.auth.verifier,
      logins: ctx.auth.logins,
      moduleTopics: ctx.mqtt.registry,
      version: ctx.hub.version,
    });
    if (s.MQTT_WEBSOCKET)
      ctx.upgrade(WEBSOCKET_PATH, (request, socket, head) => broker.handleUpgrade(request, socket, head));
    return { actors: [broker] };
  },
});
