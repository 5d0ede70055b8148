/**
 * The display settings (units, theme) as a browser keeps them, the values they show, the node
 * list's search and sensors known only from their readings, and the map's marker labels.
 */
import { describe, expect, it } from 'vitest';
import { keptLabels, markerLabels, markerWidth } from '../../src/web/src/dashboard/map-labels.js';
import { formatMetric } from '../../src/web/src/lib/format.js';
import {
  EMPTY_MESH,
  isSensorOnly,
  mergeReadings,
  snapshot,
  sortedNodes,
} from '../../src/web/src/lib/mesh-state.js';
import type { metricInfo } from '../../src/web/src/lib/metrics.js';
import { matchesSearch, nodeView } from '../../src/web/src/lib/node-view.js';
import { DEFAULT_DISPLAY, displayMetrics, parseDisplay, resolvedTheme } from '../../src/web/src/lib/units.js';

const metric = (key: Parameters<typeof metricInfo>[0], settings: Partial<typeof DEFAULT_DISPLAY>) =>
  displayMetrics({ ...DEFAULT_DISPLAY, ...settings }).find((m) => m.key === key)!;

describe('display settings', () => {
  it('reads what the browser kept, and falls back to the defaults for anything else', () => {
    expect(parseDisplay(null)).toEqual(DEFAULT_DISPLAY);
    expect(parseDisplay('not json')).toEqual(DEFAULT_DISPLAY);
    expect(parseDisplay('[1]')).toEqual(DEFAULT_DISPLAY);
    expect(parseDisplay('{"temperature":"f","pressure":"mmhg","wind":"kn","theme":"dark"}')).toEqual({
      temperature: 'f',
      pressure: 'hpa',
      wind: 'kn',
      theme: 'dark',
    });
  });

  it('shows the API’s values in the chosen units', () => {
    expect(formatMetric(metric('temperature_c', {}), 20)).toBe('20.0 °C');
    expect(formatMetric(metric('temperature_c', { temperature: 'f' }), 20)).toBe('68.0 °F');
    expect(formatMetric(metric('temperature_c', { temperature: 'f' }), -40)).toBe('-40.0 °F');
    expect(formatMetric(metric('pressure_pa', {}), 101325)).toBe('1013.3 hPa');
    expect(formatMetric(metric('pressure_pa', { pressure: 'inhg' }), 101325)).toBe('29.92 inHg');
    expect(formatMetric(metric('wind_speed_ms', { wind: 'kmh' }), 10)).toBe('36.0 km/h');
    expect(formatMetric(metric('wind_speed_ms', { wind: 'mph' }), 10)).toBe('22.4 mph');
    expect(formatMetric(metric('wind_speed_ms', { wind: 'kn' }), 10)).toBe('19.4 kn');
    // The CSV column names the unit it holds.
    expect(metric('temperature_c', { temperature: 'f' }).csvColumn).toBe('temperature_f');
    expect(metric('pressure_pa', { pressure: 'inhg' }).csvColumn).toBe('pressure_inhg');
    // The same units give the same catalogue (views memoise on it).
    expect(displayMetrics(DEFAULT_DISPLAY)).toBe(displayMetrics({ ...DEFAULT_DISPLAY }));
  });

  it('follows the system’s scheme only when the choice is automatic', () => {
    expect(resolvedTheme('auto', true)).toBe('dark');
    expect(resolvedTheme('auto', false)).toBe('light');
    expect(resolvedTheme('light', true)).toBe('light');
    expect(resolvedTheme('dark', false)).toBe('dark');
  });
});

describe('the node list', () => {
  const mesh = snapshot(
    [{ node_id: '!a1b2c3d4', long_name: 'Hilltop Barometer', short_name: 'HB01' }],
    [
      { node_id: '!a1b2c3d4', timestamp: '2026-11-28T10:00:00Z', temperature_c: 4 },
      { node_id: 'garden', timestamp: '2026-11-28T10:01:00Z', pm25_ugm3: 12, pm10_ugm3: 20 },
    ],
    EMPTY_MESH,
  );

  it('lists a sensor known only from its readings, marked as such', () => {
    expect(sortedNodes(mesh).map((n) => n.node_id)).toEqual(['!a1b2c3d4']);
    expect(sortedNodes(mesh, { sensors: true }).map((n) => n.node_id)).toEqual(['garden', '!a1b2c3d4']);
    expect(isSensorOnly(mesh, 'garden')).toBe(true);
    expect(isSensorOnly(mesh, '!a1b2c3d4')).toBe(false);
    const garden = nodeView(mesh, { node_id: 'garden' }, Date.parse('2026-11-28T10:02:00Z'), undefined);
    expect(garden.sensor).toBe(true);
    expect(garden.readings.map((r) => `${r.label} ${r.value}`)).toEqual(['PM2.5 12 µg/m³', 'PM10 20 µg/m³']);
  });

  it('lists a sensor as soon as its first reading arrives live', () => {
    const next = mergeReadings(mesh, [
      { node_id: 'shed', timestamp: '2026-11-28T10:05:00Z', humidity_percent: 80 },
    ]);
    expect(sortedNodes(next, { sensors: true }).map((n) => n.node_id)).toContain('shed');
  });

  it('finds nodes by name, short name or id, ignoring case', () => {
    const node = { id: '!a1b2c3d4', name: 'Hilltop Barometer', shortName: 'HB01' };
    expect(matchesSearch(node, '')).toBe(true);
    expect(matchesSearch(node, '  ')).toBe(true);
    expect(matchesSearch(node, 'hilltop')).toBe(true);
    expect(matchesSearch(node, 'hb0')).toBe(true);
    expect(matchesSearch(node, 'C3D4')).toBe(true);
    expect(matchesSearch(node, 'barometer hill')).toBe(true);
    expect(matchesSearch(node, 'garden')).toBe(false);
  });
});

describe('map labels', () => {
  it('labels two sites’ radios that share a short name by their sites', () => {
    const labels = markerLabels([
      { id: '!00000001', shortName: 'HUB', sites: ['North Farm'] },
      { id: '!00000002', shortName: 'HUB', sites: ['Ridge station on the hill'] },
      { id: '!00000003', shortName: 'WX1' },
    ]);
    expect(labels.get('!00000001')).toBe('North Farm');
    expect(labels.get('!00000002')).toBe('Ridge stati…');
    expect(labels.get('!00000003')).toBe('WX1');
  });

  it('falls back to the end of the node id when the sites do not tell them apart', () => {
    const labels = markerLabels([
      { id: '!0000abcd', shortName: 'HUB' },
      { id: '!0000ef01', shortName: 'HUB' },
    ]);
    expect([...labels.values()]).toEqual(['abcd', 'ef01']);
    expect(markerWidth('Ridge sta…')).toBeGreaterThan(markerWidth('HUB'));
  });

  it('keeps the labels that do not overlap, the hub’s and the freshest first', () => {
    const box = (x: number) => ({ left: x, right: x + 46, top: 0, bottom: 26 });
    const kept = keptLabels([
      { id: 'a', box: box(0), isHub: false, freshness: 'live', label: 'A' },
      { id: 'b', box: box(20), isHub: true, freshness: 'silent', label: 'B' },
      { id: 'c', box: box(40), isHub: false, freshness: 'stale', label: 'C' },
      { id: 'd', box: box(100), isHub: false, freshness: 'silent', label: 'D' },
    ]);
    expect([...kept].sort()).toEqual(['b', 'd']);
  });
});
