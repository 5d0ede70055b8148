/** Settings of the nodes module: when a renumbered node (firmware 2.8) is linked to its old number. */
import { z } from 'zod';
import { duration } from '../config/fields.js';

export const nodesSettings = z.object({
  /**
   * How long a node's old number must have been silent before a node heard with the same public
   * key under the number firmware 2.8 derives from it takes over its history (src/nodes/renumber.ts).
   */
  NODE_RENUMBER_QUIET: duration.prefault('15m'),
});
