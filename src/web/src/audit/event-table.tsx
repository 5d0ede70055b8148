/**
 * A page of events, newest first. Each row opens the drawer: click anywhere on it, or Tab to the
 * operation (a button) and press Enter. On a phone the table becomes one card per event.
 */

import { t, tList } from '../i18n/index.js';
import { AuditTable } from './audit-table.js';
import type { AuditEvent } from './audit-types.js';
import { outcomeClass, shownTime } from './format.js';

export function EventTable({
  events,
  onOpen,
  labels = {},
  showTenant = false,
}: {
  events: AuditEvent[];
  onOpen: (id: string) => void;
  /** How each service is shown (`/api/filter-options` `service_labels`): `directory` → `Directory (Entra ID)`. */
  labels?: Record<string, string> | undefined;
  /** Issue 29: a column for the tenant when the hub collects more than one. */
  showTenant?: boolean;
}) {
  if (!events.length) return null;
  return (
    <AuditTable
      testId="audit-events"
      caption={t('audit.eventsCaption')}
      columns={tList(
        'mesh.packets.time',
        ...(showTenant ? (['audit.tenant'] as const) : []),
        'audit.service',
        'audit.operation',
        'audit.result',
        'audit.actor',
        'audit.target',
        'audit.tags',
      )}
    >
      {events.map((e) => (
        <tr key={e.id} data-event-id={e.id} onClick={() => onOpen(e.id)}>
          <td data-label={t('mesh.packets.time')}>
            <time dateTime={e.timestamp} title={e.timestamp}>
              {shownTime(e.timestamp)}
            </time>
          </td>
          {showTenant && <td data-label={t('audit.tenant')}>{e.tenant}</td>}
          <td data-label={t('audit.service')}>{labels[e.service] ?? e.service}</td>
          <td data-label={t('audit.operation')}>
            <button
              type="button"
              class="link-button"
              onClick={(ev) => {
                ev.stopPropagation();
                onOpen(e.id);
              }}
            >
              {e.operation || t('audit.noOperation')}
            </button>
          </td>
          <td data-label={t('audit.result')}>
            <span class={outcomeClass(e.result)}>{e.result_raw || e.result}</span>
          </td>
          <td data-label={t('audit.actor')}>{e.actor}</td>
          <td data-label={t('audit.target')} class="audit-target">
            {e.target}
          </td>
          <td data-label={t('audit.tags')}>
            {e.tags.map((tag) => (
              <span key={tag} class="chip chip-small">
                {tag}
              </span>
            ))}
            {e.comments.length > 0 && (
              <span class="muted small" title={t('audit.comments')}>
                {' '}
                💬 {e.comments.length}
                <span class="visually-hidden"> {t('audit.commentsLower')}</span>
              </span>
            )}
          </td>
        </tr>
      ))}
    </AuditTable>
  );
}
