import type { z } from 'zod';
import type { RadioStatus } from '../domain/radio.js';
import type { ActorStatus } from '../kernel/supervisor.js';
import type { healthReportSchema } from './schemas.js';

/**
 * ok: everything runs; degraded: runs, but something cannot do its job (radio down, plugin
 * disabled); down: a required actor is not running.
 */
export type HealthReport = z.output<typeof healthReportSchema>;

export function buildHealthReport(input: {
  version: string;
  startedAt: number;
  radio: RadioStatus;
  actors: ActorStatus[];
  now?: number;
}): HealthReport {
  const down = input.actors.some((a) => a.required && a.state !== 'running');
  const degraded =
    input.actors.some((a) => !a.ready) ||
    (input.radio.transport !== 'none' && input.radio.state !== 'connected');
  return {
    status: down ? 'down' : degraded ? 'degraded' : 'ok',
    version: input.version,
    uptime_s: Math.round(((input.now ?? Date.now()) - input.startedAt) / 1000),
    radio: input.radio,
    actors: input.actors.map((a) => ({
      name: a.name,
      state: a.state,
      required: a.required,
      ready: a.ready,
      restarts: a.restarts,
      ...(a.lastError ? { last_error: a.lastError } : {}),
      ...a.detail,
    })),
  };
}
