/** The messaging feature's events, merged into the hub's event map (src/domain/events.ts). */
import type { MessageChange } from './message.js';

declare module '../domain/events.js' {
  interface HubEvents {
    /** A message was stored or changed status (created, sent, delivered, failed, read). */
    'message.updated': MessageChange;
  }
  interface HubRequests {
    /**
     * A packet from outside messaging (a mesh API client) takes a turn in the gateway's
     * airtime-paced send queue: `transmit` runs in the next free slot, which then stays taken
     * for the airtime share of `payloadBytes`. Answered by the gateway actor while it runs.
     */
    'messaging.sendPaced': {
      request: { payloadBytes: number; transmit: () => Promise<void> };
      // biome-ignore lint/suspicious/noConfusingVoidType: the answer is "sent", nothing more
      response: void;
    };
    /** The share of airtime the send queue paces to (MESSAGE_AIRTIME_PERCENT): device health shows it. */
    'messaging.airtimeBudget': { request: Record<string, never>; response: { percent: number } };
  }
}
