/** `POST /api/v1/ingest/readings`, on the main port and the ingestion component port (8001). */
import { z } from 'zod';
import { defineModule } from '../module.js';
import { busReadingSink } from './reading-sink.js';
import { ingestRoutes } from './routes.js';

export const ingestModule = defineModule({
  name: 'ingest',
  settings: z.object({}),
  create(ctx) {
    const { core } = ctx.metrics;
    ctx.mount(
      '/api/v1/ingest',
      ingestRoutes({
        sink: busReadingSink({ bus: ctx.bus }),
        verifier: ctx.auth.verifier,
        log: ctx.log,
        onRejected: (source, reason, count) => core.ingestRejectedReadings.inc({ source, reason }, count),
      }),
      { component: 'ingestion' },
    );
    return {};
  },
});
