/**
 * Which history to ask for: the chosen range and the interval that suits it (docs/architecture.md
 * "Decisions", /weather/history: raw readings for a day, hourly means for weeks, daily means for a year),
 * so a chart never asks for more points than it can draw.
 */

import type { HistoryInterval } from '../api/types.js';
import { t } from '../i18n/index.js';

export type { HistoryInterval };
export type PresetRange = '24h' | '7d' | '30d' | '1y';
export type RangeChoice =
  | { kind: 'preset'; preset: PresetRange }
  | { kind: 'custom'; start: number; end: number };

export const PRESETS: ReadonlyArray<{
  preset: PresetRange;
  label: string;
  spanMs: number;
  interval: HistoryInterval;
}> = [
  { preset: '24h', label: '24 h', spanMs: 24 * 3_600_000, interval: 'raw' },
  { preset: '7d', label: '7 d', spanMs: 7 * 86_400_000, interval: '1h' },
  { preset: '30d', label: '30 d', spanMs: 30 * 86_400_000, interval: '1h' },
  { preset: '1y', label: '1 y', spanMs: 365 * 86_400_000, interval: '1d' },
];

const MAX_CUSTOM_SPAN_MS = 20 * 366 * 86_400_000;

export interface HistoryPlan {
  start: number;
  end: number;
  interval: HistoryInterval;
  /** The range ends now: live readings extend it. */
  live: boolean;
}

/** Raw up to two days, hourly up to about three months, daily beyond. */
export function intervalForSpan(spanMs: number): HistoryInterval {
  if (spanMs <= 2 * 86_400_000) return 'raw';
  if (spanMs <= 92 * 86_400_000) return '1h';
  return '1d';
}

export function planHistory(choice: RangeChoice, nowMs: number): HistoryPlan | { error: string } {
  if (choice.kind === 'preset') {
    const preset = PRESETS.find((p) => p.preset === choice.preset)!;
    return { start: nowMs - preset.spanMs, end: nowMs, interval: preset.interval, live: true };
  }
  const { start, end } = choice;
  if (!Number.isFinite(start) || !Number.isFinite(end)) return { error: t('mesh.rangeBoth') };
  if (!(end > start)) return { error: t('mesh.rangeOrder') };
  if (end - start > MAX_CUSTOM_SPAN_MS) return { error: t('mesh.rangeMax') };
  return { start, end, interval: intervalForSpan(end - start), live: false };
}

/** The range as the node page's query string: `range=7d`, or `start=…&end=…` in UTC. */
export function rangeToQuery(choice: RangeChoice): string {
  if (choice.kind === 'preset') return choice.preset === '24h' ? '' : `range=${choice.preset}`;
  return `start=${new Date(choice.start).toISOString()}&end=${new Date(choice.end).toISOString()}`;
}

export function rangeFromQuery(search: string): RangeChoice {
  const params = new URLSearchParams(search);
  const start = Date.parse(params.get('start') ?? '');
  const end = Date.parse(params.get('end') ?? '');
  if (Number.isFinite(start) && Number.isFinite(end)) return { kind: 'custom', start, end };
  const preset = PRESETS.find((p) => p.preset === params.get('range'));
  return { kind: 'preset', preset: preset?.preset ?? '24h' };
}

/** `2026-11-21T10:05` for a datetime-local input, in the browser's time zone. */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A datetime-local value (browser time zone) as ms; NaN when empty or malformed. */
export function fromLocalInput(value: string): number {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value)) return Number.NaN;
  return new Date(value).getTime();
}
