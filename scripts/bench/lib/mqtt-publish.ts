/** The benchmarks' MQTT publisher: QoS 1 with a bounded number of messages in flight. */
import type { MqttClient } from 'mqtt';

export const READINGS_TOPIC = 'meshhub/ingest/readings';

/**
 * Publishes `count` messages to `topic` at QoS 1 with at most `window` unacknowledged;
 * `payloadAt(i)` gives the i-th message when it is sent.
 */
export function publishWindowed(
  client: MqttClient,
  topic: string,
  count: number,
  window: number,
  payloadAt: (i: number) => string | Buffer,
): Promise<void> {
  let next = 0;
  return new Promise<void>((resolve, reject) => {
    let done = 0;
    const send = () => {
      const i = next++;
      client.publish(topic, payloadAt(i), { qos: 1 }, (error) => {
        if (error) return reject(error);
        if (++done === count) return resolve();
        if (next < count) send();
      });
    };
    for (let k = 0; k < Math.min(window, count); k++) send();
  });
}

/** Publishes every payload (see publishWindowed). */
export function publishAll(
  client: MqttClient,
  topic: string,
  payloads: string[],
  window: number,
): Promise<void> {
  return publishWindowed(client, topic, payloads.length, window, (i) => payloads[i]!);
}

/**
 * `count` single-reading JSON messages (temperature, humidity, pressure) from `nodeOf(i)`, `stepMs`
 * apart from `startMs`.
 */
export function readingMessages(
  count: number,
  startMs: number,
  stepMs: number,
  nodeOf: (i: number) => string,
): string[] {
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      node_id: nodeOf(i),
      timestamp: new Date(startMs + i * stepMs).toISOString(),
      temperature_c: 10 + (i % 200) / 10,
      humidity_percent: 40 + (i % 50),
      pressure_pa: 95_000 + (i % 5000),
    }),
  );
}
