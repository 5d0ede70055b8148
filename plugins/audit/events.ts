/** The audit plugin's events, merged into the hub's event map (src/domain/events.ts). */

/** A stored audit alert, as the plugin's `GET /api/alerts` shows it (JSON-ready; MQTT only serialises it). */
export interface AuditAlertNotice {
  alert: Readonly<Record<string, unknown>>;
}

/** Audit alerts on MQTT (issue 14): admins only, for subscribing and forwarding alike. */
export const AUDIT_ALERTS_TOPIC = 'meshhub/audit/alerts';

declare module '../../src/domain/events.js' {
  interface HubEvents {
    /** An audit alert rule fired (issue 14), after commit: MQTT `meshhub/audit/alerts`, admins only. */
    'audit.alert': AuditAlertNotice;
  }
}
