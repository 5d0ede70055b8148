/**
 * The message gateway when our own radio goes silent (a stalled link: connected, answering
 * nothing) and then answers again (docs/held-texts.md, point 3). A text handed to the silent radio
 * that is still waiting for its ACK when the radio answers again times out afterwards: that says
 * nothing of its node, so it goes again at once instead of being held until the node is heard
 * (at most once a minute) or its slow backoff. A text sent after the radio answered again that
 * times out is held as before.
 *
 * The gateway alone on a real SQLite database and the hub's bus; the radio is a `radio.send`
 * handler that records what it is handed and never acknowledges; the gateway's clock is a
 * FakeClock the test moves past the ACK timeouts.
 */
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type HubBus, RETAINED_EVENTS } from '../../src/domain/events.js';
import { Bus } from '../../src/kernel/bus.js';
import { MessageGatewayActor } from '../../src/messaging/gateway-actor.js';
import { MessageRepository } from '../../src/messaging/message-repository.js';
import { closeDatabase, type Database, openDatabase } from '../../src/store/database.js';
import { waitFor } from '../helpers/hub.js';
import { FakeClock } from './fake-clock.js';

const HUB = 0x2ed2c538;
const NODE_ID = '!0af52a53';
const ACK_TIMEOUT_MS = 3_000;
const HOUR = 3_600_000;

let db: Database;
let bus: HubBus;
let clock: FakeClock;
let gateway: MessageGatewayActor;
let repo: MessageRepository;
/** Packet ids the "radio" was handed, in order. */
let sent: number[];

beforeEach(async () => {
  db = openDatabase(':memory:');
  bus = new Bus({ retained: RETAINED_EVENTS });
  clock = new FakeClock();
  sent = [];
  bus.handle('test-radio', 'radio.send', (request) => {
    sent.push(request.id);
    return { id: request.id };
  });
  bus.emit('radio.status', { state: 'connected', transport: 'tcp', simulated: false, myNodeNum: HUB });
  gateway = new MessageGatewayActor({
    bus,
    db,
    log: pino({ level: 'silent' }),
    delivery: { ackTimeoutMs: ACK_TIMEOUT_MS, maxRetries: 0, retryDelayMs: 1_000, holdRetryMaxMs: HOUR },
    airtimePercent: 100,
    defaultHoldMs: 24 * HOUR,
    clock,
  });
  await gateway.start();
  repo = new MessageRepository(db);
});

afterEach(async () => {
  await gateway.stop();
  closeDatabase(db);
});

/** A subscriber's text to the node with a day's hold, as the API stores it; the gateway is told. */
function queueText(text: string) {
  const message = repo.createOutbound({
    owner: 'alice',
    ownerName: 'alice',
    nodeId: NODE_ID,
    senderNodeId: null,
    text,
    at: clock.now(),
    holdUntil: clock.now() + 24 * HOUR,
  });
  bus.emit('message.updated', { message, kind: 'created' });
  return message;
}

const waitForSends = (n: number, what: string) =>
  waitFor(() => (sent.length >= n ? true : undefined), 5_000, what);

const current = (rowId: number) => repo.getByRowId(rowId)!;

describe('the message gateway after our radio was silent', () => {
  it('sends a text that was in flight when the radio answered again at once when its ACK times out', async () => {
    // The radio has been silent since just before the text went to it.
    const quietSince = Date.now();
    const text = queueText('handed to a silent radio');
    await waitForSends(1, 'the first attempt');
    expect(current(text.rowId).ackDeadline).not.toBeNull();

    // The radio answers again while the attempt still waits for its ACK …
    bus.emit('radio.quietEnded', { quietSince });
    // … which never comes: the ACK timeout passes.
    clock.advance(ACK_TIMEOUT_MS + 100);

    // It goes again now; it does not wait for its node to be heard.
    await waitForSends(2, 'a second attempt right after the timeout');
    expect(current(text.rowId)).toMatchObject({ status: 'queued', attempts: 2, heldSince: null });
  });

  it('holds a text sent after the radio answered again, when its ACK times out, for its node', async () => {
    bus.emit('radio.quietEnded', { quietSince: Date.now() - 10_000 });
    // Sent just after (the silence is still remembered when this attempt times out).
    await new Promise((r) => setTimeout(r, 50));
    const text = queueText('handed to a radio that answers');
    await waitForSends(1, 'the first attempt');
    clock.advance(ACK_TIMEOUT_MS + 100);
    await waitFor(
      () => (current(text.rowId).ackDeadline === null ? true : undefined),
      5_000,
      'the attempt timed out',
    );
    // Held for its node: the next attempt is minutes away, or when the node is heard.
    await new Promise((r) => setTimeout(r, 300));
    expect(sent).toHaveLength(1);
    const held = current(text.rowId);
    expect(held.heldSince).not.toBeNull();
    expect(held.nextAttemptAt).toBeGreaterThan(clock.now() + 60_000);
  });
});
