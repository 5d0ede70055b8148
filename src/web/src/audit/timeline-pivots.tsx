/**
 * Issue 29: the event drawer's pivots — this actor's timeline, and the search for the other
 * events with the same target, client IP, correlation id or session id (only those the record
 * carries), each a link whose URL holds the filter.
 */
import { t } from '../i18n/index.js';
import { auditPivotPath, auditTimelinePath } from '../lib/routes.js';
import { Link } from '../router.js';
import type { AuditEventDetail } from './audit-types.js';
import { untilFor } from './timeline-until.js';

const PIVOTS = [
  { key: 'target', label: 'audit.timeline.sameTarget' },
  { key: 'client_ip', label: 'audit.timeline.sameClientIp' },
  { key: 'correlation_id', label: 'audit.timeline.sameCorrelation' },
  { key: 'session_id', label: 'audit.timeline.sameSession' },
] as const;

export function TimelinePivots({ event }: { event: AuditEventDetail }) {
  const pivots = event.pivots ?? {};
  return (
    <nav class="timeline-pivots" aria-label={t('audit.timeline.pivots')} data-testid="event-pivots">
      <span class="muted small">{t('audit.timeline.pivots')}</span>
      {event.actor && (
        <Link class="chip" href={auditTimelinePath(event.actor, untilFor(event.timestamp))}>
          {t('audit.timeline.actorTimeline')}
        </Link>
      )}
      {PIVOTS.map(({ key, label }) => {
        const value = pivots[key];
        return value ? (
          <Link key={key} class="chip" href={auditPivotPath(key, value)} title={value}>
            {t(label)}
          </Link>
        ) : null;
      })}
    </nav>
  );
}
