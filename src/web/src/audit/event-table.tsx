/**
 * A page of events, newest first. Each row opens the drawer: click anywhere on it, or Tab to the
 * operation (a button) and press Enter. On a phone the table becomes one card per event.
 */

import { AuditTable } from './audit-table.js';
import type { AuditEvent } from './audit-types.js';
import { outcomeClass, shownTime } from './format.js';

export function EventTable({
  events,
  onOpen,
  labels = {},
}: {
  events: AuditEvent[];
  onOpen: (id: string) => void;
  /** How each service is shown (`/api/filter-options` `service_labels`): `directory` → `Directory (Entra ID)`. */
  labels?: Record<string, string> | undefined;
}) {
  if (!events.length) return null;
  return (
    <AuditTable
      testId="audit-events"
      caption="Audit events, newest first"
      columns={['Time', 'Service', 'Operation', 'Result', 'Actor', 'Target', 'Tags']}
    >
      {events.map((e) => (
        <tr key={e.id} data-event-id={e.id} onClick={() => onOpen(e.id)}>
          <td data-label="Time">
            <time dateTime={e.timestamp} title={e.timestamp}>
              {shownTime(e.timestamp)}
            </time>
          </td>
          <td data-label="Service">{labels[e.service] ?? e.service}</td>
          <td data-label="Operation">
            <button
              type="button"
              class="link-button"
              onClick={(ev) => {
                ev.stopPropagation();
                onOpen(e.id);
              }}
            >
              {e.operation || '(no operation)'}
            </button>
          </td>
          <td data-label="Result">
            <span class={outcomeClass(e.result)}>{e.result_raw || e.result}</span>
          </td>
          <td data-label="Actor">{e.actor}</td>
          <td data-label="Target" class="audit-target">
            {e.target}
          </td>
          <td data-label="Tags">
            {e.tags.map((t) => (
              <span key={t} class="chip chip-small">
                {t}
              </span>
            ))}
            {e.comments.length > 0 && (
              <span class="muted small" title="Comments">
                {' '}
                💬 {e.comments.length}
                <span class="visually-hidden"> comments</span>
              </span>
            )}
          </td>
        </tr>
      ))}
    </AuditTable>
  );
}
