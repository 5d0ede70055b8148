/**
 * The zod schemas type what the code passes around: where a TypeScript type is still declared
 * elsewhere (the bus's RadioStatus, the tile archive, the web UI's metric keys), it must equal
 * the schema's. These are checked by `npm run typecheck`; the runtime checks pin field order.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type { RadioStatus } from '../../src/domain/radio.js';
import { METRIC_API_NAMES, READING_METRICS } from '../../src/domain/reading.js';
import type { radioStatusSchema } from '../../src/http/schemas.js';
import type { InboundStatus, MessageStatus, OutboundStatus } from '../../src/messaging/message.js';
import type { TileJson } from '../../src/ui-server/schemas.js';
import type { TileArchiveInfo } from '../../src/ui-server/tile-archive.js';
import { type ReadingJson, readingSchema } from '../../src/weather/schemas.js';
import type { MetricKey } from '../../src/web/src/lib/metrics.js';

describe('schema types', () => {
  it('equal the types declared beside them', () => {
    expectTypeOf<z.output<typeof radioStatusSchema>>().toEqualTypeOf<RadioStatus>();
    expectTypeOf<OutboundStatus | InboundStatus>().toEqualTypeOf<MessageStatus>();
    expectTypeOf<Exclude<keyof ReadingJson, 'node_id' | 'timestamp'>>().toEqualTypeOf<MetricKey>();
    expectTypeOf<NonNullable<TileJson['bounds']>>().toEqualTypeOf<NonNullable<TileArchiveInfo['bounds']>>();
    expectTypeOf<NonNullable<TileJson['center']>>().toEqualTypeOf<NonNullable<TileArchiveInfo['center']>>();
  });

  it('a Reading carries the metrics in the order the API lists them', () => {
    expect(Object.keys(readingSchema.shape)).toEqual([
      'node_id',
      'timestamp',
      ...READING_METRICS.map((m) => METRIC_API_NAMES[m]),
    ]);
  });
});
