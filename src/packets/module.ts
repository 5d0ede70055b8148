/**
 * The packet log: every packet the hub decodes (each sighting, duplicates marked) in a bounded
 * SQLite table (PACKET_LOG_MAX_ROWS rows, PACKET_LOG_DAYS days), served at `/api/v1/packets` with
 * its live tail at `/api/v1/packets/stream` (routes.ts).
 */
import { defineModule } from '../module.js';
import { PacketLogWriter } from './packet-log-writer.js';
import { packetsRoutes } from './routes.js';
import { packetLogSettings } from './settings.js';

const DAY_MS = 86_400_000;

export const packetsModule = defineModule({
  name: 'packets',
  settings: packetLogSettings,
  create(ctx) {
    const { settings } = ctx;
    const written = ctx.metrics.counter({
      name: 'packet_log_rows_written_total',
      help: 'Rows written to the packet log (one per sighting)',
    });
    const trimmed = ctx.metrics.counter({
      name: 'packet_log_rows_trimmed_total',
      help: 'Packet log rows trimmed by its bounds (PACKET_LOG_MAX_ROWS, PACKET_LOG_DAYS)',
    });
    const writer = settings.PACKET_LOG
      ? new PacketLogWriter({
          bus: ctx.bus,
          db: ctx.db,
          log: ctx.log,
          bounds: { maxRows: settings.PACKET_LOG_MAX_ROWS, maxAgeMs: settings.PACKET_LOG_DAYS * DAY_MS },
          counters: { written: (n) => written.inc(n), trimmed: (n) => trimmed.inc(n) },
          onWritten: (sightings, firstId) => routes.broadcast(sightings, firstId),
        })
      : undefined;
    const routes = packetsRoutes(() => writer?.packets);
    ctx.bus.on(ctx.owner, 'hub.stopping', () => routes.closeAll());
    ctx.mount('/api/v1/packets', routes.app, { component: 'hub' });
    return { actors: writer ? [writer] : [] };
  },
});
