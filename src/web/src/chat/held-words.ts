/** What the chat says of a text that waits (docs/held-texts.md), as pure functions of the facts. */
import { heardButNotAcknowledging } from '../../../domain/reachability.js';
import type { MessageRecord, SiteJson } from '../api/types.js';
import { t } from '../i18n/index.js';
import { formatAge, formatTime } from '../lib/format.js';
import { offlineSince, siteLabel } from '../lib/site-health.js';

/** When a text that waits is tried again (it may go sooner, when its node is heard). */
export interface WaitFacts {
  /** When the text was written (ms): a node heard since is in range. */
  createdAt?: number;
  /** The latest time of its next attempt (ms). */
  nextAttemptAt?: number;
}

/**
 * `Waiting for Ana to come in range (last heard 3 h ago)`, or, for a node heard since the text
 * was written (or in the last two minutes), `Ana was heard 7 s ago but is not acknowledging;
 * trying again by 14:05`. `lastHeardMs` undefined (or not a time): the hub never heard the node.
 */
export function waitingWords(
  name: string,
  lastHeardMs: number | undefined,
  nowMs: number,
  facts: WaitFacts = {},
): string {
  const never = lastHeardMs === undefined || Number.isNaN(lastHeardMs);
  if (!never && heardButNotAcknowledging(lastHeardMs, facts.createdAt ?? Number.POSITIVE_INFINITY, nowMs)) {
    const next = facts.nextAttemptAt;
    const when =
      next !== undefined && Number.isFinite(next) && next > nowMs
        ? t('chat.held.by', { time: formatTime(next, nowMs) })
        : t('chat.held.soon');
    return t('chat.held.notAcknowledging', { name, age: formatAge(lastHeardMs, nowMs), when });
  }
  const heard = never
    ? t('mesh.neverHeard')
    : t('chat.held.lastHeard', { age: formatAge(lastHeardMs, nowMs) });
  return t('chat.held.waitingFor', { name, heard });
}

/**
 * On the upstream, why a queued text waits: its site is offline (`South ridge is offline since
 * 07:31`), else what the site last said of it (`Waiting for Ana to come in range (last heard
 * 3 h ago), as of 14:02`); undefined when neither is known (it is simply queued).
 */
export function upstreamWaitingWords(
  message: Pick<MessageRecord, 'site_id' | 'history'>,
  sites: readonly SiteJson[],
  nowMs: number,
): string | undefined {
  const site = sites.find((s) => s.site_id === message.site_id);
  const offline = site ? offlineSince(site, nowMs) : undefined;
  if (site && offline) {
    return t('chat.held.siteOffline', { site: siteLabel(site), time: formatTime(offline.at, nowMs) });
  }
  const last = message.history?.at(-1);
  if (last?.status !== 'queued' || !last.reason) return undefined;
  // "<why the attempt failed> [CODE]; waiting for … (…): sent again …" → "Waiting for … (…)".
  const said = last.reason.split('; ').slice(1).join('; ').split(': ')[0]?.trim();
  if (!said) return undefined;
  const words = said.charAt(0).toUpperCase() + said.slice(1);
  return t('chat.held.asOf', { words, time: formatTime(Date.parse(last.at), nowMs) });
}
