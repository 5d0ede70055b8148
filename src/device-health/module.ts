/**
 * Device health (README "Device health"): DEVICE_METRICS and LocalStats reports and the SNR/RSSI
 * of directly heard packets, stored with the readings' rollups, served per node and as each
 * node's latest, with the hub's own airtime against its budget. Raw samples expire with the
 * readings (src/retention calls `deleteHealthOlderThan`); rollups are kept.
 */

import { defineModule } from '../module.js';
import { migrateComponent } from '../store/component-migrations.js';
import type { Database } from '../store/database.js';
import { deleteReadingsOlderThan } from '../store/retention.js';
import { AirtimeTracker } from './airtime-tracker.js';
import { HEALTH_MIGRATIONS, HEALTH_TABLE } from './columns.js';
import { DeviceHealthActor } from './device-health-actor.js';
import { HealthService } from './health-service.js';
import { HealthWriter } from './health-writer.js';
import { mqttDeviceHealthFeed } from './mqtt-feed.js';
import { airtimeRoutes, healthHistoryRoutes, healthLatestRoutes } from './routes.js';
import { deviceHealthSettings } from './settings.js';

export const DEVICE_HEALTH_COMPONENT = 'device-health';

/** Creates or upgrades the feature's tables. */
export function migrateDeviceHealth(db: Database): void {
  migrateComponent(db, DEVICE_HEALTH_COMPONENT, HEALTH_MIGRATIONS);
}

/** Deletes raw samples older than `cutoffMs`, in chunks (the readings' retention job). */
export function deleteHealthOlderThan(db: Database, cutoffMs: number): Promise<number> {
  migrateDeviceHealth(db);
  return deleteReadingsOlderThan(db, cutoffMs, { table: HEALTH_TABLE, key: 'node_id' });
}

export const deviceHealthModule = defineModule({
  name: 'device-health',
  settings: deviceHealthSettings,
  create(ctx) {
    const s = ctx.settings;
    migrateDeviceHealth(ctx.db);
    const service = new HealthService(ctx.db);
    const feed = mqttDeviceHealthFeed(ctx.mqtt, service);
    const tracker = new AirtimeTracker();
    let myNodeNum: number | undefined;
    ctx.bus.on(
      ctx.owner,
      'radio.status',
      (status) => {
        if (status.myNodeNum !== undefined) myNodeNum = status.myNodeNum;
      },
      { replay: true },
    );
    ctx.bus.on(ctx.owner, 'message.updated', ({ message, kind }) => {
      if (kind === 'status' && message.direction === 'outbound' && message.status === 'sent')
        tracker.sent(Buffer.byteLength(message.text, 'utf8'), Date.now());
    });

    const samples = ctx.metrics.counter({
      name: 'device_health_samples_total',
      help: 'Device health samples taken, by kind: device (DEVICE_METRICS), local_stats, link (SNR/RSSI)',
      labelNames: ['kind'],
    });
    const rows = ctx.metrics.counter({
      name: 'device_health_rows_total',
      help: 'Device health samples committed, by outcome: stored, or duplicate (nothing new)',
      labelNames: ['outcome'],
    });
    const failures = ctx.metrics.counter({
      name: 'device_health_write_failures_total',
      help: 'Batches of device health samples that could not be committed',
    });
    let writer: HealthWriter | undefined;
    const actor = new DeviceHealthActor({
      bus: ctx.bus,
      log: ctx.log,
      writer: () => {
        writer ??= new HealthWriter(ctx.db);
        return writer;
      },
      flushMs: s.DEVICE_HEALTH_FLUSH,
      onStored: (stored) => {
        service.stored(stored);
        feed.stored(stored);
      },
      onMoved: (oldNodeId, newNodeId) => {
        service.moved();
        feed.moved(oldNodeId, newNodeId);
      },
      linkSampleMs: s.DEVICE_HEALTH_SNR_SECONDS * 1000,
      counters: {
        sample: (kind) => samples.inc({ kind }),
        written: (total, added) => {
          rows.inc({ outcome: 'stored' }, added);
          if (total > added) rows.inc({ outcome: 'duplicate' }, total - added);
        },
        failed: () => failures.inc(),
      },
    });

    ctx.mount('/api/v1/nodes/:node_id/device-health', healthHistoryRoutes(service), { component: 'weather' });
    ctx.mount('/api/v1/device-health', healthLatestRoutes(service), { component: 'weather' });
    ctx.mount(
      '/api/v1/radio',
      airtimeRoutes({
        service,
        tracker,
        budgetPercent: async () => {
          if (!ctx.bus.hasHandler('messaging.airtimeBudget')) return undefined;
          const answer = await ctx.bus
            .ask('messaging.airtimeBudget', {}, { timeoutMs: 1_000 })
            .catch(() => undefined);
          return answer?.percent;
        },
        myNodeNum: () => myNodeNum,
      }),
      { component: 'weather' },
    );
    return { actors: s.DEVICE_HEALTH ? [actor] : [] };
  },
});
