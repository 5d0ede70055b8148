/** A coordinate grid for the map's plain background: round steps, and labels with just enough decimals. */

const STEPS = [
  45, 30, 20, 10, 5, 2, 1, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001, 0.0005, 0.0002, 0.0001,
];

/** The largest round step that puts at least `lines` lines across `spanDegrees`. */
export function gridStep(spanDegrees: number, lines = 4): number {
  const wanted = spanDegrees / lines;
  return STEPS.find((step) => step <= wanted) ?? STEPS[STEPS.length - 1]!;
}

function decimals(step: number): number {
  let d = 0;
  while (d < 6 && Math.abs(Math.round(step * 10 ** d) - step * 10 ** d) > 1e-9) d++;
  return d;
}

/** Grid values from `from` to `to` on multiples of `step` (at most `max` of them). */
export function gridValues(from: number, to: number, step: number, max = 60): number[] {
  const out: number[] = [];
  const d = decimals(step);
  for (let v = Math.ceil(from / step) * step; v <= to && out.length < max; v += step) {
    out.push(Number(v.toFixed(d)));
  }
  return out;
}

/** `47.38° N`, `8.5° E`, `0°`. */
export function gridLabel(value: number, step: number, axis: 'lat' | 'lon'): string {
  const text = Math.abs(value).toFixed(decimals(step));
  if (Number(text) === 0) return '0°';
  const hemisphere = axis === 'lat' ? (value < 0 ? 'S' : 'N') : value < 0 ? 'W' : 'E';
  return `${text}° ${hemisphere}`;
}
