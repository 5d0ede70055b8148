/**
 * One metric over time, drawn with uPlot (canvas; ~50 kB for every chart on the page). The
 * charts of a page share their cursor, so hovering one shows the same moment in all. Drag to
 * zoom in, double-click to zoom out. The x axis spans the chosen range (chart-series.ts pads the
 * data to it); the figure carries the axis' span in `data-x-min`/`data-x-max` (seconds) and a
 * text summary for screen readers.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { t } from '../i18n/index.js';
import { type ChartSeries, hasLoneValue, summarise, tickDigits } from '../lib/chart-series.js';
import { cardinal, formatDateTime, formatNumber, withUnit } from '../lib/format.js';
import type { HistoryInterval } from '../lib/history-plan.js';
import type { MetricInfo } from '../lib/metrics.js';

const HEIGHT = 190;

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

interface ChartLook {
  metric: MetricInfo;
  interval: HistoryInterval;
  /** Draw every value as a point too (means, or a value no line can show). */
  points: boolean;
}

function options(
  { metric, interval, points: dots }: ChartLook,
  width: number,
  figure: HTMLElement,
): uPlot.Options {
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
    hooks: {
      setScale: [
        (u, key) => {
          if (key !== 'x') return;
          figure.dataset.xMin = String(u.scales.x?.min ?? '');
          figure.dataset.xMax = String(u.scales.x?.max ?? '');
        },
      ],
    },
    legend: { live: true },
    scales: { x: { time: true }, y: wind ? { range: [0, 360] } : { auto: true } },
    series: [
      { value: (_u, v) => (v === null || v === undefined ? '–' : formatDateTime(v * 1000)) },
      {
        label: metric.label,
        stroke,
        width: 2,
        spanGaps: false,
        value: (_u, v) => format(v),
        points: { show: points || dots || interval !== 'raw', size: points || dots ? 5 : 4, fill: stroke },
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
              values: (_u: uPlot, splits: number[]) => {
                const digits = Math.min(metric.digits, tickDigits(splits));
                return splits.map((v) => formatNumber(v, digits));
              },
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
  /** The colour scheme in use: the chart takes its colours from the stylesheet when made. */
  theme: string;
}

export function MetricChart({ metric, x, y, interval, theme }: MetricChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const figure = useRef<HTMLElement>(null);
  const points = hasLoneValue(y);
  const plot = useRef<uPlot | undefined>(undefined);
  const data = useRef<uPlot.AlignedData>([x, y]);
  data.current = [x, y];

  useEffect(() => {
    const el = host.current;
    if (!el || !figure.current) return;
    const look = { metric, interval, points };
    const created = new uPlot(options(look, Math.max(240, el.clientWidth), figure.current), data.current, el);
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
  }, [metric, interval, points, theme]);

  useEffect(() => {
    plot.current?.setData([x, y]);
  }, [x, y]);

  const summary = summarise(y);
  const describe = (v: number) => withUnit(formatNumber(v, metric.digits), metric.unit);
  const said = summary
    ? t('mesh.chartSummary', {
        lowest: describe(summary.min),
        highest: describe(summary.max),
        latest: describe(summary.last),
      })
    : t('mesh.chartEmpty');
  const text = `${metric.label}: ${said}`;
  return (
    <figure ref={figure} class="chart" data-metric={metric.key} data-points={x.length}>
      <figcaption>
        {metric.label} <span class="muted">({metric.unit})</span>
      </figcaption>
      <div ref={host} class="chart-canvas" role="img" aria-label={text} />
      <p class="chart-summary muted small">{summary ? said : t('mesh.chartEmptySentence')}</p>
    </figure>
  );
}

/** One MetricChart per metric present in `series` (chart-series.ts), sharing the page's cursor. */
export function MetricCharts({
  series,
  interval,
  theme,
}: {
  series: ChartSeries;
  interval: HistoryInterval;
  theme: string;
}) {
  return (
    <div class="charts">
      {series.present.map((metric) => (
        <MetricChart
          key={metric.key}
          metric={metric}
          x={series.x}
          y={series.y[metric.key]!}
          interval={interval}
          theme={theme}
        />
      ))}
    </div>
  );
}
