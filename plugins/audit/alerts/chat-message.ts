/**
 * What a person reads of an alert in a chat (Microsoft Teams: teams.ts, Slack: slack.ts): its
 * title, the facts in a fixed order, a one-line summary and the console's link to the event.
 * Each formatter escapes the words for its own markup; this file only chooses and shortens them.
 */
import type { ApiAlert } from './schemas.js';

export interface AlertFact {
  label: string;
  value: string;
}

/** The event time as people read it: `2026-11-29 01:00:00 UTC`. */
export function readableTime(iso: string): string {
  return `${iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, '')} UTC`;
}

/** A threshold rule (more than one match within its window) says how many, and within what. */
export function thresholdOf(alert: ApiAlert): string | undefined {
  return alert.match_count > 1 ? `${alert.match_count} matching events within ${alert.window}` : undefined;
}

/** At most 10 facts (Slack's limit of fields in a section). */
export function alertFacts(alert: ApiAlert): AlertFact[] {
  const threshold = thresholdOf(alert);
  return [
    { label: 'Severity', value: alert.severity },
    { label: 'When', value: readableTime(alert.event.timestamp) },
    { label: 'Actor', value: alert.event.actor || '(none)' },
    { label: 'Operation', value: alert.event.operation || '(none)' },
    { label: 'Service', value: alert.event.service || '(none)' },
    { label: 'Tenant', value: alert.event.tenant },
    { label: 'Result', value: alert.event.result || '(none)' },
    ...(alert.event.target ? [{ label: 'Target', value: alert.event.target }] : []),
    ...(threshold ? [{ label: 'Threshold', value: threshold }] : []),
  ];
}

/** The plain one-line summary (notifications, Slack's fallback `text`). */
export function alertSummary(alert: ApiAlert): string {
  const { event } = alert;
  return `[${alert.severity}] ${alert.rule.name}: ${event.operation} by ${event.actor || '(none)'} (${event.service}, ${event.result}, tenant ${event.tenant})`;
}

/** The console's page of the event (src/web opens `/audit?event=<id>` with its drawer). */
export function eventLink(consoleUrl: string | undefined, alert: ApiAlert): string | undefined {
  return consoleUrl ? `${consoleUrl}/audit?event=${encodeURIComponent(alert.event.id)}` : undefined;
}

/** `text` cut to `max` characters, the cut marked with `…`. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
