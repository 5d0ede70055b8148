/** The module metrics seam on a private prom-client registry, for parts built outside a hub. */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ModuleMetrics } from '../../../src/module.js';

/** Metrics that register on a registry of their own (no hub core metrics, no scrape hooks). */
export function privateModuleMetrics(prefix: string): ModuleMetrics {
  const registers = [new Registry()];
  return {
    prefix,
    counter: (c) => new Counter({ ...c, registers }),
    gauge: (c) => new Gauge({ ...c, registers }),
    histogram: (c) => new Histogram({ ...c, registers }),
    onRender: () => () => {},
    core: undefined as never,
  } as ModuleMetrics;
}
