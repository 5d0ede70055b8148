/**
 * JSON logs (pino). Secrets never reach a log line: the redact list names every field that may
 * carry one, and code never logs a raw config or request header set.
 */
import { type Logger, pino } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'password',
  '*.password',
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'secret',
  '*.secret',
  'clientSecret',
  '*.clientSecret',
];

export function createLogger(options: {
  level: string;
  destination?: pino.DestinationStream;
  name?: string;
}): Logger {
  return pino(
    {
      name: options.name ?? 'meshhub',
      level: options.level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: pino.stdSerializers.err },
    },
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
