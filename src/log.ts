/**
 * Logs (pino): JSON lines for journald and log shippers, readable lines on a terminal
 * (LOG_FORMAT: `auto`, the default, is readable when stdout is a terminal and JSON otherwise).
 * Secrets never reach a log line: the redact list names every field that may carry one, and code
 * never logs a raw config or request header set.
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

export const LOG_FORMATS = ['auto', 'pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** Fields every line has, shown by position (or not at all) rather than as `key=value`. */
const SHOWN_APART = new Set([
  'time',
  'level',
  'pid',
  'hostname',
  'name',
  'component',
  'module',
  'msg',
  'err',
]);

const two = (n: number) => String(n).padStart(2, '0');

function valueText(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/**
 * One JSON log line as a person reads it: `14:03:07 INFO  meshhub/http: http listening port=8080`
 * (local time; the component or module after the logger's name), an error's message inline and its stack
 * indented below. A line that is not JSON passes through as it is.
 */
export function readableLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const at = new Date(
    typeof entry.time === 'string' || typeof entry.time === 'number' ? entry.time : Date.now(),
  );
  const time = `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
  const level = (LEVEL_NAMES[Number(entry.level)] ?? String(entry.level)).padEnd(5);
  const part = entry.component ?? entry.module;
  const who = [entry.name, part].filter((p) => typeof p === 'string' && p).join('/');
  const fields = Object.entries(entry)
    .filter(([key]) => !SHOWN_APART.has(key))
    .map(([key, value]) => `${key}=${valueText(value)}`);
  const err = entry.err as { message?: unknown; stack?: unknown } | undefined;
  if (err && typeof err === 'object') fields.push(`err=${valueText(err.message ?? err)}`);
  const head = [time, level, `${who}:`, typeof entry.msg === 'string' ? entry.msg : '', ...fields]
    .filter(Boolean)
    .join(' ');
  const stack =
    err && typeof err.stack === 'string'
      ? `\n${err.stack
          .split('\n')
          .slice(1)
          .map((l) => `    ${l.trim()}`)
          .join('\n')}`
      : '';
  return `${head}${stack}\n`;
}

/** A destination that writes each JSON line pino hands it as a readable line to `out`. */
export function readableDestination(out: { write(text: string): unknown }): pino.DestinationStream {
  return { write: (line: string) => void out.write(readableLine(line)) };
}

/** `auto` → readable when stdout is a terminal, JSON otherwise. */
export function resolveLogFormat(
  format: LogFormat,
  stdoutIsTty = process.stdout.isTTY === true,
): 'pretty' | 'json' {
  if (format === 'auto') return stdoutIsTty ? 'pretty' : 'json';
  return format;
}

export function createLogger(options: {
  level: string;
  destination?: pino.DestinationStream;
  name?: string;
  /** LOG_FORMAT (default `auto`); ignored when `destination` is given. */
  format?: LogFormat;
}): Logger {
  // A terminal gets each line as it is written; JSON is buffered (the SD card, the journal).
  const destination =
    options.destination ??
    (resolveLogFormat(options.format ?? 'auto') === 'pretty'
      ? readableDestination(pino.destination({ dest: 1, sync: true }))
      : pino.destination({ dest: 1, sync: false }));
  return pino(
    {
      name: options.name ?? 'meshhub',
      level: options.level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: pino.stdSerializers.err },
    },
    destination,
  );
}
