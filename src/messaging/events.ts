/** The messaging feature's events, merged into the hub's event map (src/domain/events.ts). */
import type { MessageChange } from './message.js';

declare module '../domain/events.js' {
  interface HubEvents {
    /** A message was stored or changed status (created, sent, delivered, failed, read). */
    'message.updated': MessageChange;
  }
}
