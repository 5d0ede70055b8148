import { describe, expect, it } from 'vitest';
import { bucketStart, circularMeanDegrees } from '../../src/store/rollups.js';

const DEG = Math.PI / 180;
const mean = (...degrees: number[]) =>
  circularMeanDegrees(
    degrees.reduce((s, d) => s + Math.sin(d * DEG), 0),
    degrees.reduce((s, d) => s + Math.cos(d * DEG), 0),
    degrees.length,
  );

describe('circularMeanDegrees', () => {
  it('averages across north: 350° and 10° give 0°, not 180°', () => {
    expect(mean(350, 10)).toBe(0);
    expect(mean(355, 5, 15)).toBe(5);
    expect(mean(340, 350)).toBe(345);
  });

  it('answers whole degrees in [0, 360)', () => {
    expect(mean(359.7)).toBe(0);
    expect(mean(-90)).toBe(270);
    expect(mean(720 + 45)).toBe(45);
  });

  it('has no answer when the directions cancel out or there are none', () => {
    expect(mean(90, 270)).toBeUndefined();
    expect(circularMeanDegrees(0, 0, 0)).toBeUndefined();
  });
});

describe('bucketStart', () => {
  it('aligns hours and days to UTC', () => {
    const t = Date.UTC(2025, 4, 1, 13, 59, 59, 999);
    expect(bucketStart(t, '1h')).toBe(Date.UTC(2025, 4, 1, 13));
    expect(bucketStart(t + 1, '1h')).toBe(Date.UTC(2025, 4, 1, 14));
    expect(bucketStart(t, '1d')).toBe(Date.UTC(2025, 4, 1));
    expect(bucketStart(Date.UTC(2025, 4, 1) - 1, '1d')).toBe(Date.UTC(2025, 3, 30));
    expect(bucketStart(-1, '1h')).toBe(-3_600_000);
  });
});
