/**
 * The web UI in upstream mode (issue 12): a site's health in words, the header's summary, one
 * node per id from the upstream's one-item-per-site node list, and the site filter's routes.
 */
import { describe, expect, it } from 'vitest';
import { durationAdjective, durationWords } from '../../src/domain/duration.js';
import type { SiteJson } from '../../src/web/src/api/types.js';
import { formatTime } from '../../src/web/src/lib/format.js';
import {
  atSite,
  EMPTY_MESH,
  heardBy,
  type MeshState,
  mergeNode,
  mergeReadings,
  snapshot,
  sortedNodes,
} from '../../src/web/src/lib/mesh-state.js';
import { heardByWords, nodeView } from '../../src/web/src/lib/node-view.js';
import { mapPath, matchRoute, nodePath, siteParam } from '../../src/web/src/lib/routes.js';
import { siteHealth, upstreamSummary } from '../../src/web/src/lib/site-health.js';

const NOW = Date.UTC(2026, 10, 21, 12);
const iso = (ms: number) => new Date(ms).toISOString();
const at = (minute: number) => iso(Date.UTC(2026, 10, 21, 10, minute));

function site(overrides: Partial<SiteJson> = {}): SiteJson {
  return {
    site_id: 'north',
    name: 'North Farm',
    last_contact_at: iso(NOW - 30_000),
    stopped_at: null,
    last_batch_at: iso(NOW - 30_000),
    lag_s: 5,
    acked_seq: 120,
    node_count: 4,
    revoked: false,
    ...overrides,
  };
}

describe('a site’s health', () => {
  it('is online while it made contact in the last two minutes and is not far behind', () => {
    expect(siteHealth(site(), NOW)).toEqual({ state: 'online', words: 'Online', tone: 'good' });
    expect(siteHealth(site({ last_contact_at: iso(NOW - 119_000), lag_s: null }), NOW).state).toBe('online');
  });

  it('is lagging when what arrives is more than ten minutes old', () => {
    expect(siteHealth(site({ lag_s: 600 }), NOW).state).toBe('online');
    expect(siteHealth(site({ lag_s: 25 * 60 }), NOW)).toEqual({
      state: 'lagging',
      words: 'Lagging: its newest data is 25 min old',
      tone: 'warn',
    });
    expect(siteHealth(site({ lag_s: 3 * 86_400 }), NOW).words).toBe('Lagging: its newest data is 3 days old');
  });

  it('is offline since its last contact after two minutes of silence, whatever its lag', () => {
    const last = NOW - 3 * 3_600_000;
    expect(siteHealth(site({ last_contact_at: iso(last), lag_s: 9_999 }), NOW)).toEqual({
      state: 'offline',
      words: `Offline since ${formatTime(last, NOW)} (3 h ago)`,
      tone: 'bad',
    });
    expect(siteHealth(site({ last_contact_at: iso(NOW - 120_000) }), NOW).state).toBe('offline');
  });

  it('is offline at once when it said it was stopping, until it makes contact again', () => {
    const stopped = NOW - 5_000;
    expect(siteHealth(site({ last_contact_at: iso(NOW - 6_000), stopped_at: iso(stopped) }), NOW)).toEqual({
      state: 'offline',
      words: `Offline since ${formatTime(stopped, NOW)} (just now, stopped)`,
      tone: 'bad',
    });
    // Back: a contact after the stop.
    expect(siteHealth(site({ last_contact_at: iso(NOW - 1_000), stopped_at: iso(stopped) }), NOW).state).toBe(
      'online',
    );
  });

  it('says revoked before anything else, and never connected for a site that never called', () => {
    expect(siteHealth(site({ revoked: true }), NOW)).toEqual({
      state: 'revoked',
      words: 'Revoked: the upstream no longer accepts its key',
      tone: 'bad',
    });
    expect(siteHealth(site({ last_contact_at: null, last_batch_at: null, lag_s: null }), NOW)).toEqual({
      state: 'never',
      words: 'Never connected',
      tone: 'unknown',
    });
  });

  it('writes durations as people say them', () => {
    expect(
      [0, 45, 89, 90, 25 * 60, 60 * 60, 89 * 60, 5 * 3_600, 36 * 3_600, 86_400 * 1.4, 86_400 * 10].map((s) =>
        durationWords(s * 1000),
      ),
    ).toEqual([
      '0 s',
      '45 s',
      '1 min',
      '2 min',
      '25 min',
      '1 h',
      '89 min',
      '5 h',
      '2 days',
      '34 h',
      '10 days',
    ]);
    // Before a noun, as in "its 6-hour hold ended" (0.02 h is 72 s: a 1-minute hold).
    expect([0.02, 0.05, 0.5, 1, 1.5, 6, 24, 72].map((h) => durationAdjective(h * 3_600_000))).toEqual([
      '1-minute',
      '3-minute',
      '30-minute',
      '1-hour',
      '90-minute',
      '6-hour',
      '24-hour',
      '3-day',
    ]);
  });
});

describe('the header on the upstream', () => {
  it('counts the sites that are not revoked, and names the offline and lagging ones', () => {
    expect(upstreamSummary([site(), site({ site_id: 'ridge' })], true, NOW)).toMatchObject({
      text: '2 sites',
      tone: 'good',
    });
    const mixed = upstreamSummary(
      [
        site(),
        site({ site_id: 'ridge', last_contact_at: iso(NOW - 600_000) }),
        site({ site_id: 'lake', lag_s: 4_000 }),
        site({ site_id: 'old', revoked: true }),
      ],
      true,
      NOW,
    );
    expect(mixed).toEqual({
      text: '3 sites, 1 offline, 1 lagging',
      tone: 'bad',
      title: 'This upstream serves 3 sites (and 1 revoked). See them under Sites.',
    });
    expect(upstreamSummary([site()], true, NOW).text).toBe('1 site');
    expect(upstreamSummary(undefined, true, NOW).text).toBe('…');
    expect(upstreamSummary([site()], false, NOW).text).toBe('unknown');
  });
});

