/**
 * A site's health in plain words, from what the upstream's `GET /api/v1/sites` says (issue 12):
 * online while it made contact in the last two minutes (its push probes and its downlink
 * socket talk far more often) and did not say it was stopping since, lagging when its newest data (`lag_s`) is more than ten minutes
 * old, offline since its last contact otherwise.
 */
import type { SiteJson } from '../api/types.js';
import { t } from '../i18n/index.js';
import { durationWords, formatAge, formatTime } from './format.js';

export type SiteHealthState = 'online' | 'lagging' | 'offline' | 'never' | 'revoked';

export interface SiteHealth {
  state: SiteHealthState;
  /** `Online`, `Lagging: its newest data is 25 min old`, `Offline since 10:05 (3 h ago)`, … */
  words: string;
  tone: 'good' | 'warn' | 'bad' | 'unknown';
}

export const ONLINE_WITHIN_MS = 2 * 60_000;
export const LAGGING_AFTER_S = 10 * 60;

/**
 * Since when the site is offline, or undefined while it is online (or never connected): it said
 * it was stopping (a clean stop, `stopped_at`) and made no contact since, or its last contact
 * is ONLINE_WITHIN_MS old. `nowMs` on the upstream's clock.
 */
export function offlineSince(
  site: Pick<SiteJson, 'last_contact_at' | 'stopped_at'>,
  nowMs: number,
): { at: number; stopped: boolean } | undefined {
  const contact = site.last_contact_at ? Date.parse(site.last_contact_at) : Number.NaN;
  if (!Number.isFinite(contact)) return undefined;
  const stopped = site.stopped_at ? Date.parse(site.stopped_at) : Number.NaN;
  if (Number.isFinite(stopped) && stopped >= contact) return { at: stopped, stopped: true };
  return nowMs - contact >= ONLINE_WITHIN_MS ? { at: contact, stopped: false } : undefined;
}

/** `nowMs` on the upstream's clock (the page corrects its own with the answer's Date header). */
export function siteHealth(site: SiteJson, nowMs: number): SiteHealth {
  if (site.revoked) {
    return { state: 'revoked', words: t('mesh.sites.revoked'), tone: 'bad' };
  }
  const contact = site.last_contact_at ? Date.parse(site.last_contact_at) : Number.NaN;
  if (!Number.isFinite(contact)) return { state: 'never', words: t('mesh.sites.never'), tone: 'unknown' };
  const since = offlineSince(site, nowMs);
  if (since !== undefined) {
    const stopped = since.stopped ? `, ${t('mesh.sites.stopped')}` : '';
    return {
      state: 'offline',
      words: t('mesh.sites.offlineSince', {
        time: formatTime(since.at, nowMs),
        age: `${formatAge(since.at, nowMs)}${stopped}`,
      }),
      tone: 'bad',
    };
  }
  if (typeof site.lag_s === 'number' && site.lag_s > LAGGING_AFTER_S) {
    return {
      state: 'lagging',
      words: t('mesh.sites.lagging', { age: durationWords(site.lag_s * 1000) }),
      tone: 'warn',
    };
  }
  return { state: 'online', words: t('mesh.sites.online'), tone: 'good' };
}

/** What a person calls the site: its name, else its id. */
export function siteLabel(site: Pick<SiteJson, 'site_id' | 'name'>): string {
  return site.name?.trim() || site.site_id;
}

/** The header's words for the upstream: `3 sites`, or `3 sites, 1 offline` (revoked sites are not counted). */
export function upstreamSummary(
  sites: readonly SiteJson[] | undefined,
  upstreamReachable: boolean,
  nowMs: number,
): { text: string; tone: string; title: string } {
  if (!upstreamReachable)
    return {
      text: t('header.radioUnknown'),
      tone: 'unknown',
      title: t('mesh.sites.unreachable'),
    };
  if (!sites) return { text: '…', tone: 'unknown', title: t('mesh.sites.waiting') };
  const active = sites.filter((site) => !site.revoked);
  const health = active.map((site) => siteHealth(site, nowMs).state);
  const offline = health.filter((state) => state === 'offline' || state === 'never').length;
  const lagging = health.filter((state) => state === 'lagging').length;
  const problems = [
    ...(offline > 0 ? [t('mesh.sites.nOffline', { count: offline })] : []),
    ...(lagging > 0 ? [t('mesh.sites.nLagging', { count: lagging })] : []),
  ];
  const revoked = sites.length - active.length;
  return {
    text: `${t('mesh.sites.count', { count: active.length })}${problems.length ? `, ${problems.join(', ')}` : ''}`,
    tone: offline > 0 ? 'bad' : lagging > 0 ? 'warn' : 'good',
    title: revoked
      ? t('mesh.sites.servesRevoked', { count: active.length, revoked })
      : t('mesh.sites.serves', { count: active.length }),
  };
}
