/**
 * One metric over time, drawn with uPlot (canvas; ~50 kB for every chart on the page). The
 * charts of a page share their cursor, so hovering one shows the same moment in all. Drag to
 * zoom in, double-click to zoom out. The canvas carries a text summary for screen readers.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { summarise } from '../lib/chart-series.js';
import { cardinal, formatNumber, withUnit } from '../lib/format.js';
import type { HistoryInterval } from '../lib/history-plan.js';
import type { MetricInfo } from '../lib/metrics.js';

const HEIGHT = 190;

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

function options(metric: MetricInfo, interval: HistoryInterval, width: number): uPlot.Options {
  const text = cssVar('--muted', '#5a6472');
  const grid = cssVar('--grid', 'rgba(0,0,0,.08)');
  const stroke = cssVar(`--chart-${metric.key}`, cssVar('--accent', '#0b6bcb'));
  const wind = metric.key === 'wind_direction';
  const points = metric.chart === 'points';
  const format = (v: number | null | undefined) =>
    v === null || v === undefined
      ? '–'
      : `${withUnit(formatNumber(v, metric.digits), metric.unit)}${wind ? ` ${cardinal(v)}` : ''}`;
  return {
    width,
    height: HEIGHT,
    cursor: { sync: { key: 'node-charts' }, drag: { x: true, y: false } },
    legend: { live: true },
    scales: { x: { time: true }, y: wind ? { range: [0, 360] } : { auto: true } },
    series: [
      { value: (_u, v) => (v === null || v === undefined ? '–' : new Date(v * 1000).toLocaleString()) },
      {
        label: metric.label,
        stroke,
        width: 2,
        spanGaps: false,
        value: (_u, v) => format(v),
        points: { show: points || interval !== 'raw', size: points ? 5 : 4, fill: stroke },
        ...(points ? { paths: () => null } : {}),
      },
    ],
    axes: [
      { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } },
      {
        stroke: text,
        size: 60,
        grid: { stroke: grid, width: 1 },
        ticks: { stroke: grid, width: 1 },
        ...(wind
          ? {
              splits: () => [0, 90, 180, 270, 360],
              values: (_u: uPlot, splits: number[]) => splits.map((v) => cardinal(v)),
            }
          : {
              values: (_u: uPlot, splits: number[]) =>
                splits.map((v) => formatNumber(v, metric.digits > 0 && Math.abs(v) < 100 ? 1 : 0)),
            }),
      },
    ],
  };
}

export interface MetricChartProps {
  metric: MetricInfo;
  x: number[];
  y: Array<number | null>;
  interval: HistoryInterval;
}

export function MetricChart({ metric, x, y, interval }: MetricChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const data = useRef<uPlot.AlignedData>([x, y]);
  data.current = [x, y];

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const created = new uPlot(options(metric, interval, Math.max(240, el.clientWidth)), data.current, el);
    plot.current = created;
    const observer = new ResizeObserver(() => {
      const width = Math.max(240, el.clientWidth);
      if (width !== created.width) created.setSize({ width, height: HEIGHT });
    });
    observer.observe(el);
    return () => {
      observer.disconnect();
      created.destroy();
      plot.current = undefined;
    };
  }, [metric, interval]);

  useEffect(() => {
    plot.current?.setData([x, y]);
  }, [x, y]);

  const summary = summarise(y);
  const describe = (v: number) => withUnit(formatNumber(v, metric.digits), metric.unit);
  const text = summary
    ? `${metric.label}: lowest ${describe(summary.min)}, highest ${describe(summary.max)}, latest ${describe(summary.last)}`
    : `${metric.label}: no values in this range`;
  return (
    <figure class="chart" data-metric={metric.key} data-points={x.length}>
      <figcaption>
        {metric.label} <span class="muted">({metric.unit})</span>
      </figcaption>
      <div ref={host} class="chart-canvas" role="img" aria-label={text} />
      <p class="chart-summary muted small">
        {summary ? text.slice(metric.label.length + 2) : 'No values in this range.'}
      </p>
    </figure>
  );
}