describe('the upstream’s nodes: one per id, with the sites that heard it', () => {
  const nodes = [
    {
      site_id: 'north',
      node_id: '!00000001',
      long_name: 'Ridge',
      latitude: 47.1,
      longitude: 8.5,
      last_heard: at(50),
    },
    {
      site_id: 'south',
      node_id: '!00000001',
      long_name: 'Ridge (renamed)',
      last_heard: at(55),
      battery_level: 80,
    },
    { site_id: 'north', node_id: '!00000002', long_name: 'Creek', last_heard: at(20) },
    { site_id: 'south', node_id: '!00000003', long_name: 'Dam' },
  ];

  it('keeps the most recently heard item, filling in only what it lacks from the others', () => {
    for (const order of [nodes, [...nodes].reverse()]) {
      const state = snapshot(order, [], EMPTY_MESH);
      expect(state.nodes.size).toBe(3);
      expect(state.nodes.get('!00000001')).toEqual({
        site_id: 'south',
        node_id: '!00000001',
        long_name: 'Ridge (renamed)',
        latitude: 47.1,
        longitude: 8.5,
        last_heard: at(55),
        battery_level: 80,
      });
      expect(heardBy(state, '!00000001')).toEqual(['south', 'north']);
      expect(heardBy(state, '!00000002')).toEqual(['north']);
      expect(heardBy(state, '!00000003')).toEqual(['south']);
    }
  });

  it('names the sites in the node view, by their names, most recent first', () => {
    const state = snapshot(nodes, [], EMPTY_MESH);
    const names = new Map([
      ['north', 'North Farm'],
      ['south', 'South Ridge'],
    ]);
    const view = nodeView(state, state.nodes.get('!00000001')!, NOW, undefined, names);
    expect(view.sites).toEqual(['South Ridge', 'North Farm']);
    expect(heardByWords(view.sites!)).toBe('Heard by South Ridge and North Farm');
    expect(heardByWords(['A', 'B', 'C'])).toBe('Heard by A, B and C');
    expect(heardByWords(['A'])).toBe('Heard by A');
  });

  it('adds a site that hears the node live, and keeps none on a hub', () => {
    let state = snapshot(nodes, [], EMPTY_MESH);
    state = mergeNode(state, { site_id: 'lake', node_id: '!00000002', last_heard: at(59) });
    expect(heardBy(state, '!00000002')).toEqual(['lake', 'north']);
    expect(state.nodes.get('!00000002')?.last_heard).toBe(at(59));

    const hub = snapshot(
      nodes.map(({ site_id: _site, ...node }) => node),
      [],
      EMPTY_MESH,
    );
    expect(hub.sites.size).toBe(0);
    expect(nodeView(hub, hub.nodes.get('!00000001')!, NOW, undefined).sites).toBeUndefined();
  });

  it('files a sensor known only from its readings under the site they came from', () => {
    const sensor = '!0000f00d';
    const reading = (site: string, minute: number) => ({
      site_id: site,
      node_id: sensor,
      timestamp: at(minute),
      temperature_c: 9,
    });
    const under = (state: MeshState, site: string) =>
      sortedNodes(state, { sensors: true })
        .filter((node) => atSite(state, node.node_id, site))
        .map((node) => node.node_id);
    let state = snapshot(nodes, [reading('north', 40)], EMPTY_MESH);
    expect(under(state, 'north')).toEqual([sensor, '!00000002', '!00000001']);
    expect(under(state, 'south')).toEqual(['!00000003', '!00000001']);
    // Readings from a second site, live, and a snapshot that has not caught up keeps them.
    state = mergeReadings(state, [reading('south', 58)]);
    expect(atSite(state, sensor, 'south')).toBe(true);
    state = snapshot(nodes, [reading('north', 40)], state);
    expect(atSite(state, sensor, 'south')).toBe(true);
    expect(atSite(state, sensor, 'lake')).toBe(false);
    // A mesh node's readings do not put it under a site that never heard it.
    state = mergeReadings(state, [{ ...reading('lake', 59), node_id: '!00000002' }]);
    expect(atSite(state, '!00000002', 'lake')).toBe(false);
  });
});

describe('routes with a site', () => {
  it('reads ?site= on the map and writes it into node and map links', () => {
    expect(matchRoute('/', '?site=north')).toEqual({ page: 'dashboard', site: 'north' });
    expect(matchRoute('/', '?site=north&node=!a1b2c3d4')).toEqual({
      page: 'dashboard',
      site: 'north',
      focus: '!a1b2c3d4',
    });
    expect(matchRoute('/sites')).toEqual({ page: 'sites' });
    expect(nodePath('!a1b2c3d4')).toBe('/nodes/!a1b2c3d4');
    expect(nodePath('!a1b2c3d4', 'north')).toBe('/nodes/!a1b2c3d4?site=north');
    expect(mapPath('north')).toBe('/?site=north');
    expect(mapPath()).toBe('/');
    expect(siteParam('?range=7d&site=north')).toBe('north');
    expect(siteParam('?range=7d')).toBeUndefined();
  });
});
