/** Reading a Server-Sent Events stream in tests (the hub's and the upstream's /api/v1/live). */

export interface SseEvent {
  event: string;
  /** The `data:` line as sent (JSON text on our streams). */
  data: string;
}

/**
 * Reads the events (their `event:` and `data:` lines) from `body`; after each chunk asks `until`
 * and, once it says enough, cancels the stream. `ended` when the stream ended first.
 */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  until: (events: SseEvent[]) => boolean,
): Promise<{ events: SseEvent[]; ended: boolean }> {
  const events: SseEvent[] = [];
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { events, ended: true };
    buffer += decoder.decode(value, { stream: true });
    let cut = buffer.indexOf('\n\n');
    while (cut >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data !== undefined) events.push({ event, data });
      cut = buffer.indexOf('\n\n');
    }
    if (until(events)) {
      await reader.cancel();
      return { events, ended: false };
    }
  }
}
