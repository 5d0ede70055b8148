import { describe, expect, it } from 'vitest';
import { batteryLabel } from '../../src/web/src/lib/node-view.js';

describe('batteryLabel', () => {
  it('shows a percentage for 0–100 and "plugged in" for firmware\'s 101 (external power)', () => {
    expect(batteryLabel(0)).toBe('0 %');
    expect(batteryLabel(73)).toBe('73 %');
    expect(batteryLabel(100)).toBe('100 %');
    expect(batteryLabel(101)).toBe('plugged in');
  });
});
