/**
 * CSV (RFC 4180: CRLF line ends, fields quoted when they hold a comma, quote or line break) of
 * exactly what the charts show: the same rows, the same interval, values in the units on the axes.
 */
import type { MetricInfo, ReadingJson } from './metrics.js';

export type CsvCell = string | number | null | undefined;

function field(cell: CsvCell): string {
  if (cell === null || cell === undefined) return '';
  const text = typeof cell === 'number' ? (Number.isFinite(cell) ? String(cell) : '') : cell;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function toCsv(rows: readonly (readonly CsvCell[])[]): string {
  return rows.map((row) => row.map(field).join(',')).join('\r\n') + (rows.length ? '\r\n' : '');
}

/** Rounds away float noise (1013.2499999) without losing any sensor's resolution. */
function clean(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

export function historyCsv(readings: readonly ReadingJson[], metrics: readonly MetricInfo[]): string {
  const header: CsvCell[] = ['timestamp', ...metrics.map((m) => m.csvColumn)];
  const rows = readings.map((r) => [
    r.timestamp,
    ...metrics.map((m) => {
      const value = r[m.key];
      return typeof value === 'number' ? clean(m.display(value)) : null;
    }),
  ]);
  return toCsv([header, ...rows]);
}

/** `meshhub-!a1b2c3d4-2026-11-20T10-00Z-2026-11-21T10-00Z-raw.csv` (no characters a file system dislikes). */
export function csvFileName(nodeId: string, start: number, end: number, interval: string): string {
  const stamp = (ms: number) => `${new Date(ms).toISOString().slice(0, 16).replace(':', '-')}Z`;
  return `meshhub-${nodeId.replace(/[^A-Za-z0-9!_-]/g, '_')}-${stamp(start)}-${stamp(end)}-${interval}.csv`;
}
